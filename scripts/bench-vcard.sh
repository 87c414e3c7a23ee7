#!/usr/bin/env bash
# vCard part of make bench: cards read by meishi vs Python vobject over ../shared/corpus/vcard
# (when present), and the time to import and export 10,000 contacts. Reported, never asserted.
# usage: scripts/bench-vcard.sh [MEISHI_BINARY]   (default: the release build)
set -euo pipefail
# A step that fails says where (a check-bench run once ended silently after a section header).
trap 'echo "$0: line $LINENO: a step failed with status $?" >&2' ERR
cd "$(dirname "$0")/.."
meishi=${1:-$PWD/.build/release/meishi}
py=$PWD/.venv/bin/python
out=$PWD/bench-out/vcard
rm -rf "$out"; mkdir -p "$out"
n=${BENCH_VCARDS:-10000}
now_ns() { date +%s%N; }
ms_since() { echo $(( ($(now_ns) - $1) / 1000000 )); }

echo "## vCard ($(basename "$(dirname "$(dirname "$meishi")")")/$(basename "$(dirname "$meishi")") build)"
corpus=$PWD/../shared/corpus/vcard
if [ -d "$corpus" ] && [ -x "$py" ] && "$py" -c 'import vobject' 2>/dev/null; then
  MEISHI_HOME=$out/corpus-home "$meishi" init >/dev/null   # commands refuse a home without an identity
  files=$(find "$corpus" -name '*.vcf' | sort | head -n "${BENCH_VCARD_FILES:-1000000}")
  count=$(echo "$files" | wc -l)
  t0=$(now_ns); read_meishi=0; failed_meishi=0
  for f in $files; do
    j=$(MEISHI_HOME=$out/corpus-home "$meishi" contacts import --dry-run --json "$f" 2>/dev/null || true)
    c=$(echo "$j" | "$py" -c 'import json,sys
try:
    d=json.load(sys.stdin); print(len(d["cards"]))
except Exception:
    print(-1)')
    if [ "$c" -lt 0 ]; then failed_meishi=$((failed_meishi + 1)); else read_meishi=$((read_meishi + c)); fi
  done
  meishi_ms=$(ms_since "$t0")
  t0=$(now_ns)
  vobject_report=$("$py" - $files <<'PY'
import logging, sys, vobject
logging.disable(logging.CRITICAL)  # vobject logs every line it skips
cards = failed = 0
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    try:
        cards += sum(1 for _ in vobject.readComponents(text, ignoreUnreadable=True))
    except Exception:
        failed += 1
print(cards, failed)
PY
)
  vobject_ms=$(ms_since "$t0")
  echo "corpus: $count files"
  echo "meishi   cards read $read_meishi, files failed $failed_meishi, $meishi_ms ms ($count processes, --dry-run into a store)"
  echo "vobject  cards read ${vobject_report% *}, files failed ${vobject_report#* }, $vobject_ms ms (one Python process)"
else
  echo "(corpus ../shared/corpus/vcard or .venv with vobject missing: corpus comparison skipped)"
fi

gen=python3; [ -x "$py" ] && gen=$py
"$gen" - "$n" > "$out/many.vcf" <<'PY'
import sys
n = int(sys.argv[1])
for i in range(n):
    sys.stdout.write("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Person %d Example\r\nN:Example;Person %d;;;\r\n"
                     "ORG:Example Org %d\r\nTITLE:Engineer\r\nEMAIL;TYPE=work:person%d@example.org\r\n"
                     "TEL;TYPE=cell:+81 90 %04d %04d\r\nURL:https://example.org/p/%d\r\n"
                     "NOTE:note for person %d\\, with a comma\r\nBDAY:1990-01-01\r\nEND:VCARD\r\n"
                     % (i, i, i % 100, i, i // 10000, i % 10000, i, i))
PY
home=$out/home
MEISHI_HOME=$home "$meishi" init >/dev/null
t0=$(now_ns)
MEISHI_HOME=$home "$meishi" contacts import "$out/many.vcf" | tail -1
echo "import $n contacts (new store)      $(ms_since "$t0") ms"
t0=$(now_ns)
MEISHI_HOME=$home "$meishi" contacts import "$out/many.vcf" | tail -1
echo "import the same $n again (merge)    $(ms_since "$t0") ms"
python3 - > "$out/same-name.vcf" <<'PY'
import sys
for i in range(2000):
    sys.stdout.write("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Alice\r\nEMAIL:alice%d@example.org\r\nEND:VCARD\r\n" % i)
PY
MEISHI_HOME=$out/same-name-home "$meishi" init >/dev/null
t0=$(now_ns)
MEISHI_HOME=$out/same-name-home "$meishi" contacts import "$out/same-name.vcf" 2>/dev/null | tail -1
echo "import 2000 cards all named Alice      $(ms_since "$t0") ms (issue 22 finding 2: over 7.5 min before)"
t0=$(now_ns)
MEISHI_HOME=$home "$meishi" contacts export -o "$out/export.vcf" 2>/dev/null
echo "export $n contacts (vCard 4.0)      $(ms_since "$t0") ms, $(wc -c < "$out/export.vcf") bytes"
if [ -x "$py" ] && "$py" -c 'import vobject' 2>/dev/null; then
  t0=$(now_ns)
  c=$("$py" -c 'import sys, vobject; print(sum(1 for _ in vobject.readComponents(open(sys.argv[1], encoding="utf-8").read())))' "$out/export.vcf")
  echo "vobject reads the export back: $c cards in $(ms_since "$t0") ms"
fi
