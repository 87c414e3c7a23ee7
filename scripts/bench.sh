#!/usr/bin/env bash
# make bench: speed on this machine, with the reference tools measured in the same run.
# Targets are reported, never asserted. `scripts/bench.sh exchange` runs only the exchange part,
# `scripts/bench.sh messages` only the messages part.
# `scripts/bench.sh psi` only the common-friends part.
# `scripts/bench.sh qr` only the QR part (make bench-qr).
# `scripts/bench.sh startup` only the start-up part (make bench-startup).
# `scripts/bench.sh table` only the table part (make bench-table).
# BENCH_QUICK=1 (make check-bench, run by make test): every part once, on tiny inputs, with the
# build in BENCH_BUILD (default: the release build), so the script cannot rot unnoticed; its
# figures mean nothing.
set -euo pipefail
# A step that fails says where (a check-bench run once ended silently after a section header).
trap 'echo "$0: line $LINENO: a step failed with status $?" >&2' ERR
only=${1:-all}
cd "$(dirname "$0")/.."
quick=${BENCH_QUICK:-0}
build=${BENCH_BUILD:-$PWD/.build/release}
meishi=$build/meishi
bench=$build/meishi-bench
out=$PWD/bench-out
rm -rf "$out"; mkdir -p "$out"
count=${BENCH_CONTACTS:-100000}
budget=1.0   # seconds each in-process measurement of meishi-bench runs
if [ "$quick" = 1 ]; then
  count=${BENCH_CONTACTS:-200}; budget=0.02
  export BENCH_VCARDS=${BENCH_VCARDS:-40} BENCH_VCARD_FILES=${BENCH_VCARD_FILES:-8}
fi
# runs N: N, or 2 in quick mode; warmup N likewise with 0
runs() { if [ "$quick" = 1 ]; then echo 2; else echo "$1"; fi; }
warmup() { if [ "$quick" = 1 ]; then echo 0; else echo "$1"; fi; }
# The namespace parts hold the machine-wide lock the tests' namespaces hold
# (NamespaceExchangeTests.lockNamespaces): two runs of one prefix would tear down each other's hosts.
lock_namespaces() { exec 9>/tmp/meishi-netns.lock; flock 9; }
unlock_namespaces() { flock -u 9; exec 9>&-; }

now_ns() { date +%s%N; }
# median wall time in ms of N runs of a command (hyperfine, no shell in between)
median_ms() {
  local n; n=$(runs "$1"); shift
  local cmd; cmd=$(printf '%q ' "$@")
  hyperfine -N --warmup "$(warmup 2)" --runs "$n" --export-json "$out/hf.json" "$cmd" >/dev/null 2>&1
  python3 -c 'import json,sys; print("%.2f" % (json.load(open(sys.argv[1]))["results"][0]["median"]*1000))' "$out/hf.json"
}

# the same for a command that may exit non-zero (meishi scan of an image without a code)
median_ms_any() {
  local n; n=$(runs "$1"); shift
  local cmd; cmd=$(printf '%q ' "$@")
  hyperfine -N -i --warmup "$(warmup 1)" --runs "$n" --export-json "$out/hf.json" "$cmd" >/dev/null 2>&1
  python3 -c 'import json,sys; print("%.2f" % (json.load(open(sys.argv[1]))["results"][0]["median"]*1000))' "$out/hf.json"
}

echo "meishi bench — $(uname -m), $(nproc) cores, libsodium $(pkg-config --modversion libsodium), sqlite $(sqlite3 --version | cut -d' ' -f1)"
echo
if [ "$only" = all ] || [ "$only" = startup ]; then
echo "## Start-up: meishi next to qrencode -t ANSIUTF8 on the same text, in one hyperfine run"
# The machine may be busy: the three commands alternate in one run, so compare the ratios.
shome=$out/startup-home
"$meishi" --home "$shome" init >/dev/null
"$meishi" --home "$shome" card set name Mei >/dev/null
stext=$("$meishi" --home "$shome" card qr --format text)
hyperfine -N --warmup "$(warmup 5)" --runs "$(runs 50)" --export-json "$out/startup.json" \
  "$(printf '%q ' qrencode -t ANSIUTF8 "$stext")" \
  "$(printf '%q ' "$meishi" --version)" \
  "$(printf '%q ' "$meishi" --home "$shome" card qr --format terminal)" \
  "$(printf '%q ' /bin/true)" >/dev/null 2>&1
