#!/usr/bin/env bash
# The main job end to end on throwaway identities: two people make cards, exchange them over
# loopback, export, verify and store signed payloads, and print and scan a QR code.
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

step "The main job: they exchange cards over the network (here: loopback)"
echo "(on two laptops both would simply run 'meishi exchange' and compare the 6-digit code;"
echo " here nobody is at the keyboard, so --yes skips the comparison and trust is 'signed')"
printf '$ %s\n' "meishi --home \$DEMO/mei exchange --listen --port 0 --yes &"
$mei exchange --listen --port 0 --yes --timeout 30 > "$work/mei-exchange.out" 2> "$work/mei-exchange.err" &
port=""
for _ in $(seq 100); do
  port=$(grep -oE 'port [0-9]+' "$work/mei-exchange.err" 2>/dev/null | head -1 | awk '{print $2}' || true)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "demo: the listener did not start" >&2; cat "$work/mei-exchange.err" >&2; exit 1; }
run $ken exchange --peer "127.0.0.1:$port" --yes
wait
cat "$work/mei-exchange.out"
run $mei contacts list

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

echo
echo "demo finished: both stores hold the other's verified card, by exchange, file and QR."
