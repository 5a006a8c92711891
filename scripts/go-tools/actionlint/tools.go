//go:build tools

// Package tools names the command this module builds, so that go mod tidy
// keeps its dependencies.
package tools

import _ "github.com/rhysd/actionlint/cmd/actionlint"
