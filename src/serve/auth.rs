//! Bearer tokens and the ACL tags each may see, from a token file: one
//! line per token, `TOKEN TAG[,TAG…]`, `*` for every tag; blank lines and
//! lines starting with `#` are ignored.
//!
//! Tokens are kept only as BLAKE3 hashes, and a presented token is compared
//! with every one of them in constant time (`blake3::Hash` equality), so
//! neither the file's contents nor a timing difference reveals a token.

use std::path::{Path, PathBuf};

use thiserror::Error;

#[derive(Debug, Error)]
pub enum TokenFileError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: {reason}")]
    Line {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("{0}: no tokens")]
    Empty(PathBuf),
}

/// What a token may see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Every document (`*`).
    All,
    /// Documents carrying at least one of these ACL tags.
    Tags(Vec<String>),
}

/// The tokens of a token file.
#[derive(Debug, PartialEq)]
pub struct Tokens {
    entries: Vec<(blake3::Hash, Access)>,
}

impl Tokens {
    pub fn load(path: &Path) -> Result<Self, TokenFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// No token at all: every request is refused.
    pub fn none() -> Self {
        Self {
            entries: Vec::new(),
        }
    }

    /// Parses a token file's text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, TokenFileError> {
        let mut entries = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            // Errors name the line, never its token.
            let error = |reason: &str| TokenFileError::Line {
                path: path.to_path_buf(),
                line: n + 1,
                reason: reason.to_string(),
            };
            let mut fields = line.split_whitespace();
            let (Some(token), Some(tags), None) = (fields.next(), fields.next(), fields.next())
            else {
                return Err(error("expected `TOKEN TAG[,TAG…]` (or `TOKEN *`)"));
            };
            if token.len() < 16 {
                return Err(error("token shorter than 16 characters"));
            }
            let access = if tags == "*" {
                Access::All
            } else {
                let tags: Vec<String> = tags
                    .split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_string)
                    .collect();
                if tags.is_empty() || tags.iter().any(|t| t == "*") {
                    return Err(error("tags are a comma-separated list, or `*` alone"));
                }
                Access::Tags(tags)
            };
            let hash = blake3::hash(token.as_bytes());
            if entries.iter().any(|(h, _)| *h == hash) {
                return Err(error("the same token appears twice"));
            }
            entries.push((hash, access));
        }
        if entries.is_empty() {
            return Err(TokenFileError::Empty(path.to_path_buf()));
        }
        Ok(Self { entries })
    }

    /// The access of a presented token; every entry is compared, so the
    /// time taken does not depend on which one (if any) matches.
    pub fn check(&self, presented: &str) -> Option<&Access> {
        let hash = blake3::hash(presented.as_bytes());
        let mut found = None;
        for (known, access) in &self.entries {
            if *known == hash {
                found = Some(access);
            }
        }
        found
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_their_tags() {
        let file = "# team tokens\n\
                    0123456789abcdef-legal legal,finance\n\
                    \n\
                    fedcba9876543210-admin *\n";
        let tokens = Tokens::parse(file, Path::new("tokens")).unwrap();
        assert_eq!(tokens.len(), 2);
        assert_eq!(
            tokens.check("0123456789abcdef-legal"),
            Some(&Access::Tags(vec!["legal".into(), "finance".into()]))
        );
        assert_eq!(tokens.check("fedcba9876543210-admin"), Some(&Access::All));
        assert_eq!(tokens.check("0123456789abcdef-lega"), None);
        assert_eq!(tokens.check(""), None);
    }

    #[test]
    fn bad_lines_are_named_without_their_token() {
        for (file, reason) in [
            ("0123456789abcdef-legal\n", "expected"),
            ("short legal\n", "shorter than 16"),
            ("0123456789abcdef-legal legal extra\n", "expected"),
            ("0123456789abcdef-legal legal,*\n", "`*` alone"),
            (
                "0123456789abcdef-legal a\n0123456789abcdef-legal b\n",
                "twice",
            ),
        ] {
            let e = Tokens::parse(file, Path::new("tokens"))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("tokens:"), "{e}");
            assert!(e.contains(reason), "{e}");
            assert!(!e.contains("0123456789abcdef"), "{e}");
        }
        let e = Tokens::parse("# none\n", Path::new("tokens")).unwrap_err();
        assert_eq!(e.to_string(), "tokens: no tokens");
    }
}
