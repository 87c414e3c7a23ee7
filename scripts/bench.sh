#!/usr/bin/env bash
# make bench: speed on this machine, with the reference tools measured in the same run.
# Targets are reported, never asserted.
set -euo pipefail
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

echo "meishi bench — $(uname -m), $(nproc) cores, libsodium $(pkg-config --modversion libsodium), sqlite $(sqlite3 --version | cut -d' ' -f1)"
echo
echo "## Signatures (in process, release build)"
"$bench" crypto 1.0
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
