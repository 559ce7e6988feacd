#!/usr/bin/env bash
# Builds one wheel per OS/arch (linux, darwin x amd64, arm64) with the static
# governor binary (CGO_ENABLED=0) inside, offline: setuptools and wheel of the
# system Python, no package index. Wheels land in clients/python/dist/. The binary
# is built as build-packages.sh (TypeScript) builds it, so the two share the cache.
#   clients/python/build-wheels.sh            # all four
#   clients/python/build-wheels.sh linux/amd64 # only these
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
py=${PYTHON:-/usr/bin/python3}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)
plat() {
  case $1 in
    linux/amd64) echo manylinux2014_x86_64 ;;
    linux/arm64) echo manylinux2014_aarch64 ;;
    darwin/amd64) echo macosx_10_12_x86_64 ;;
    darwin/arm64) echo macosx_11_0_arm64 ;;
    *) echo "unknown target $1; allowed: linux/amd64 linux/arm64 darwin/amd64 darwin/arm64" >&2; exit 2 ;;
  esac
}
mkdir -p "$here/dist"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for t in "${targets[@]}"; do
  p=$(plat "$t")
  rm -rf "$work/src" && mkdir -p "$work/src"
  cp -r "$here/governor" "$here/pyproject.toml" "$here/setup.py" "$work/src/"
  rm -rf "$work/src/governor/_bin" "$work/src/governor/__pycache__"
  mkdir -p "$work/src/governor/_bin"
  (cd "$repo" && CGO_ENABLED=0 GOOS=${t%/*} GOARCH=${t#*/} go build -ldflags '-s -w' -o "$work/src/governor/_bin/governor" ./cmd/governor)
  (cd "$work/src" && GOVERNOR_WHEEL_PLAT=$p "$py" -m build --wheel --no-isolation --outdir "$here/dist" . >/dev/null)
  echo "built $(ls "$here/dist"/*-"$p".whl)"
done
