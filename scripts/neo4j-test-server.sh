#!/usr/bin/env bash
# A real Neo4j 5 Community server for the graph-store tests. Neo4j's server
# distribution is not on Maven Central, but its embedded DBMS is: Maven
# resolves `org.neo4j:neo4j` into a cache directory on first use, and the
# small launcher in scripts/neo4j-launcher/ (compiled there too) runs it with
# only the Bolt connector, on 127.0.0.1, without TLS. Needs `mvn` and a JDK
# 17 or 21 (`java`/`javac` from JAVA_HOME, else from PATH).
#
#   scripts/neo4j-test-server.sh --install     install only and say which version (the test command does this first)
#   scripts/neo4j-test-server.sh PORT [DIR]    serve Bolt on 127.0.0.1:PORT until killed
#
# Log in as `neo4j` with the password in NEO4J_TEST_PASSWORD (default
# `trellis-test-password`; Neo4j wants at least 8 characters). "neo4j ready
# on bolt://127.0.0.1:PORT" on stdout says the server takes queries; Bolt
# only starts listening just before that.
#
# DIR holds the databases and logs and is kept; the password only applies
# when DIR is new. Without DIR a fresh one is made under
# ${TMPDIR:-/tmp}/trellis-neo4j-test/ and deleted on SIGTERM or SIGINT; one
# left behind by SIGKILL is deleted by a later start once its process is gone.
set -euo pipefail

NEO4J_VERSION="5.26.30"
TOOLS="${TRELLIS_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/trellis/tools}"
DIR="$TOOLS/neo4j-$NEO4J_VERSION"
LAUNCHER="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/neo4j-launcher/Neo4jTestServer.java"
# Compiled classes are kept per checksum of the source, so that editing the
# launcher recompiles it without fetching the jars again.
CLASSES="$DIR/launcher-$(cksum <"$LAUNCHER" | cut -d' ' -f1)"
JAVA_BIN="${JAVA_HOME:+$JAVA_HOME/bin/}"

# Both steps build in a staging directory next to their result and rename
# it into place (one file system, so atomically): a result that exists is
# complete, and an interrupted install leaves at most a hidden `.staging-*`.
# If a concurrent install wins the rename, its result is as good as ours.
if [[ ! -d "$DIR" ]]; then
  echo "installing neo4j $NEO4J_VERSION into $DIR" >&2
  mkdir -p "$TOOLS"
  staging="$(mktemp -d "$TOOLS/.staging-neo4j-$NEO4J_VERSION.XXXXXX")"
  trap 'rm -rf "$staging"' EXIT
  cat >"$staging/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.test</groupId>
  <artifactId>neo4j-test-server</artifactId>
  <version>0</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.neo4j</groupId>
      <artifactId>neo4j</artifactId>
      <version>$NEO4J_VERSION</version>
    </dependency>
  </dependencies>
</project>
POM
  # Maven's local repository lives in the staging directory and goes with
  # it: lib/ holds a copy of every jar, keeping both would double the cache,
  # and ~/.m2 stays untouched. The plugin version is pinned so the result
  # does not depend on Maven's defaults. Maven's output goes to stderr, like
  # every other message here.
  mvn --batch-mode --quiet --file "$staging/pom.xml" \
    -Dmaven.repo.local="$staging/repository" -Dstyle.color=never \
    org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$staging/lib" >&2
  rm -rf "$staging/repository"
  mv -T "$staging" "$DIR" 2>/dev/null || [[ -d "$DIR/lib" ]]
  rm -rf "$staging"
  trap - EXIT
fi
if [[ ! -d "$CLASSES" ]]; then
  staging="$(mktemp -d "$DIR/.staging-launcher.XXXXXX")"
  trap 'rm -rf "$staging"' EXIT
  "${JAVA_BIN}javac" -nowarn -d "$staging" -cp "$DIR/lib/*" "$LAUNCHER"
  mv -T "$staging" "$CLASSES" 2>/dev/null || [[ -d "$CLASSES" ]]
  rm -rf "$staging"
  trap - EXIT
fi

if [[ "${1:-}" == "--install" ]]; then
  echo "neo4j: Neo4j $NEO4J_VERSION Community (embedded, Maven Central) in $DIR"
  exit 0
fi
PORT="${1:?usage: $0 PORT [DIR] | --install}"

ephemeral=""
if [[ -n "${2:-}" ]]; then
  HOME_DIR="$2"
else
  # Named after this shell's PID, which `exec` hands on to the JVM, so that
  # a directory whose process is gone is known to be abandoned.
  scratch="${TMPDIR:-/tmp}/trellis-neo4j-test"
  mkdir -p "$scratch"
  for old in "$scratch"/*; do
    if [[ -d "$old" ]] && ! ps -p "${old##*/}" >/dev/null 2>&1; then
      rm -rf "$old"
    fi
  done
  HOME_DIR="$scratch/$$"
  rm -rf "$HOME_DIR"
  ephemeral=1
fi

# The --add-opens and -D flags are those Neo4j's own launcher passes: it
# reaches into NIO buffers and file channels by reflection (Netty for Bolt,
# the page cache, transaction log I/O hints), which Java 17+ allows only when
# opened; without them it runs, but warns and falls back to slower paths.
# The heap is small, and at this size the serial collector keeps ~90 MB less
# resident than G1; the launcher caps the (off-heap) page cache at 256 MiB.
exec "${JAVA_BIN}java" \
  -Xms128m -Xmx768m -XX:+UseSerialGC \
  -XX:-OmitStackTraceInFastThrow \
  -Djdk.nio.maxCachedBufferSize=1024 \
  -Dio.netty.tryReflectionSetAccessible=true \
  --add-opens=java.base/java.nio=ALL-UNNAMED \
  --add-opens=java.base/java.io=ALL-UNNAMED \
  --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
  -Dlog4j2.disable.jmx=true \
  -cp "$CLASSES:$DIR/lib/*" \
  Neo4jTestServer "$PORT" "$HOME_DIR" ${ephemeral:+--delete-on-exit}