python3 - "$out/startup.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
names = ["qrencode -t ANSIUTF8 (same text)", "meishi --version", "meishi card qr", "/bin/true (process floor)"]
q = r[0]["median"]
for name, x in zip(names, r):
    print("%-34s median %6.2f ms  user %5.2f ms  system %5.2f ms  %5.2f x qrencode%s" % (
        name, x["median"] * 1000, x["user"] * 1000, x["system"] * 1000, x["median"] / q,
        "   (target: <= 2)" if name.startswith("meishi") else ""))
PY
if perf stat -e page-faults true >/dev/null 2>&1; then
  faults() { perf stat -x, -e page-faults "$@" 2>&1 >/dev/null | awk -F, '/page-faults/ {print $1}'; }
  echo "page faults: qrencode $(faults qrencode -t ANSIUTF8 "$stext"), meishi --version $(faults "$meishi" --version)," \
    "meishi card qr $(faults "$meishi" --home "$shome" card qr --format terminal)"
fi
echo "dynamic loader: $(LD_DEBUG=statistics "$meishi" --version 2>&1 >/dev/null | grep -E 'relative relocations' | head -1 | sed 's/^[^:]*:[[:space:]]*//')," \
  "$(LD_DEBUG=statistics "$meishi" --version 2>&1 >/dev/null | grep -E 'number of relocations:' | head -1 | sed 's/^[^:]*:[[:space:]]*//')"
echo "shared objects loaded: meishi $(LD_DEBUG=files "$meishi" --version 2>&1 >/dev/null | grep -c 'calling init:'), qrencode $(LD_DEBUG=files qrencode -t ANSIUTF8 "$stext" 2>&1 >/dev/null | grep -c 'calling init:')"
# Instructions do not depend on how busy the machine is. valgrind cannot read the toolchain's
# debug information, so it runs a copy without it.
if command -v valgrind >/dev/null; then
  strip --strip-debug -o "$out/meishi-nodebug" "$meishi"
  instructions() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | awk '/refs:/ {gsub(",", "", $NF); printf "%.1fM", $NF / 1e6}'; }
  echo "instructions (callgrind): qrencode $(instructions qrencode -t ANSIUTF8 "$stext"), meishi --version $(instructions "$out/meishi-nodebug" --version)," \
    "meishi card qr $(instructions "$out/meishi-nodebug" --home "$shome" card qr --format terminal)"
fi
echo "binary: $(du -b "$meishi" | cut -f1) bytes;$(size -A "$meishi" | awk '$1 ~ /^\.(text|rodata|eh_frame|data\.rel\.ro|rela\.dyn|relr\.dyn|debug_info)$/ {printf " %s %.2f MB", $1, $2 / 1048576}')"
if [ "$only" = startup ]; then
  mkdir -p "$out/home"
  "$bench" store "$out/home" "$count" "$out/rows.sql" >/dev/null
  "$meishi" --home "$out/home" init >/dev/null   # commands refuse a home without an identity
  echo "contacts list --limit 50 of $count contacts  median $(median_ms 15 "$meishi" --home "$out/home" contacts list --limit 50) ms   (target: < 10 ms)"
  command -v valgrind >/dev/null && echo "contacts list instructions (callgrind): $(instructions "$out/meishi-nodebug" --home "$out/home" contacts list --limit 50)"
  exit 0
