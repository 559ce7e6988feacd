#!/usr/bin/env bash
# Builds the static governor binary for one OS/ARCH: the one set of build
# flags behind every artifact (the archives, the wheels, the npm packages).
#   release/build-binary.sh [--without-serve] OS/ARCH OUT
# --without-serve: the clients' build (the wheels' and the npm platform
# packages'), which they run only as `governor bridge`: -tags
# governor_noserve, so it links no metrics/Prometheus code and its processes
# skip that package initialisation (a bridge at rest 14 MiB against 17, its
# --version 11 ms of CPU against 17: docs/benchmarks.md); its `serve` says it is
# missing. The archives, Homebrew and `go install` have the full binary.
# CGO_ENABLED=0: static, runs on any Linux of its arch. -buildvcs=false:
# the commit is stamped rather than read from .git, so a build from a source
# archive (the sdist's go-src/) names it too. -trimpath: the binary holds no
# path of the machine that built it (the module cache, GOROOT, the tree), so
# two builds of one commit are byte-identical wherever they run
# (release/reproducible_test.go); its compile cache is not `go build ./...`'s.
# The commit is stamped with the linker: $GOVERNOR_COMMIT, else git's HEAD
# (with -dirty when the tree has changes); `governor --version` prints it.
set -euo pipefail
tags=()
[ "${1:-}" = --without-serve ] && { tags=(-tags governor_noserve); shift; }
[ $# -eq 2 ] || { echo "usage: $0 [--without-serve] OS/ARCH OUT" >&2; exit 2; }
target=$1 out=$2
case $target in
  linux/amd64|linux/arm64|darwin/amd64|darwin/arm64) ;;
  *) echo "$0: target $target; allowed: linux/amd64 linux/arm64 darwin/amd64 darwin/arm64" >&2; exit 2 ;;
esac
repo=$(cd "$(dirname "$0")/.." && pwd)
commit=${GOVERNOR_COMMIT:-$("$repo/release/commit.sh")}
cd "$repo"
CGO_ENABLED=0 GOOS=${target%/*} GOARCH=${target#*/} go build -trimpath -buildvcs=false ${tags[@]+"${tags[@]}"} \
  -ldflags "-s -w -X github.com/governor-dev/governor/internal/buildinfo.commit=$commit" -o "$out" ./cmd/governor
