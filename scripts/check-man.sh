#!/usr/bin/env bash
# Fails when man/meishi.1 is not what `make man` would write now (the .Dd date aside).
set -euo pipefail
cd "$(dirname "$0")/.."
fresh=$(mktemp)
trap 'rm -f "$fresh"' EXIT
scripts/make-man.sh > "$fresh"
if ! diff -u <(grep -v '^\.Dd ' man/meishi.1) <(grep -v '^\.Dd ' "$fresh") > /dev/null; then
  diff -u <(grep -v '^\.Dd ' man/meishi.1) <(grep -v '^\.Dd ' "$fresh") | head -40 >&2
  echo "man/meishi.1 is stale: the command tree or man/sections.mdoc changed; run 'make man' and commit it" >&2
  exit 1
fi
echo "man/meishi.1 is current"
