#!/usr/bin/env bash
# Builds the npm packages into clients/typescript/packages/:
#   governor-cli-OS-ARCH-VERSION.tgz  one per linux/darwin x x64/arm64: the static
#                                     governor binary without serve (the bridge's
#                                     build: release/build-binary.sh --without-serve)
#                                     in bin/, "os" and "cpu" set so npm installs
#                                     only the host's; no install script, no "bin"
#   governor-client-VERSION.tgz       the client (dist/src), the four above under
#                                     optionalDependencies
# Each carries LICENSE, "license": "Apache-2.0" and the version of VERSION at
# the repository's root; the platform packages THIRD_PARTY_NOTICES too (the
# licences of the Go modules in the binary: $GOVERNOR_NOTICES, else
# release/notices.sh). Prints "built PATH" for each tarball.
# Usage: build-packages.sh [OS/ARCH ...]   (Go's names; default: all four)
# GOVERNOR_BIN_DIR: take the binaries from DIR/OS-ARCH/governor (the release
# command's) instead of building them; OUT: where the tarballs land
# (default clients/typescript/packages/, emptied first).
set -euo pipefail
cd "$(dirname "$0")"
here=$PWD
repo=$(cd ../.. && pwd)
version=$(cat "$repo/VERSION")
out=${OUT:-$here/packages}
rm -rf "$out/cli-"* "$out/client" "$out"/governor-cli-*.tgz "$out"/governor-client-*.tgz
mkdir -p "$out"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64)

npm_arch() {
  case $1 in
    amd64) echo x64 ;;
    arm64) echo arm64 ;;
    *) echo "build-packages.sh: arch $1: want amd64 or arm64" >&2; exit 2 ;;
  esac
}

optional=()
for target in "${targets[@]}"; do
  goos=${target%/*} goarch=${target#*/}
  case $goos in linux|darwin) ;; *) echo "build-packages.sh: OS $goos: want linux or darwin" >&2; exit 2 ;; esac
  arch=$(npm_arch "$goarch")
  name="@governor/cli-$goos-$arch"
  dir="$out/cli-$goos-$arch"
  mkdir -p "$dir/bin"
  if [ -n "${GOVERNOR_BIN_DIR:-}" ]; then
    cp "$GOVERNOR_BIN_DIR/$goos-$goarch/governor" "$dir/bin/governor"
  else
    "$repo/release/build-binary.sh" --without-serve "$target" "$dir/bin/governor"
  fi
  cp "$repo/LICENSE" "$dir/"
  # The licences of the Go modules the binary links (release/notices.sh).
  if [ -n "${GOVERNOR_NOTICES:-}" ]; then cp "$GOVERNOR_NOTICES" "$dir/THIRD_PARTY_NOTICES"; else "$repo/release/notices.sh" >"$dir/THIRD_PARTY_NOTICES"; fi
  cat >"$dir/package.json" <<JSON
{
  "name": "$name",
  "version": "$version",
  "description": "The governor binary for $goos-$arch (used by @governor/client)",
  "license": "Apache-2.0",
  "os": ["$goos"],
  "cpu": ["$arch"],
  "files": ["bin", "THIRD_PARTY_NOTICES"],
  "repository": {"type": "git", "url": "https://github.com/governor-dev/governor.git"}
}
JSON
  echo "built $out/$(cd "$out" && npm pack --silent "$dir" | tail -1)"
  optional+=("\"$name\": \"$version\"")
done

npm run --silent build
main="$out/client"
mkdir -p "$main"
cp -r dist "$main/"
cp "$repo/LICENSE" "$main/"
rm -rf "$main/dist/test" "$main/dist/bench" "$main/dist/examples"
deps=$(IFS=,; echo "${optional[*]}")
node -e '
  const p = require("./package.json");
  delete p.devDependencies; delete p.scripts;
  p.version = process.argv[3];
  p.optionalDependencies = JSON.parse("{" + process.argv[1] + "}");
  require("fs").writeFileSync(process.argv[2], JSON.stringify(p, null, 2) + "\n");
' "$deps" "$main/package.json" "$version"
echo "built $out/$(cd "$out" && npm pack --silent "$main" | tail -1)"
rm -rf "$out/cli-"* "$out/client"
