#!/usr/bin/env bash
# The main job end to end on throwaway identities: two people make cards, exchange them over
# loopback, send a note, export, verify and store signed payloads, and print and scan a QR code.
# Everything happens in a temporary directory.
set -euo pipefail
meishi=${1:-.build/release/meishi}
meishi=$(cd "$(dirname "$meishi")" && pwd)/$(basename "$meishi")
work=$(mktemp -d "${TMPDIR:-/tmp}/meishi-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
mei="$meishi --home $work/mei"
ken="$meishi --home $work/ken"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "${*//$work/\$DEMO}"; "$@"; }

step "Mei and Ken each create an identity"
run $mei init
run $ken init

step "They fill in their cards (each value has a disclosure level)"
run $mei card set name "Mei Tanaka"
run $mei card set title "Staff Engineer"
run $mei card set org "Example Robotics"
run $mei card add email mei.tanaka@example.org
run $mei card add phone "+81 90 1234 5678"
run $mei card add url https://example.org/mei
run $mei card set address "1-2-3 Shibuya, Tokyo" --level personal
run $ken card set name "Ken Sato"
run $ken card set org "Sato Design"
run $ken card add email ken@example.net
run $mei card show

step "They already hold cards of friends: Cleo and Dev are known to both, Eve only to Mei, Fay only to Ken"
for f in cleo dev eve fay; do
  $meishi --home "$work/$f" init >/dev/null
  $meishi --home "$work/$f" card set name "${f^} $(case $f in cleo) echo Park;; dev) echo Rao;; eve) echo Moss;; fay) echo Lin;; esac)" >/dev/null
  $meishi --home "$work/$f" card export -o "$work/$f.json" 2>/dev/null
done
for f in cleo dev eve; do run $mei contacts add "$work/$f.json" >/dev/null; done
for f in cleo dev fay; do run $ken contacts add "$work/$f.json" >/dev/null; done

step "The main job: they exchange cards over the network (here: loopback), authenticated by a code"
echo "(Mei's meishi makes up a code and prints it; Ken types it. The code drives a PAKE: no digits"
echo " to compare, a wrong code fails on both sides, and the contacts are stored as 'met'. Then both"
echo " machines compare their contacts privately and print the friends they share: Cleo and Dev.)"
# Mei listens with a fresh code; sets $port and $code.
start_listener() {
  printf '$ %s\n' "meishi --home \$DEMO/mei exchange --listen --port 0 --code &"
  : > "$work/mei-exchange.err"
  $mei exchange --listen --port 0 --code --timeout 30 > "$work/mei-exchange.out" 2> "$work/mei-exchange.err" &
  listener=$!
  port="" code=""
  for _ in $(seq 100); do
    port=$(grep -oE 'port [0-9]+' "$work/mei-exchange.err" 2>/dev/null | head -1 | awk '{print $2}' || true)
    code=$(grep -oE 'your code: [0-9]+-[a-z]+-[a-z]+' "$work/mei-exchange.err" 2>/dev/null | head -1 | awk '{print $3}' || true)
    [ -n "$port" ] && [ -n "$code" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "demo: the listener did not start" >&2; cat "$work/mei-exchange.err" >&2; exit 1; }
  sed 's/^/  /' "$work/mei-exchange.err"
}
start_listener
echo "(first Ken mistypes the code: nothing is stored, and both sides end at once saying so)"
if run $ken exchange --peer "127.0.0.1:$port" --code "$(echo "$code" | cut -d- -f1)-wrong-words"; then
  echo "demo: a wrong code paired!" >&2; exit 1
fi
if wait "$listener"; then echo "demo: Mei's side did not notice the wrong code" >&2; exit 1; fi
echo "(Mei's side:)"
grep -E "do not match" "$work/mei-exchange.err" | sed 's/^/  /'
echo "(Mei starts again with a new code, and Ken types it right)"
start_listener
run $ken exchange --peer "127.0.0.1:$port" --code "$code"
wait
echo "(Mei's side:)"
grep -E "tries used|codes match" "$work/mei-exchange.err" | sed 's/^/  /'
cat "$work/mei-exchange.out"
run $mei contacts list
run $mei friends
run $mei friends common Ken

step "A note after meeting: Ken listens, Mei sends it end to end encrypted (gone when it expires)"
printf '$ %s\n' "meishi --home \$DEMO/ken listen --port 0 --for 20 &"
$ken listen --port 0 --for 20 > /dev/null 2> "$work/ken-listen.err" &
listener=$! lport=""
for _ in $(seq 100); do
  lport=$(grep -oE 'port [0-9]+' "$work/ken-listen.err" 2>/dev/null | head -1 | awk '{print $2}' || true)
  [ -n "$lport" ] && break
  sleep 0.1
done
[ -n "$lport" ] || { echo "demo: the listener did not start" >&2; cat "$work/ken-listen.err" >&2; exit 1; }
sed 's/^/  /' "$work/ken-listen.err"
run $mei send Ken "great talk - slides at https://example.org/s" --peer "127.0.0.1:$lport" --ttl 1h
kill "$listener" 2>/dev/null; wait "$listener" 2>/dev/null || true
run $ken inbox

step "Each exports a signed card (professional level: no address)"
run $mei card export --level professional -o "$work/mei.json"
run $ken card export -o "$work/ken.json"
run cat "$work/mei.json"

step "Anyone can verify a card; a tampered one is refused"
run $ken verify "$work/mei.json"
sed 's/Mei Tanaka/Mei Tanako/' "$work/mei.json" > "$work/tampered.json"
if run $ken verify "$work/tampered.json"; then echo "demo: tampered card verified!" >&2; exit 1; fi

step "Storing a card from a file (already known from the exchange: unchanged)"
run $ken contacts add "$work/mei.json"
run $mei contacts add "$work/ken.json"
run $ken contacts list
run $ken contacts show mei
run $mei contacts list --json

step "QR fallback: Mei shows her card as a QR code, Ken scans a picture of it"
run $mei card qr --level public
run $mei card qr --level professional -o "$work/mei-qr.png"
run $ken scan "$work/mei-qr.png"
run $ken scan --raw "$work/mei-qr.png"
run $mei card qr --vcard -o "$work/mei-vcard.png"
run $ken scan --dry-run "$work/mei-vcard.png"
run $ken contacts list

step "Interop: a QR the Solidarity phone app imports (a P-256 signed card), read back by meishi"
run $mei card qr --solidarity --level public -o "$work/mei-solidarity.png"
run $ken scan --dry-run "$work/mei-solidarity.png"

echo
echo "demo finished: both stores hold the other's verified card, by exchange (with a code), file and QR, and their two common friends."
