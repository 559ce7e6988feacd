#!/usr/bin/env bash
# Prints THIRD_PARTY_NOTICES: the licence and notice files of every Go
# module a governor binary links, on any OS/arch of the release (the full
# build's modules: the one without serve links a subset), and of the Go
# standard library, as each ships them (LICENSE*, LICENCE*, COPYING*,
# NOTICE*, PATENTS from the module cache and GOROOT). The release puts it
# beside LICENSE in every artifact that carries a binary or builds one.
#   release/notices.sh > THIRD_PARTY_NOTICES
# Fails, naming the module, when a linked module has no licence file.
set -euo pipefail
cd "$(dirname "$0")/.."
lists=$(mktemp -d)
trap 'rm -rf "$lists"' EXIT
pids=()
for t in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do # at once: each mostly waits
  CGO_ENABLED=0 GOOS=${t%/*} GOARCH=${t#*/} go list -buildvcs=false -deps \
    -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}} {{.Dir}}{{end}}{{end}}' ./cmd/governor >"$lists/${t/\//-}" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
mods=$(sort -u "$lists"/*)
rule=-------------------------------------------------------------------------------
# File names are matched in any case by bash itself (bash 3.1 and later,
# macOS's too): a basename and a tr for each of the ~900 files of the
# module directories were ~3,000 processes, 29 s of CPU.
shopt -s nocasematch
# section NAME VERSION DIR: one part per licence or notice file of DIR.
section() {
  local found=0 f name
  for f in "$3"/*; do
    name=${f##*/}
    case $name in
      licen[cs]e | licen[cs]e.* | licen[cs]e-* | copying | copying.* | notice | notice.* | patents) ;;
      *) continue ;;
    esac
    [ -f "$f" ] || continue
    printf '\n%s\n%s %s: %s\n%s\n\n' "$rule" "$1" "$2" "$name" "$rule"
    cat "$f"
    found=1
  done
  [ $found = 1 ] || { echo "release/notices.sh: module $1 $2 ($3) has no LICENSE, COPYING or NOTICE file" >&2; exit 1; }
}
echo "governor links the Go modules below and the Go standard library. Each one's"
echo "licence and notice files follow as it ships them, headed by its module path,"
echo "version and file name. governor itself is under LICENSE (Apache-2.0)."
echo "$mods" | awk '{printf "  %s %s\n", $1, $2}'
echo "  the Go standard library $(go env GOVERSION)"
while read -r path version dir; do
  section "$path" "$version" "$dir"
done <<<"$mods"
section "the Go standard library" "$(go env GOVERSION)" "$(go env GOROOT)"
