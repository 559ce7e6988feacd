#!/usr/bin/env bash
# Prints the commit the tree is at, with -dirty when it has changes (tracked
# or untracked, .gitignore'd files aside); "unknown" outside a git checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
c=$(git rev-parse HEAD 2>/dev/null) || { echo unknown; exit 0; }
[ -z "$(git status --porcelain 2>/dev/null)" ] || c=$c-dirty
echo "$c"
