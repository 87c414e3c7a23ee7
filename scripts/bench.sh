#!/usr/bin/env bash
# make bench: speed on this machine, with the reference tools measured in the same run.
# Targets are reported, never asserted. `scripts/bench.sh exchange` runs only the exchange part,
# `scripts/bench.sh qr` only the QR part (make bench-qr).
set -euo pipefail
only=${1:-all}
cd "$(dirname "$0")/.."
meishi=$PWD/.build/release/meishi
bench=$PWD/.build/release/meishi-bench
out=$PWD/bench-out
rm -rf "$out"; mkdir -p "$out"
count=${BENCH_CONTACTS:-100000}

now_ns() { date +%s%N; }
# median wall time in ms of N runs of a command (hyperfine, no shell in between)
median_ms() {
  local n=$1; shift
  local cmd; cmd=$(printf '%q ' "$@")
  hyperfine -N --warmup 2 --runs "$n" --export-json "$out/hf.json" "$cmd" >/dev/null 2>&1
  python3 -c 'import json,sys; print("%.2f" % (json.load(open(sys.argv[1]))["results"][0]["median"]*1000))' "$out/hf.json"
}

# the same for a command that may exit non-zero (meishi scan of an image without a code)
median_ms_any() {
  local n=$1; shift
  local cmd; cmd=$(printf '%q ' "$@")
  hyperfine -N -i --warmup 1 --runs "$n" --export-json "$out/hf.json" "$cmd" >/dev/null 2>&1
  python3 -c 'import json,sys; print("%.2f" % (json.load(open(sys.argv[1]))["results"][0]["median"]*1000))' "$out/hf.json"
}

echo "meishi bench — $(uname -m), $(nproc) cores, libsodium $(pkg-config --modversion libsodium), sqlite $(sqlite3 --version | cut -d' ' -f1)"
echo
if [ "$only" = all ]; then
echo "## Signatures (in process, release build)"
"$bench" crypto 1.0
echo
echo "## CPace, ristretto255 + SHA-512 (in process, release build; used by exchange --code)"
"$bench" cpace 1.0
echo
echo "## Start-up"
echo "meishi --version             median $(median_ms 30 "$meishi" --version) ms over 30 runs"
echo "/bin/true (process floor)    median $(median_ms 30 /bin/true) ms over 30 runs"
echo
echo "## Contact store: $count contacts"
mkdir -p "$out/home"
"$bench" store "$out/home" "$count" "$out/rows.sql" | tee "$out/insert.txt"
meishi_s=$(awk '{print $(NF-3)}' "$out/insert.txt")
# The sqlite3 shell inserts the same rows into the same (migrated, empty) schema in one transaction.
sqlite3 "$out/home/meishi.sqlite" ".schema" > "$out/schema.sql"
grep -v '^CREATE TABLE sqlite_sequence' "$out/schema.sql" | grep -v 'grdb_migrations' > "$out/schema-clean.sql" || true
rm -f "$out/shell.sqlite"
sqlite3 "$out/shell.sqlite" "PRAGMA journal_mode=WAL;" >/dev/null
sqlite3 "$out/shell.sqlite" < "$out/schema-clean.sql"
t0=$(now_ns)
sqlite3 "$out/shell.sqlite" < "$out/rows.sql"
shell_s=$(awk -v ns=$(( $(now_ns) - t0 )) 'BEGIN {printf "%.3f", ns/1e9}')
rows=$(sqlite3 "$out/shell.sqlite" "select count(*) from contact")
echo "sqlite3 shell bulk insert    $rows contacts in $shell_s s (same rows, one transaction)"
awk -v m="$meishi_s" -v s="$shell_s" 'BEGIN {printf "ratio meishi / sqlite3 shell  %.2f   (target: <= 2)\n", m/s}'
list_ms=$(median_ms 15 "$meishi" --home "$out/home" contacts list --limit 50)
show_ms=$(median_ms 15 "$meishi" --home "$out/home" contacts show 54321)
show_did=$(sqlite3 "$out/home/meishi.sqlite" "select did from contact where id=77777")
showdid_ms=$(median_ms 15 "$meishi" --home "$out/home" contacts show "$show_did")
search_ms=$(median_ms 15 "$meishi" --home "$out/home" contacts list --search user99999@ --limit 50)
echo "contacts list --limit 50     median $list_ms ms   (target: < 20 ms)"
echo "contacts show ID             median $show_ms ms   (target: < 20 ms)"
echo "contacts show DID            median $showdid_ms ms"
echo "contacts list --search TEXT  median $search_ms ms   (full scan, no target)"

