#!/usr/bin/env bash
# Prints man/meishi.1: the command tree as argument-parser's generate-manual renders it, with the
# hand-written sections of man/sections.mdoc in place of its empty EXIT STATUS section.
set -euo pipefail
cd "$(dirname "$0")/.."
date=${MAN_DATE:-$(date -u +%Y-%m-%d)}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! swift package generate-manual --configuration debug --date "$date" --authors "the meishi developers" >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
generated=.build/plugins/GenerateManual/outputs/meishi/meishi.1
awk -v sections=man/sections.mdoc '
  /^\.Sh "EXIT STATUS"/ { skipping = 1; while ((getline line < sections) > 0) if (line != "") print line; next }
  /^\.Sh / && skipping && !/EXIT STATUS/ { skipping = 0 }
  # argument-parser leaves blank lines between paragraphs of a discussion: mdoc wants .Pp
  # (a blank line is a warning in man --warnings and lintian), except inside a literal display.
  /^\.Bd / { literal = 1 }
  /^\.Ed/ { literal = 0 }
  !skipping && /^$/ && !literal { print ".Pp"; next }
  !skipping { print }
' "$generated"
