#!/usr/bin/env bash
# Builds the npm packages into clients/typescript/packages/:
#   governor-cli-OS-ARCH-VERSION.tgz  one per linux/darwin x x64/arm64: the static
#                                     governor binary in bin/, "os" and "cpu" set so
#                                     npm installs only the host's; no install script
#   governor-client-VERSION.tgz       the client (dist/src), the four above under
#                                     optionalDependencies
# Usage: build-packages.sh [OS/ARCH ...]   (Go's names; default: all four)
set -euo pipefail
cd "$(dirname "$0")"
here=$PWD
repo=$(cd ../.. && pwd)
version=$(node -p 'require("./package.json").version')
out="$here/packages"
rm -rf "$out"
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
  (cd "$repo" && CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -ldflags '-s -w' -o "$dir/bin/governor" ./cmd/governor)
  cat >"$dir/package.json" <<JSON
{
  "name": "$name",
  "version": "$version",
  "description": "The governor binary for $goos-$arch (used by @governor/client)",
  "license": "MIT",
  "os": ["$goos"],
  "cpu": ["$arch"],
  "files": ["bin"]
}
JSON
  (cd "$out" && npm pack --silent "$dir" >/dev/null)
  optional+=("\"$name\": \"$version\"")
done

npm run --silent build
main="$out/client"
mkdir -p "$main"
cp -r dist "$main/"
rm -rf "$main/dist/test" "$main/dist/bench" "$main/dist/examples"
deps=$(IFS=,; echo "${optional[*]}")
node -e '
  const p = require("./package.json");
  delete p.devDependencies; delete p.scripts;
  p.optionalDependencies = JSON.parse("{" + process.argv[1] + "}");
  require("fs").writeFileSync(process.argv[2], JSON.stringify(p, null, 2) + "\n");
' "$deps" "$main/package.json"
(cd "$out" && npm pack --silent "$main" >/dev/null)
ls "$out"/*.tgz