fi
if [ "$only" = all ] || [ "$only" = qr ]; then
echo
echo "## QR print: meishi card qr vs qrencode, same content"
qhome=$out/qr-home
"$meishi" --home "$qhome" init >/dev/null
"$meishi" --home "$qhome" card set name "Mei Tanaka" >/dev/null
"$meishi" --home "$qhome" card set title "Staff Engineer" >/dev/null
"$meishi" --home "$qhome" card set org "Example Robotics" >/dev/null
"$meishi" --home "$qhome" card add email mei.tanaka@example.org >/dev/null
"$meishi" --home "$qhome" card add phone "+81 90 1234 5678" >/dev/null
"$meishi" --home "$qhome" card add url https://example.org/mei >/dev/null
"$meishi" --home "$qhome" card qr --format text > "$out/card.txt"
"$meishi" --home "$qhome" card qr --vcard --format text > "$out/vcard.txt"
content=$(cat "$out/card.txt")
qr_meishi=$(median_ms 30 "$meishi" --home "$qhome" card qr --format terminal)
qr_qrencode=$(median_ms 30 qrencode -t ANSIUTF8 -l M "$content")
echo "meishi card qr (sign + encode + render)  median $qr_meishi ms"
echo "qrencode -t ANSIUTF8 -l M (same text)    median $qr_qrencode ms"
awk -v m="$qr_meishi" -v q="$qr_qrencode" -v s="$(median_ms 30 "$meishi" --version)" \
  'BEGIN {printf "ratio meishi / qrencode  %.2f   (target: <= 2; meishi --version alone: %s ms)\n", m/q, s}'