fi
echo
fi
if [ "$only" = all ]; then
echo "## Signatures (in process, release build)"
"$bench" crypto "$budget"
echo
echo "## CPace, ristretto255 + SHA-512 (in process, release build; used by exchange --code)"
"$bench" cpace "$budget"
echo
echo "## Contact store: $count contacts"
mkdir -p "$out/home"
"$bench" store "$out/home" "$count" "$out/rows.sql" | tee "$out/insert.txt"
"$meishi" --home "$out/home" init >/dev/null   # commands refuse a home without an identity
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
# Rows a little past the middle and three quarters in (54321 and 77777 of 100,000).
show_ms=$(median_ms 15 "$meishi" --home "$out/home" contacts show $(( count * 54321 / 100000 )))
show_did=$(sqlite3 "$out/home/meishi.sqlite" "select did from contact where id=$(( count * 77777 / 100000 ))")
showdid_ms=$(median_ms 15 "$meishi" --home "$out/home" contacts show "$show_did")
search_ms=$(median_ms 15 "$meishi" --home "$out/home" contacts list --search "user$(( count - 1 ))@" --limit 50)
echo "contacts list --limit 50     median $list_ms ms   (target: < 10 ms)"
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
    "$py" "$qrkit" gen --payloads "$out/payloads.json" --out "$out/segno-set" --n "$([ "$quick" = 1 ] && echo 4 || echo 140)" --seed 7 --generators segno >"$out/gen.log" 2>&1 || cat "$out/gen.log"
    # Perspective on its own: the distortion zbar's finder handles worst.
    "$py" "$qrkit" gen --payloads "$out/payloads.json" --out "$out/perspective-set" --n "$([ "$quick" = 1 ] && echo 2 || echo 40)" --seed 11 --generators segno,qrcode \
      --categories perspective >>"$out/gen.log" 2>&1 || cat "$out/gen.log"
    sets=("$out/segno-set" "$out/perspective-set")
    # Quick mode reads the generated sets only: the shared corpus is 600 images.
    [ -d ../shared/corpus/qr ] && [ "$quick" != 1 ] && sets+=(../shared/corpus/qr/*/)
    "$py" "$qrkit" eval --decoder "$dec_meishi" --decoders zbarimg,zxingcpp --sets "${sets[@]}" \
      --json "$out/scan.json" --md "$out/scan.md" > "$out/scan.log" 2>&1 || true
    "$py" scripts/bench-qr.py report "$out/scan.json" "${sets[@]}"
    # The same images in one process: what meishi spends on an image once started.
    find "${sets[@]}" -maxdepth 1 -type f \( -name '*.png' -o -name '*.jpg' -o -name '*.jpeg' -o -name '*.pgm' -o -name '*.ppm' \) -print0 \
      | sort -z | xargs -0 "$bench" scan > "$out/inprocess.jsonl"
    "$py" scripts/bench-qr.py inprocess "$out/inprocess.jsonl" "$out/scan.json"
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
  nocode_inprocess=$("$bench" scan $(printf "$out/nocode.jpg %.0s" $(seq "$(runs 9)")) | "$py" scripts/bench-qr.py median-ms)
  echo "12-megapixel photo with no code: meishi scan median $nocode_meishi ms (target: <= 150 ms; in process $nocode_inprocess ms), zbarimg $nocode_zbar ms"
else
  echo
  echo "(.venv without zxing-cpp/segno/opencv/pillow: QR scan comparison skipped; run make bench)"
fi

echo
fi
[ "$only" = qr ] && exit 0
if [ "$only" = all ] || [ "$only" = psi ]; then
echo "## Common friends: two 'meishi exchange --code' processes on loopback, 10 % overlap (load now: $(cut -d' ' -f1-3 /proc/loadavg))"
"$bench" psi "$budget" | tee "$out/psi-prim.txt" | grep -v '^floor-us'
read -r h_us m_us < <(awk '/^floor-us/ {print $2, $3}' "$out/psi-prim.txt")
cores=$(nproc)
py=$PWD/.venv/bin/python
have_om=no; [ -x "$py" ] && "$py" -c 'import private_set_intersection.python' 2>/dev/null && have_om=yes
printf '%-13s %-9s %9s %9s %9s %11s %11s   %s\n' shape mode "wall ms" "+PSI ms" "phase ms" "sent B" "recv B" "common"
shapes=("1000 1000 3" "100 10000 3" "10000 10000 1")
[ "$quick" = 1 ] && shapes=("20 40 1")
for shape in "${shapes[@]}"; do
  read -r na nb runs <<< "$shape"
  common=$(( (na < nb ? na : nb) / 10 ))
  ph=$out/psi-$na-$nb; rm -rf "$ph"; mkdir -p "$ph"
  "$meishi" --home "$ph/a" init >/dev/null; "$meishi" --home "$ph/a" card set name "Mei Tanaka" >/dev/null
  "$meishi" --home "$ph/b" init >/dev/null; "$meishi" --home "$ph/b" card set name "Ken Sato" >/dev/null
  "$bench" friends "$ph/a" 0 "$na"
  "$bench" friends "$ph/b" $(( na - common )) "$nb"
  base=""
  for mode in off hash ecdh verified; do
    for i in $(seq "$runs"); do
      t0=$(now_ns)
      "$meishi" --home "$ph/a" exchange --listen --port 47902 --code 9-bench-friends --friends "$mode" --json --timeout 120 > "$ph/a.json" 2>/dev/null &
      "$meishi" --home "$ph/b" exchange --peer 127.0.0.1:47902 --code 9-bench-friends --friends "$mode" --json --timeout 120 > "$ph/b.json" 2>/dev/null
      wait $!   # the listening side failing fails the bench (it would rot unseen)
      echo "$(( ($(now_ns) - t0) / 1000 )) $(python3 -c '
import json, sys
a, b = (json.load(open(p)).get("commonFriends") or {} for p in sys.argv[1:3])
print(max(a.get("seconds", 0), b.get("seconds", 0)) * 1000, a.get("bytesSent", 0), b.get("bytesSent", 0), len(a.get("friends", [])), len(b.get("friends", [])))
' "$ph/a.json" "$ph/b.json")"
    done | sort -n | awk -v r="$runs" 'NR == int((r + 1) / 2) {print}' > "$ph/$mode.txt"
    read -r wall_us phase_ms sent_a sent_b fa fb < "$ph/$mode.txt"
    wall=$(awk -v u="$wall_us" 'BEGIN {printf "%.0f", u / 1000}')
    [ "$mode" = off ] && base=$wall
    printf '%-13s %-9s %9s %9s %9.0f %11s %11s   %s/%s (expected %s)\n' "$na x $nb" "$mode" "$wall" \
      "$(( wall - base ))" "$phase_ms" "$sent_a" "$sent_b" "$fa" "$fb" "$common"
  done
  if [ "$have_om" = yes ]; then
    read -r _ _ om_s om_bytes om_found < <("$py" scripts/bench-psi.py "$na" "$nb" "$common" "$runs")
    printf '%-13s %-9s %9.0f %9s %9s %11s %11s   %s (client only)\n' "$na x $nb" openmined "$(awk -v s="$om_s" 'BEGIN {print s * 1000}')" - - "$om_bytes" - "$om_found"
  fi
  # The floor: libsodium's cost of what each side must do (n hash-to-group + n + m scalar
  # multiplications), both sides, divided by the cores.
  awk -v a="$na" -v b="$nb" -v h="$h_us" -v m="$m_us" -v c="$cores" \
    'BEGIN {printf "%-13s %-9s %9.0f ms  (both sides: %d hash-to-group, %d scalar mult; / %d cores); after the code is compared (own set blinded meanwhile): %.0f ms\n", a " x " b, "floor", ((a + b) * h + 2 * (a + b) * m) / 1000 / c, a + b, 2 * (a + b), c, (a > b ? a : b) * m / 1000}'
done
echo "(wall: both processes started -> both done, median; +PSI: wall minus --friends off; phase: the slower side's phase;"
echo " sent: bytes each side put on the wire for the phase, frames and seals included; OpenMined: one process, setup + request + response)"
echo "targets: ecdh 10,000 x 10,000 <= half of OpenMined's time and <= 1.3x the floor; hash 10,000 x 10,000 <= 100 ms"
echo
[ "$only" = psi ] && exit 0
fi
if [ "$only" = all ] || [ "$only" = table ]; then
echo "## Table: N hosts in namespaces run 'meishi exchange --table CODE --expect N' -> every host stored the other N-1"
# Timed from the moment the last host is started to the moment the last host exits (it exits once
# it stored the others: --expect N), so process exit is included. CPU is user+sys of each host's
# process (/usr/bin/time), summed over the hosts and the largest one.
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null && [ -x /usr/bin/time ]; then
  if [ "$quick" = 1 ]; then sizes=(3); tableruns=1; else sizes=(4 8 12); tableruns=3; fi
  thome=$out/table
  largest=${sizes[$((${#sizes[@]} - 1))]}
  for i in $(seq "$largest"); do
    "$meishi" --home "$thome/h$i" init >/dev/null; "$meishi" --home "$thome/h$i" card set name "Person $i" >/dev/null
  done
  lock_namespaces
  # The machine's load beside the figures: on a shared machine they mean little without it.
  echo "load before: $(uptime)"
  for n in "${sizes[@]}"; do
    scripts/netns.sh down mbt "$n"; scripts/netns.sh up mbt "$n"
    walls=(); cpus=(); peaks=()
    for r in $(seq "$tableruns"); do
      for i in $(seq "$n"); do rm -f "$thome/h$i"/meishi.sqlite*; done
      pids=()
      for i in $(seq "$n"); do
        /usr/bin/time -f "%U %S" -o "$thome/cpu-$n-$r-$i" ip netns exec "mbt$i" "$meishi" --home "$thome/h$i" exchange \
          --table "$((n + r))-bench-table" --expect "$n" --timeout 60 --json >"$thome/out-$n-$r-$i.json" 2>/dev/null & pids+=($!)
        [ "$i" = "$n" ] && t0=$(now_ns)
      done
      for p in "${pids[@]}"; do wait "$p" || true; done
      walls+=($(( ($(now_ns) - t0) / 1000000 )))
      for i in $(seq "$n"); do
        if ! grep -q '"ended": "expected"' "$thome/out-$n-$r-$i.json"; then
          echo "table of $n, run $r: host $i did not store the others"; cat "$thome/out-$n-$r-$i.json"
          scripts/netns.sh down mbt "$n"; unlock_namespaces; exit 1
        fi
      done
      cpus+=($(cat "$thome"/cpu-$n-$r-* | awk '{s += $1 + $2} END {printf "%.2f", s}'))
      peaks+=($(cat "$thome"/cpu-$n-$r-* | awk '{c = $1 + $2; if (c > m) m = c} END {printf "%.2f", m}'))
    done
    scripts/netns.sh down mbt "$n"
    median=$(printf '%s\n' "${walls[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    target=""; [ "$n" = 8 ] && target=" (target: <= 2000)"
    echo "table of $n: last start -> all stored and exited  median $median ms over $tableruns runs$target (all: ${walls[*]} ms); CPU s summed over hosts: ${cpus[*]}; largest host: ${peaks[*]}"
  done
  echo "load after: $(uptime)"
  unlock_namespaces
else
  echo "(not root, or no /usr/bin/time: the table runs are skipped)"
fi
echo
fi
[ "$only" = table ] && exit 0
if [ "$only" != messages ]; then
echo "## Exchange: both 'meishi exchange --yes' started -> both cards saved, vs magic-wormhole"
runs=$(runs 7)
ehome=$out/exchange
"$meishi" --home "$ehome/a" init >/dev/null; "$meishi" --home "$ehome/a" card set name "Mei Tanaka" >/dev/null
"$meishi" --home "$ehome/b" init >/dev/null; "$meishi" --home "$ehome/b" card set name "Ken Sato" >/dev/null
median_of() { sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]}'; }
for i in $(seq $runs); do
  t0=$(now_ns)
  "$meishi" --home "$ehome/a" exchange --listen --port 47901 --yes --timeout 20 >/dev/null 2>&1 &
  "$meishi" --home "$ehome/b" exchange --peer 127.0.0.1:47901 --yes --timeout 20 >/dev/null 2>&1
  wait $!
  echo $(( ($(now_ns) - t0) / 1000 ))
done | awk '{print $1/1000}' | median_of > "$out/ex-loop.txt"
echo "meishi, loopback (--listen / --peer)                 median $(cat "$out/ex-loop.txt") ms over $runs"
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null; then
  lock_namespaces
  scripts/netns.sh down mbx 2; scripts/netns.sh up mbx 2
  # Each side started inside its namespace by a helper waiting there (scripts/bench-pair.py):
  # from "go" to the later exit, neither `ip netns exec` (3 ms a side) nor a shell's fork of
  # `date` counted. The earlier figure, with both, follows for comparison.
  pair() {
    python3 scripts/bench-pair.py "$1" mbx1 mbx2 -- "$meishi" --home "$ehome/a" exchange --yes --timeout 20 "${@:2}" \
      -- "$meishi" --home "$ehome/b" exchange --yes --timeout 20 "${@:2}" 2>/dev/null
  }
  coded=$(pair "$(runs 21)" --code 7-bench-anchor); read -r pc pc1 pc3 <<< "$coded"
  plain=$(pair "$runs"); read -r pn _ _ <<< "$plain"
  for i in $(seq $runs); do
    t0=$(now_ns)
    ip netns exec mbx1 "$meishi" --home "$ehome/a" exchange --yes --timeout 20 --code 7-bench-anchor >/dev/null 2>&1 &
    ip netns exec mbx2 "$meishi" --home "$ehome/b" exchange --yes --timeout 20 --code 7-bench-anchor >/dev/null 2>&1
    wait $!
    echo $(( ($(now_ns) - t0) / 1000 ))
  done | awk '{print $1/1000}' | median_of > "$out/ex-ns-wrapped.txt"
  echo "$pc" > "$out/ex-ns-code.txt"
  scripts/netns.sh down mbx 2
  unlock_namespaces
  echo "meishi, two namespaces, multicast with --code (PAKE, met)   median $pc ms (quartiles $pc1-$pc3) over $(runs 21) (target: <= 25, issue 23)"
  echo "  the same with 'ip netns exec' and a shell's date around each   median $(cat "$out/ex-ns-wrapped.txt") ms over $runs (the figure until issue 23's last round)"
  echo "meishi, two namespaces, multicast, 6-digit path (--yes)    median $pn ms over $runs (includes the 1 s window that makes sure only one peer is there)"
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
# Issue 25: `exchange --code --relay` through a local mailbox server and transit relay, next to
# `wormhole send --text` (600 bytes) through the same servers, interleaved run by run. Three
# namespaces on one bridge: A and B isolated from each other (an access point's client
# isolation), both reaching C, which runs the servers.
if [ -x "$PWD/.venv/bin/wormhole" ] && [ "$(id -u)" = 0 ] && command -v ip >/dev/null && command -v bridge >/dev/null; then
  echo "## Exchange through magic-wormhole's servers (--relay), A and B isolated, servers on C, vs wormhole send"
  runs=$(runs 7)
  v=$PWD/.venv/bin
  rdir=$out/relay; mkdir -p "$rdir"
  lock_namespaces
  scripts/netns.sh down rlb 3; scripts/netns.sh up rlb 3
  bridge link set dev rlbp1 isolated on; bridge link set dev rlbp2 isolated on
  (cd "$rdir" && exec ip netns exec rlb3 "$v/twist" wormhole-mailbox --port=tcp:4000 --usage-db=usage.sqlite >"$rdir/mailbox.log" 2>&1) & rmpid=$!
  (cd "$rdir" && exec ip netns exec rlb3 "$v/twist" transitrelay --port=tcp:4001 >"$rdir/transit.log" 2>&1) & rtpid=$!
  # Ready when each says it listens.
  for _ in $(seq 600); do
    grep -q "starting on 4000" "$rdir/mailbox.log" 2>/dev/null && grep -q "starting on 4001" "$rdir/transit.log" 2>/dev/null && break
    sleep 0.1
  done
  relay=(--relay ws://10.147.0.3:4000/v1 --transit tcp:10.147.0.3:4001)
  w=("$v/wormhole" --relay-url ws://10.147.0.3:4000/v1 --transit-helper tcp:10.147.0.3:4001)
  text=$(head -c 450 /dev/urandom | base64 -w0 | head -c 600)
  : > "$rdir/meishi.txt"; : > "$rdir/wormhole.txt"
  for i in $(seq $runs); do
    t0=$(now_ns)
    ip netns exec rlb1 "$meishi" --home "$ehome/a" exchange --yes --timeout 30 --code "$((100 + i))-bench-anchor" "${relay[@]}" >/dev/null 2>&1 &
    ip netns exec rlb2 "$meishi" --home "$ehome/b" exchange --yes --timeout 30 --code "$((100 + i))-bench-anchor" "${relay[@]}" >/dev/null 2>&1 || true
    wait $! || true
    echo $(( ($(now_ns) - t0) / 1000 )) | awk '{print $1/1000}' >> "$rdir/meishi.txt"
    t0=$(now_ns)
    ip netns exec rlb1 "${w[@]}" send --code "$((200 + i))-bench-crossover" --text "$text" >/dev/null 2>&1 &
    ip netns exec rlb2 "${w[@]}" receive --accept-file "$((200 + i))-bench-crossover" > "$rdir/recv.txt" 2>/dev/null || true
    wait $! || true
    echo $(( ($(now_ns) - t0) / 1000 )) | awk '{print $1/1000}' >> "$rdir/wormhole.txt"
  done
  kill "$rmpid" "$rtpid" 2>/dev/null || true
  wait "$rmpid" "$rtpid" 2>/dev/null || true
  scripts/netns.sh down rlb 3
  unlock_namespaces
  rm=$(median_of < "$rdir/meishi.txt"); rw=$(median_of < "$rdir/wormhole.txt")
  echo "meishi exchange --code --relay (both started -> both saved)   median $rm ms over $runs"
  echo "wormhole send --text 600 B / receive, same servers             median $rw ms over $runs"
  awk -v m="$rm" -v w="$rw" 'BEGIN {printf "ratio meishi --relay / wormhole  %.3f   (target: <= 0.5)\n", m/w}'
else
  echo "(--relay comparison skipped: needs root, iproute2 and magic-wormhole with its servers in .venv)"
fi

echo
scripts/bench-vcard.sh "$meishi"
fi

echo
echo "## Messages: 'meishi send' started -> \"delivered\" (handshake, envelope, acknowledgement)"
mhome=$out/messages
for p in a b; do "$meishi" --home "$mhome/$p" init >/dev/null; done
"$meishi" --home "$mhome/a" card set name "Mei Tanaka" >/dev/null
"$meishi" --home "$mhome/b" card set name "Ken Sato" >/dev/null
"$meishi" --home "$mhome/a" card export -o "$mhome/a.json" 2>/dev/null
"$meishi" --home "$mhome/b" card export -o "$mhome/b.json" 2>/dev/null
"$meishi" --home "$mhome/a" contacts add "$mhome/b.json" >/dev/null
"$meishi" --home "$mhome/b" contacts add "$mhome/a.json" >/dev/null
"$meishi" --home "$mhome/b" listen --port 47921 --for 600 >/dev/null 2>"$mhome/listen.log" & lpid=$!
sleep 0.5
echo "send --peer, loopback                        median $(median_ms 20 "$meishi" --home "$mhome/a" send Ken "bench note" --peer 127.0.0.1:47921 --timeout 5) ms over $(runs 20)"
if [ "$quick" = 1 ]; then messages=(20 2); else messages=(2000 8); fi
echo "through one listen (in process, loopback)    $("$bench" messages "$mhome/a" Ken 47921 "${messages[@]}")"
kill $lpid 2>/dev/null || true; wait $lpid 2>/dev/null || true
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null; then
  lock_namespaces
  scripts/netns.sh down mbm 2; scripts/netns.sh up mbm 2
  ip netns exec mbm1 "$meishi" --home "$mhome/b" listen --for 600 >/dev/null 2>"$mhome/listen-ns.log" & lpid=$!
  sleep 0.5
  echo "send (multicast probe), two namespaces       median $(median_ms 20 ip netns exec mbm2 "$meishi" --home "$mhome/a" send Ken "bench note" --timeout 5) ms over $(runs 20) (target: <= 250)"
  echo "send --peer 10.147.0.1, two namespaces       median $(median_ms 20 ip netns exec mbm2 "$meishi" --home "$mhome/a" send Ken "bench note" --peer 10.147.0.1 --timeout 5) ms over $(runs 20)"
  echo "ip netns exec /bin/true (the wrapper's cost) median $(median_ms 20 ip netns exec mbm2 /bin/true) ms over $(runs 20)"
  kill $lpid 2>/dev/null || true; wait $lpid 2>/dev/null || true
  scripts/netns.sh down mbm 2
  unlock_namespaces
else
  echo "(not root: the namespace runs are skipped)"
fi

echo
echo "## Card push: 'meishi card push' to N contacts listening, each in its own namespace (total time), then key rotations reaching them"
# Every contact listens on its own host (one listener per port and probe group); Mei pushes from
# another. Each run signs a newer card (a second apart: the listener takes only a newer one),
# and counts as done when every contact reported "delivered".
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null; then
  if [ "$quick" = 1 ]; then pushed=3; pushruns=1; else pushed=20; pushruns=5; fi
  phome=$out/push
  "$meishi" --home "$phome/mei" init >/dev/null
  "$meishi" --home "$phome/mei" card set name "Mei Tanaka" >/dev/null
  "$meishi" --home "$phome/mei" card export -o "$phome/mei.json" 2>/dev/null
  refs=()
  for i in $(seq "$pushed"); do
    "$meishi" --home "$phome/c$i" init >/dev/null
    "$meishi" --home "$phome/c$i" card set name "Contact $i" >/dev/null
    "$meishi" --home "$phome/c$i" card export -o "$phome/c$i.json" 2>/dev/null
    "$meishi" --home "$phome/c$i" contacts add "$phome/mei.json" >/dev/null
    "$meishi" --home "$phome/mei" contacts add "$phome/c$i.json" >/dev/null
    refs+=("$i")
  done
  lock_namespaces
  hosts=$((pushed + 1))
  scripts/netns.sh down mbp "$hosts"; scripts/netns.sh up mbp "$hosts"
  lpids=()
  # A run that did not reach every contact: what it printed, then the listeners and hosts go.
  push_failed() {
    echo "$1"; cat "$2"
    for p in "${lpids[@]}"; do kill "$p" 2>/dev/null || true; done
    scripts/netns.sh down mbp "$hosts"; unlock_namespaces
    exit 1
  }
  for i in $(seq "$pushed"); do
    ip netns exec "mbp$i" "$meishi" --home "$phome/c$i" listen --for 600 >/dev/null 2>"$phome/listen-$i.log" & lpids+=($!)
  done
  sleep 1
  times=()
  for r in $(seq "$pushruns"); do
    sleep 1
    "$meishi" --home "$phome/mei" card set title "Title $r" >/dev/null
    start=$(now_ns)
    ip netns exec "mbp$hosts" "$meishi" --home "$phome/mei" card push "${refs[@]}" --timeout 10 >"$phome/push-$r.txt" 2>&1 || true
    end=$(now_ns)
    delivered=$(grep -c '^delivered to' "$phome/push-$r.txt" || true)
    [ "$delivered" = "$pushed" ] || push_failed "card push run $r: $delivered of $pushed delivered" "$phome/push-$r.txt"
    times+=($(( (end - start) / 1000000 )))
  done
  # Key rotation (issue 26): each run replaces Mei's keys ('id rotate') and pushes the statements
  # with her card under the key the contacts hold; done when every contact moved to the new key.
  rtimes=()
  for r in $(seq "$pushruns"); do
    sleep 1
    "$meishi" --home "$phome/mei" id rotate --yes >/dev/null 2>&1
    start=$(now_ns)
    ip netns exec "mbp$hosts" "$meishi" --home "$phome/mei" card push "${refs[@]}" --timeout 10 >"$phome/rotate-$r.txt" 2>&1 || true
    end=$(now_ns)
    delivered=$(grep -c '^delivered to' "$phome/rotate-$r.txt" || true)
    moved=$(cat "$phome"/listen-*.log | grep -c "moved to a new key" || true)
    if [ "$delivered" != "$pushed" ] || [ "$moved" != $((pushed * r)) ]; then
      push_failed "rotation run $r: $delivered of $pushed delivered, $moved moves logged" "$phome/rotate-$r.txt"
    fi
    rtimes+=($(( (end - start) / 1000000 )))
  done
  for p in "${lpids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  scripts/netns.sh down mbp "$hosts"
  unlock_namespaces
  median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "card push to $pushed listening contacts        median $median ms over $pushruns runs (all: ${times[*]} ms; each run: probe, handshake and card per contact, at once)"
  rmedian=$(printf '%s\n' "${rtimes[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "rotation reaching $pushed listening contacts     median $rmedian ms over $pushruns runs (all: ${rtimes[*]} ms; each run: 'id rotate', then 'card push' of the statements and card under the old key, every contact moved)"
else
  echo "(not root: the card push run is skipped)"
fi
