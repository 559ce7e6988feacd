#!/usr/bin/env bash
# The release command: from a clean tree, every artifact of governor VERSION
# (the VERSION file) into one directory, with their checksums.
#
#   release/release.sh --dry-run [--out DIR]   build only: no tag, no publish
#   release/release.sh [--out DIR]             build, tag vVERSION, publish
#
# DIR (default dist/release/) receives:
#   governor-VERSION-OS-ARCH.tar.gz        linux/darwin x amd64/arm64: the static
#                                          binary, LICENSE, THIRD_PARTY_NOTICES,
#                                          README.md, metrics/dashboard.json (the
#                                          Grafana dashboard), config/exec-defaults
#                                          .schema.json (the config's JSON Schema)
#   governor_client-VERSION-py3-none-*.whl the four wheels (the binary without
#                                          serve inside)
#   governor_client-VERSION.tar.gz         the sdist (Go source inside: pip
#                                          builds the binary when Go is on PATH)
#   governor-cli-OS-ARCH-VERSION.tgz       the four npm platform packages (the
#                                          wheel's binary)
#   governor-client-VERSION.tgz            the npm client
#   governor.rb                            the Homebrew formula, with this
#                                          release's archives' sha256
#   RELEASE_NOTES.md                       VERSION's entry of CHANGELOG.md
#   SHA256SUMS                             over every file above
# Each OS/arch has two builds (release/build-binary.sh), stamped with one
# commit and one version: the full binary in the archive (and so Homebrew's),
# and the clients' build without serve (--without-serve), shared by the
# wheel and the npm platform package, which run it only as `governor bridge`.
# Each artifact that carries a binary or builds one carries THIRD_PARTY_NOTICES
# (release/notices.sh) beside LICENSE. Two runs at one commit write the same
# bytes: -trimpath binaries, and archives with sorted entries, owner 0, fixed
# modes and every time SOURCE_DATE_EPOCH, the commit's (release/reproducible_test.go).
# One progress line per artifact, and per binary, as it is made: its size and
# the seconds since the line before.
# Publishing (not in --dry-run): the tag v<VERSION> pushed to origin, the npm
# tarballs by `npm publish`, the wheels and sdist by `twine upload`, the
# archives, formula and SHA256SUMS as a GitHub release by `gh`; each tool is
# checked before anything is tagged.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dry=0 out=$repo/dist/release
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) dry=1 ;;
    --out) [ $# -ge 2 ] || { echo "release.sh: --out needs a directory" >&2; exit 2; }; out=$2; shift ;;
    --out=*) out=${1#--out=} ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "release.sh: unknown argument $1; allowed: --dry-run, --out DIR, --help" >&2; exit 2 ;;
  esac
  shift
done
start=$(date +%s)
cd "$repo"
version=$(cat VERSION)
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$ ]] || { echo "release.sh: VERSION $version: want MAJOR.MINOR.PATCH[-PRE]" >&2; exit 2; }
tag=v$version
notes=$(awk -v v="$version" '/^## /{p = index($0, "## [" v "]") == 1; next} p' CHANGELOG.md)
[ -n "$(echo "$notes" | tr -d '[:space:]')" ] || { echo "release.sh: CHANGELOG.md has no entry '## [$version]'" >&2; exit 2; }
commit=$(release/commit.sh)
if [ $dry = 0 ]; then
  [ -z "$(git status --porcelain)" ] || { echo "release.sh: the tree has changes; a release builds from a clean tree (or use --dry-run)" >&2; exit 2; }
  ! git rev-parse -q --verify "refs/tags/$tag" >/dev/null || { echo "release.sh: tag $tag exists; raise VERSION" >&2; exit 2; }
  for tool in npm twine gh; do
    command -v $tool >/dev/null || { echo "release.sh: $tool is needed to publish (or use --dry-run)" >&2; exit 2; }
  done
fi
t0=$(date +%s%N)
# progress FILE [WHAT]: FILE is made; its line: name, size, seconds since the last line.
progress() {
  local now; now=$(date +%s%N)
  printf '  %-48s %10d bytes %7.1f s\n' "${2:-$(basename "$1")}" "$(stat -c %s "$1")" "$(( (now - t0) / 1000000 ))e-3"
  t0=$now
}
# step WHAT: a step that makes no artifact is done; its line, with its seconds.
step() {
  local now; now=$(date +%s%N)
  printf '  %-48s %16s %7.1f s\n' "$1" "" "$(( (now - t0) / 1000000 ))e-3"
  t0=$now
}
# built CMD...: runs a builder that prints "built PATH" for each artifact; a
# progress line for each as it comes.
built() {
  local line
  while IFS= read -r line; do
    case $line in "built "*) progress "${line#built }" ;; esac
  done < <("$@")
  wait $! || { echo "release.sh: $* failed" >&2; exit 1; }
}
echo "governor $version ($commit): building into $out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# quiet CMD...: its output shown only when it fails.
quiet() { "$@" >"$work/log" 2>&1 || { cat "$work/log" >&2; echo "release.sh: $* failed" >&2; exit 1; }; }
# The sources agree on version and licence before anything is built. A
# dry run told that its caller runs ./release/'s tests on the same tree
# (GOVERNOR_RELEASE_SOURCES_CHECKED=1: .ci/run, whose Go suite runs them
# whole, beside it) does not run them twice; a release always runs them.
if [ $dry = 1 ] && [ "${GOVERNOR_RELEASE_SOURCES_CHECKED:-}" = 1 ]; then
  step "the sources checked by the caller (GOVERNOR_RELEASE_SOURCES_CHECKED=1)"