py=$PWD/.venv/bin/python
qrkit=../shared/tools/qrkit.py
if [ -x "$py" ] && "$py" -c 'import zxingcpp, segno, cv2, PIL' 2>/dev/null; then
  echo
  echo "## QR scan: meishi scan --raw vs zbarimg vs zxing-cpp (decode rate, wrong decodes, per-image time)"
  # meishi and zbarimg run one process per image; zxing-cpp runs in process (no start-up cost).
  # scan --raw prints every code on its own line: an image with two codes is re-judged below
  # by its lines (qrkit's cmd: decoder takes all of stdout as one text).
  dec_meishi="cmd:$meishi scan --raw {path}"
  "$py" scripts/bench-qr.py payloads "$out/payloads.json" "$out/card.txt" "$out/vcard.txt"
  if [ -f "$qrkit" ]; then
    "$py" "$qrkit" gen --payloads "$out/payloads.json" --out "$out/segno-set" --n 140 --seed 7 --generators segno >"$out/gen.log" 2>&1 || cat "$out/gen.log"
    # Perspective on its own: the distortion zbar's finder handles worst.
    "$py" "$qrkit" gen --payloads "$out/payloads.json" --out "$out/perspective-set" --n 40 --seed 11 --generators segno,qrcode \
      --categories perspective >>"$out/gen.log" 2>&1 || cat "$out/gen.log"
    sets=("$out/segno-set" "$out/perspective-set")
    [ -d ../shared/corpus/qr ] && sets+=(../shared/corpus/qr/*/)
    "$py" "$qrkit" eval --decoder "$dec_meishi" --decoders zbarimg,zxingcpp --sets "${sets[@]}" \
      --json "$out/scan.json" --md "$out/scan.md" > "$out/scan.log" 2>&1 || true
    "$py" scripts/bench-qr.py report "$out/scan.json" "${sets[@]}"
  else
    echo "(../shared/tools/qrkit.py not present: scan comparison skipped)"
  fi

  echo
  echo "## Memory: meishi scan on a 12-megapixel JPEG photo"
  "$py" scripts/bench-qr.py photo "$out/photo.jpg" "$out/card.txt"
  /usr/bin/time -f "%M %e" -o "$out/time.txt" "$meishi" scan --raw "$out/photo.jpg" > "$out/photo.out" 2>/dev/null || true
  read -r kb secs < "$out/time.txt"
  found=$(head -c 8 "$out/photo.out")
  echo "peak RSS $((kb / 1024)) MB (target: < 250 MB), wall $secs s, decoded: ${found:-nothing}"
  /usr/bin/time -f "%M %e" -o "$out/time2.txt" zbarimg -q --raw "$out/photo.jpg" > /dev/null 2>&1 || true
  read -r kb2 secs2 < "$out/time2.txt"
  echo "zbarimg on the same photo: peak RSS $((kb2 / 1024)) MB, wall $secs2 s"
  "$py" scripts/bench-qr.py photo "$out/nocode.jpg" "$out/card.txt" --no-code
  nocode_meishi=$(median_ms_any 9 "$meishi" scan --raw "$out/nocode.jpg")
  nocode_zbar=$(median_ms_any 9 zbarimg -q --raw "$out/nocode.jpg")
  echo "12-megapixel photo with no code: meishi scan median $nocode_meishi ms (target: <= 150 ms), zbarimg $nocode_zbar ms"
else
  echo
  echo "(.venv without zxing-cpp/segno/opencv/pillow: QR scan comparison skipped; run make bench)"
fi

echo
fi
[ "$only" = qr ] && exit 0
echo "## Exchange: both 'meishi exchange --yes' started -> both cards saved, vs magic-wormhole"
runs=7
ehome=$out/exchange
"$meishi" --home "$ehome/a" init >/dev/null; "$meishi" --home "$ehome/a" card set name "Mei Tanaka" >/dev/null
"$meishi" --home "$ehome/b" init >/dev/null; "$meishi" --home "$ehome/b" card set name "Ken Sato" >/dev/null
median_of() { sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]}'; }
for i in $(seq $runs); do
  t0=$(now_ns)
  "$meishi" --home "$ehome/a" exchange --listen --port 47901 --yes --timeout 20 >/dev/null 2>&1 &
  "$meishi" --home "$ehome/b" exchange --peer 127.0.0.1:47901 --yes --timeout 20 >/dev/null 2>&1
  wait
  echo $(( ($(now_ns) - t0) / 1000 ))
done | awk '{print $1/1000}' | median_of > "$out/ex-loop.txt"
echo "meishi, loopback (--listen / --peer)                 median $(cat "$out/ex-loop.txt") ms over $runs"
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null; then
  scripts/netns.sh down mbx 2; scripts/netns.sh up mbx 2
  for mode in code none; do
    extra=(); [ $mode = code ] && extra=(--code 7-bench-anchor)
    for i in $(seq $runs); do
      t0=$(now_ns)
      ip netns exec mbx1 "$meishi" --home "$ehome/a" exchange --yes --timeout 20 "${extra[@]}" >/dev/null 2>&1 &
      ip netns exec mbx2 "$meishi" --home "$ehome/b" exchange --yes --timeout 20 "${extra[@]}" >/dev/null 2>&1
      wait
      echo $(( ($(now_ns) - t0) / 1000 ))
    done | awk '{print $1/1000}' | median_of > "$out/ex-ns-$mode.txt"
  done
  scripts/netns.sh down mbx 2
  echo "meishi, two namespaces, multicast with --code (PAKE, met)   median $(cat "$out/ex-ns-code.txt") ms over $runs (target: <= 50)"
  echo "meishi, two namespaces, multicast, 6-digit path (--yes)    median $(cat "$out/ex-ns-none.txt") ms over $runs (includes the 1 s window that makes sure only one peer is there)"
else
  echo "(not root: the namespace runs are skipped)"
fi
if [ -x "$PWD/.venv/bin/wormhole" ]; then
  wdir=$out/wormhole; mkdir -p "$wdir"
  v=$PWD/.venv/bin
  # The servers write their databases (relay.sqlite, usage.sqlite) into their working directory:
  # run them in the bench's temporary one, never at the repository root.
  (cd "$wdir" && exec "$v/twist" wormhole-mailbox --port=tcp:47911:interface=127.0.0.1 >"$wdir/mailbox.log" 2>&1) & mpid=$!
  (cd "$wdir" && exec "$v/twist" transitrelay --port=tcp:47912:interface=127.0.0.1 >"$wdir/relay.log" 2>&1) & rpid=$!
  sleep 3
  text=$(head -c 450 /dev/urandom | base64 -w0 | head -c 600)
  w=("$v/wormhole" --relay-url ws://127.0.0.1:47911/v1 --transit-helper tcp:127.0.0.1:47912)
  for i in $(seq $runs); do
    t0=$(now_ns)
    "${w[@]}" send --code "$i-bench-crossover" --text "$text" >/dev/null 2>&1 &
    "${w[@]}" receive --accept-file "$i-bench-crossover" > "$wdir/recv.txt" 2>/dev/null
    wait %1 2>/dev/null || true
    echo $(( ($(now_ns) - t0) / 1000 ))
  done | awk '{print $1/1000}' | median_of > "$wdir/median.txt"
  kill $mpid $rpid 2>/dev/null || true
  echo "magic-wormhole, 600-byte text, local mailbox+relay   median $(cat "$wdir/median.txt") ms over $runs"
  awk -v m="$(cat "$out/ex-loop.txt")" -v w="$(cat "$wdir/median.txt")" \
    'BEGIN {printf "ratio meishi loopback / wormhole  %.3f   (target: <= 0.25)\n", m/w}'
  [ -f "$out/ex-ns-code.txt" ] && awk -v m="$(cat "$out/ex-ns-code.txt")" -v w="$(cat "$wdir/median.txt")" \
    'BEGIN {printf "ratio meishi namespaces --code / wormhole  %.3f\n", m/w}'
else
  echo "(.venv has no magic-wormhole: comparison skipped)"
fi

echo
scripts/bench-vcard.sh "$meishi"
