#!/usr/bin/env bash
# The figures of issue 22's "also measured": what each attack of tools/exchange-attacks.py costs an
# honest exchange. One line per run: attack, outcome (exit statuses), time to pair or to fail.
#   scripts/attack-figures.sh [BINARY] [ATTACK...]   attacks: idle hellos alias sessions (default all)
# idle and hellos run on loopback; alias and sessions need root and network namespaces
# (scripts/netns.sh, hosts mfg1..3). Timings, not assertions: the tests assert the outcomes.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/.build/debug/meishi}
shift || true
attacks=${*:-idle hellos alias sessions}
tool="python3 $root/tools/exchange-attacks.py"
work=$(mktemp -d)
trap 'rm -rf "$work"; "$root/scripts/netns.sh" down mfg 3 >/dev/null 2>&1' EXIT

person() {  # person DIR NAME EMAIL: a home with a card
  mkdir -p "$1"
  "$bin" --home "$1" init >/dev/null 2>&1
  "$bin" --home "$1" card set name "$2" >/dev/null
  "$bin" --home "$1" card add email "$3" >/dev/null
}
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc | xargs printf '%.1f'; }

listener_port() {  # waits for "port N" in $1, prints N
  for _ in $(seq 100); do
    p=$(grep -o 'port [0-9]*' "$1" 2>/dev/null | head -1 | cut -d' ' -f2)
    [ -n "$p" ] && { echo "$p"; return; }
    sleep 0.1
  done
}

idle() {  # idle K: K idle connections (4 per source address) while Ken dials Mei's --listen --code
  k=$1
  rm -rf "$work/mei" "$work/ken"; person "$work/mei" "Mei Tanaka" mei@example.org; person "$work/ken" "Ken Sato" ken@example.org
  "$bin" --home "$work/mei" exchange --listen --port 0 --code 7-secret-words --yes --json --timeout 60 >/dev/null 2>"$work/l.err" &
  lpid=$!
  port=$(listener_port "$work/l.err")
  sources=$(seq -s, -f '127.0.0.%g' 10 $((10 + (k + 3) / 4 - 1)))
  $tool idle --port "$port" --count "$k" --sources "$sources" --seconds 40 >"$work/a.out" 2>&1 &
  apid=$!
  sleep 0.5
  t=$(now)
  "$bin" --home "$work/ken" exchange --peer "127.0.0.1:$port" --code 7-secret-words --yes --json >/dev/null 2>"$work/d.err"
  d=$?
  took=$(since "$t")
  wait $lpid; l=$?
  kill $apid 2>/dev/null; wait $apid 2>/dev/null
  echo "idle k=$k: dialer exit $d, listener exit $l, ${took} s ($(tail -1 "$work/d.err"))"
}

hellos() {  # three PAKE HELLOs against --listen --code, then an honest dialer
  rm -rf "$work/mei" "$work/ken"; person "$work/mei" "Mei Tanaka" mei@example.org; person "$work/ken" "Ken Sato" ken@example.org
  t=$(now)
  "$bin" --home "$work/mei" exchange --listen --port 0 --code 7-secret-words --yes --json --timeout 30 >/dev/null 2>"$work/l.err" &
  lpid=$!
  port=$(listener_port "$work/l.err")
  $tool hellos --port "$port" --count 3 >"$work/a.out"
  sleep 0.3
  "$bin" --home "$work/ken" exchange --peer "127.0.0.1:$port" --code 7-secret-words --yes --json --timeout 10 >/dev/null 2>"$work/d.err"
  d=$?
  wait $lpid; l=$?
  echo "hellos: $(cat "$work/a.out"); listener exit $l, honest dialer exit $d ($(grep -c 'tries used' "$work/l.err") tries reported)"
}

ns() { ip netns exec "$@"; }
# Namespace tests and this script take the same machine-wide lock (NamespaceExchangeTests).
namespaces_locked=
lock_namespaces() {
  [ -n "$namespaces_locked" ] && return
  exec 9>/tmp/meishi-netns.lock
  flock -w 600 9 || { echo "the namespace lock stayed taken" >&2; exit 75; }
  namespaces_locked=1
}

alias_attack() {  # a forged announcement with the honest alias; both honest sides without a code
  lock_namespaces
  "$root/scripts/netns.sh" down mfg 3 >/dev/null 2>&1; "$root/scripts/netns.sh" up mfg 3
  rm -rf "$work/mei" "$work/ken"; person "$work/mei" "Mei Tanaka" mei@example.org; person "$work/ken" "Ken Sato" ken@example.org
  ip netns exec mfg3 $tool alias --interface-address 10.147.0.3 --seconds 20 >"$work/a.out" &
  apid=$!
  sleep 0.5
  t=$(now)
  ns mfg1 "$bin" --home "$work/mei" exchange --alias Mei --yes --json --timeout 20 >/dev/null 2>"$work/m.err" &
  m=$!
  sleep 0.2
  ns mfg2 "$bin" --home "$work/ken" exchange --alias Ken --yes --json --timeout 20 >/dev/null 2>"$work/k.err"
  k=$?
  wait $m; ms=$?
  took=$(since "$t")
  kill $apid 2>/dev/null; wait $apid 2>/dev/null
  echo "alias: $(cat "$work/a.out"); Mei exit $ms, Ken exit $k, ${took} s ($(tail -1 "$work/k.err"))"; cat "$work/m.err" "$work/k.err" >"${ALIAS_LOG:-/dev/null}"
}

sessions() {  # sessions IDS ADDRESSES: forged session ids with the code's number, a --code pair
  ids=$1 addresses=$2
  lock_namespaces
  "$root/scripts/netns.sh" down mfg 3 >/dev/null 2>&1; "$root/scripts/netns.sh" up mfg 3
  srcs=""
  for i in $(seq 100 $((100 + addresses - 1))); do ip -n mfg3 addr add "10.147.0.$i/24" dev mfgh3; srcs="$srcs,10.147.0.$i"; done
  rm -rf "$work/mei" "$work/ken"; person "$work/mei" "Mei Tanaka" mei@example.org; person "$work/ken" "Ken Sato" ken@example.org
  ip netns exec mfg3 $tool sessions --sources "${srcs#,}" --ids "$ids" --nameplate 42 --seconds 40 >"$work/a.out" &
  apid=$!
  sleep 1
  t=$(now)
  ns mfg1 "$bin" --home "$work/mei" exchange --code 42-tulip-anchor --yes --json --timeout 40 >/dev/null 2>"$work/m.err" &
  m=$!
  ns mfg2 "$bin" --home "$work/ken" exchange --code 42-tulip-anchor --yes --json --timeout 40 >/dev/null 2>"$work/k.err"
  k=$?
  wait $m; ms=$?
  took=$(since "$t")
  kill $apid 2>/dev/null; wait $apid
  echo "sessions: $(cat "$work/a.out"); Mei exit $ms, Ken exit $k, ${took} s ($(tail -1 "$work/k.err"))"
}

for a in $attacks; do
  case $a in
    idle) for k in 4 7 8 16 64; do idle "$k"; done ;;
    hellos) hellos ;;
    alias) alias_attack ;;
    sessions) sessions 64 16; sessions 256 64; sessions 512 128 ;;
    *) echo "unknown attack $a" >&2; exit 64 ;;
  esac
done