else
  quiet go test -timeout 30m -short -count=1 ./release/ # the builds the tests would make, the release makes and checks below
  step "checked the sources (go test -short ./release/)"
fi

rm -rf "$out" && mkdir -p "$out"
out=$(cd "$out" && pwd)
export GOVERNOR_COMMIT=$commit GOVERNOR_BIN_DIR=$work/bridge
targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)
# Every time an archive records is the commit's.
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
export SOURCE_DATE_EPOCH
release/notices.sh >"$work/THIRD_PARTY_NOTICES"
export GOVERNOR_NOTICES=$work/THIRD_PARTY_NOTICES
progress "$work/THIRD_PARTY_NOTICES"

for t in "${targets[@]}"; do
  os=${t%/*} arch=${t#*/}
  mkdir -p "$work/bin/$os-$arch" "$work/bridge/$os-$arch"
  release/build-binary.sh "$t" "$work/bin/$os-$arch/governor"
  progress "$work/bin/$os-$arch/governor" "(binary $os/$arch)"
  release/build-binary.sh --without-serve "$t" "$work/bridge/$os-$arch/governor"
  progress "$work/bridge/$os-$arch/governor" "(binary $os/$arch without serve)"
  name=governor-$version-$os-$arch
  a=$work/archive/$name
  mkdir -p "$a/metrics" "$a/config"
  cp "$work/bin/$os-$arch/governor" LICENSE README.md "$GOVERNOR_NOTICES" "$a/"
  cp metrics/dashboard.json "$a/metrics/"
  cp config/exec-defaults.schema.json "$a/config/"
  chmod -R u=rwX,go=rX "$a"
  tar -C "$work/archive" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" -cf - "$name" |
    gzip -9 -n >"$out/$name.tar.gz"
  progress "$out/$name.tar.gz"
done

for t in "${targets[@]}" sdist; do
  OUT=$out built clients/python/build-wheels.sh "$t"
done
[ -d clients/typescript/node_modules ] || { (cd clients/typescript && quiet npm ci --no-audit --no-fund); step "npm ci (clients/typescript)"; }
OUT=$out built clients/typescript/build-packages.sh "${targets[@]}"

sed_args=(-e "s/@VERSION@/$version/g")
for t in "${targets[@]}"; do
  os=${t%/*} arch=${t#*/}
  sum=$(sha256sum "$out/governor-$version-$os-$arch.tar.gz" | cut -d' ' -f1)
  key=$(echo "SHA256_${os}_$arch" | tr '[:lower:]' '[:upper:]')
  sed_args+=(-e "s/@$key@/$sum/")
done
sed "${sed_args[@]}" release/homebrew/governor.rb >"$out/governor.rb"
progress "$out/governor.rb"
{ echo "# governor $version"; echo; echo "$notes" | sed -e '/./,$!d'; } >"$out/RELEASE_NOTES.md"
progress "$out/RELEASE_NOTES.md"
(cd "$out" && sha256sum -- *.tar.gz *.whl *.tgz governor.rb RELEASE_NOTES.md >SHA256SUMS)
progress "$out/SHA256SUMS"

# The artifacts agree with the sources (version, licence, platforms, checksums)
# and with each other (the clients' binaries: one build, the archive's but for serve).
GOVERNOR_RELEASE_DIR=$out quiet go test -timeout 30m -count=1 -run 'Artifacts|GoInstallModule' ./release/
step "checked the artifacts (release/artifacts_test.go)"
# docs/install.md's commands, run against them in a fresh HOME.
GOVERNOR_RELEASE_DIR=$out quiet go test -timeout 30m -count=1 -run '^TestInstallDocs$' ./docs/
step "ran docs/install.md's commands (docs/install_test.go)"

echo "governor $version ($commit) in $out, $(( $(date +%s) - start )) s:"
(cd "$out" && ls -l --time-style=+ -- * | awk 'NR > 0 && $5 != "" {printf "  %10d  %s\n", $5, $NF}')

[ $dry = 1 ] && { echo "dry run: not tagged, not published"; exit 0; }
git tag -a "$tag" -m "governor $version"
git push origin "$tag"
for f in "$out"/governor-cli-*.tgz "$out"/governor-client-"$version".tgz; do npm publish --access public "$f"; done
twine upload "$out"/*.whl "$out/governor_client-$version.tar.gz"
gh release create "$tag" --title "governor $version" --notes-file "$out/RELEASE_NOTES.md" \
  "$out"/governor-"$version"-*.tar.gz "$out/governor.rb" "$out/SHA256SUMS"
echo "released $tag"
