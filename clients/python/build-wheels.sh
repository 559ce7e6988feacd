#!/usr/bin/env bash
# Builds the Python packages of governor-client, offline (no package index, no
# build requirement: governor_build.py, the build backend, is standard library):
#   one wheel per OS/arch (linux, darwin x amd64, arm64), the static governor
#   binary without serve (the bridge's build: release/build-binary.sh
#   --without-serve) inside as governor/_bin/governor, tagged py3-none-PLATFORM;
#   `sdist`: the source distribution, with the module's Go source (go-src/)
#   so that pip builds the binary when Go is on PATH (governor_build.py).
# Each carries LICENSE and THIRD_PARTY_NOTICES (the licences of the Go modules
# in the binary: $GOVERNOR_NOTICES, else release/notices.sh), and the version
# of VERSION at the repository's root. SOURCE_DATE_EPOCH (default: the
# commit's time) is every time in them: two builds of one commit are equal.
# Prints "built PATH" for each.
#   clients/python/build-wheels.sh                   # the four wheels and the sdist
#   clients/python/build-wheels.sh linux/amd64 sdist # only these
# GOVERNOR_BIN_DIR: take the binaries from DIR/OS-ARCH/governor (the release
# command's) instead of building them; OUT: where they land (default
# clients/python/dist/).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
py=${PYTHON:-/usr/bin/python3}
out=${OUT:-$here/dist}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 sdist)
plat() {
  case $1 in
    linux/amd64) echo manylinux2014_x86_64 ;;
    linux/arm64) echo manylinux2014_aarch64 ;;
    darwin/amd64) echo macosx_12_0_x86_64 ;;
    darwin/arm64) echo macosx_12_0_arm64 ;;
    *) echo "unknown target $1; allowed: linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 sdist" >&2; exit 2 ;;
  esac
}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
: "${SOURCE_DATE_EPOCH:=$(git -C "$repo" log -1 --format=%ct 2>/dev/null || echo 315532800)}"
export SOURCE_DATE_EPOCH
notices=${GOVERNOR_NOTICES:-}
[ -n "$notices" ] || { notices=$work/THIRD_PARTY_NOTICES; "$repo/release/notices.sh" >"$notices"; }
# python -m build, its chatter shown only when it fails.
pybuild() { "$py" -m build --no-isolation --outdir "$out" "$@" >"$work/log" 2>&1 || { cat "$work/log" >&2; return 1; }; }
stage() { # the package's tree, as the sdist and each wheel start from it
  rm -rf "$work/src" && mkdir -p "$work/src"
  cp -r "$here/governor" "$here/pyproject.toml" "$here/governor_build.py" "$repo/LICENSE" "$repo/VERSION" "$work/src/"
  cp "$notices" "$work/src/THIRD_PARTY_NOTICES"
  rm -rf "$work/src/governor/_bin" "$work/src/governor/__pycache__"
}
for t in "${targets[@]}"; do
  stage
  if [ "$t" = sdist ]; then
    # The module's Go source without its tests: what `go build ./cmd/governor` needs.
    # (Tracked files and new ones not ignored; embedded assets included.)
    (cd "$repo" && git ls-files --cached --others --exclude-standard -- go.mod go.sum VERSION LICENSE \
      '*.go' release/commit.sh cmd governor internal config metrics scripts-lua |
      grep -v -e '_test\.go$' -e '/testdata/' -e '^clients/' -e '^bench/' -e '^faults/' -e '^docs/' -e '^release/.*\.go$' |
      tar cf - -T -) | (mkdir -p "$work/src/go-src" && tar xf - -C "$work/src/go-src")
    echo "${GOVERNOR_COMMIT:-$("$repo/release/commit.sh")}" >"$work/src/COMMIT"
    (cd "$work/src" && pybuild --sdist .)
    echo "built $(ls "$out"/governor_client-*.tar.gz)"
    continue
  fi
  p=$(plat "$t")
  mkdir -p "$work/src/governor/_bin"
  if [ -n "${GOVERNOR_BIN_DIR:-}" ]; then
    cp "$GOVERNOR_BIN_DIR/${t%/*}-${t#*/}/governor" "$work/src/governor/_bin/governor"
  else
    "$repo/release/build-binary.sh" --without-serve "$t" "$work/src/governor/_bin/governor"
  fi
  (cd "$work/src" && GOVERNOR_WHEEL_PLAT=$p pybuild --wheel .)
  echo "built $(ls "$out"/*-"$p".whl)"
done
