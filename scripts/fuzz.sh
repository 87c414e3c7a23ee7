#!/usr/bin/env bash
# Fuzzing meishi's parsers (README "Fuzzing").
#   scripts/fuzz.sh seed          writes the seed corpora fixtures/fuzz/corpus/<target>/ from fixtures/
#   scripts/fuzz.sh run SECONDS [TARGET…]
#                                 builds meishi-fuzz with libFuzzer and the address sanitizer
#                                 (.build-fuzz), runs each target SECONDS seconds on a copy of its
#                                 corpus, prints executions, coverage and findings per target, then
#                                 the differential check of the payload verifier against
#                                 tools/verify-payload.py over the payload inputs either accepts.
#                                 UPDATE_CORPUS=1 merges what a run found into fixtures/fuzz/corpus
#                                 (minimised with libFuzzer's -merge=1).
# FUZZ_NO_BUILD=1 runs the binary already in .build-fuzz. Crashes are kept in .fuzz/findings/<target>/; add each, once fixed, to fixtures/fuzz/regressions/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=(payload qr-text frames session announcement vcard image solidarity friends envelope)
CORPUS=fixtures/fuzz/corpus

seed() {
    local d
    for t in "${TARGETS[@]}"; do mkdir -p "$CORPUS/$t"; done
    # Payloads and QR text: the vectors' bodies (headers stripped) and the typical QR card.
    for f in fixtures/vectors/*.txt; do
        d="$CORPUS/payload"
        grep -v '^#' "$f" > "$d/$(basename "$f" .txt)"
        if grep -q '^MEISHI' "$f"; then grep -v '^#' "$f" > "$CORPUS/qr-text/$(basename "$f" .txt)"; fi
    done
    cp fixtures/qr/typical-card.txt "$CORPUS/payload/typical-card-qr"
    cp fixtures/qr/typical-card.txt "$CORPUS/qr-text/typical-card"
    # Solidarity tokens.
    for f in fixtures/solidarity/*.txt; do grep -v '^#' "$f" > "$CORPUS/solidarity/$(basename "$f" .txt)"; done
    python3 - "$CORPUS" <<'PY'
import os, struct, sys
root = sys.argv[1]
def put(target, name, data):
    with open(os.path.join(root, target, name), "wb") as f:
        f.write(data)
# Frames: the first byte picks the cut size, then length-prefixed bodies.
frame = lambda body: struct.pack(">I", len(body)) + body
put("frames", "one", b"\x03" + frame(b"\x01\x01" + b"C" * 32))
put("frames", "three", b"\x01" + frame(b"\x01") + frame(b"\x02" * 66) + frame(b"\x03" * 65))
put("frames", "partial", b"\x05" + frame(b"\x10" * 40)[:20])
put("frames", "zero-length", b"\x02" + b"\x00\x00\x00\x00")
put("frames", "too-large", b"\x07" + struct.pack(">I", 65537) + b"x" * 10)
# Session, a whole exchange: a setup byte (bit 0 A dials, bit 1 code, bit 2 wrong code, bits 3-4
# both sides' friends mode: ecdh, hash, verified, off; bit 5 B sends A a note), then operations
# that run an honest exchange (deliver B->A, A->B, A's person answers, B's), and variants that
# alter frames.
honest = bytes([0, 4, 5, 0, 6, 0, 4]) * 8
for setup in range(8):
    put("session", f"honest-{setup}", bytes([setup]) + honest)
for setup in (8, 16, 24, 32, 33, 42, 51, 58):
    put("session", f"phases-{setup}", bytes([setup]) + honest)
put("session", "flip", bytes([0, 0, 4, 1, 3, 1, 4, 5, 0, 6]) * 4)
put("session", "replay", bytes([1, 4, 0, 3, 0, 4, 5, 0, 6, 3, 1]) * 4)
put("session", "raw", bytes([2, 2, 9]) + b"\x10" * 40)
put("session", "cut", bytes([0, 7, 3, 4, 0, 7, 20]) * 4)
# Common friends: a setup byte (bits 0-1 A's mode, 2-3 B's mode: hash, ecdh, verified, off;
# bit 4 A listens), then honest deliveries (B->A, A->B), and variants that alter messages.
for setup in range(32):
    put("friends", f"honest-{setup}", bytes([setup]) + bytes([0, 4]) * 12)
put("friends", "flip", bytes([5, 0, 4, 1, 3, 1, 4, 0, 4]) * 3)
put("friends", "raw", bytes([9, 2, 3, 4]) + bytes(range(8)) + bytes([0, 4]) * 6)
put("friends", "reorder", bytes([6, 0, 4, 5, 0, 4, 5, 0, 4]) * 3)
# Announcements (docs/PROTOCOL.md 5.5): magic, version, session id, port, flags, [N], [alias].
sid = bytes(range(16))
base = b"MSHD\x01" + sid + struct.pack(">H", 47823)
put("announcement", "plain", base + b"\x00")
put("announcement", "code", base + b"\x01" + struct.pack(">H", 7))
put("announcement", "alias", base + b"\x02" + bytes([3]) + b"Mei")
put("announcement", "all", base + b"\x07" + struct.pack(">H", 999) + bytes([6]) + "名刺".encode()[:6])
put("announcement", "bad-flags", base + b"\x08")
# vCards: 2.1 with quoted-printable, 3.0 folded, 4.0, UTF-16, broken.
put("vcard", "v21-qp", b"BEGIN:VCARD\r\nVERSION:2.1\r\nN:Tanaka;Mei\r\nFN;ENCODING=QUOTED-PRINTABLE;CHARSET=UTF-8:=E5=90=8D=\r\n=E5=88=BA\r\nTEL;CELL:+81 90 1234 5678\r\nEND:VCARD\r\n")
put("vcard", "v30-folded", b"BEGIN:VCARD\nVERSION:3.0\nFN:Ken\n  Sato\nEMAIL;TYPE=work:ken@example.org\nADR:;;1-2-3 Shibuya;Tokyo;;150;JP\nitem1.URL:https://example.org\nEND:VCARD\n")
put("vcard", "v40", b"BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Cleo Park\r\nORG:Example\\, Inc.;R&D\r\nNOTE:line one\\nline two\r\nX-MEISHI-DID:did:key:z6MkehRgf7yJbgaGfYsdoAsKdBPE3dj2CYhowQdcjqSJgvVd\r\nREV:20260101T000000Z\r\nEND:VCARD\r\n")
put("vcard", "utf16", "\ufeffBEGIN:VCARD\r\nVERSION:3.0\r\nFN:Dev Rao\r\nEND:VCARD\r\n".encode("utf-16-le"))
put("vcard", "unterminated", b"BEGIN:VCARD\nVERSION:3.0\nFN:Half\nPHOTO;ENCODING=b:AAAA\n")
put("vcard", "two", b"BEGIN:VCARD\nFN:A\nEND:VCARD\nBEGIN:VCARD\nFN:B\nTEL:1\nEND:VCARD\n")
# Many cards of one name (issue 22 finding 2: each look-alike rewrote every earlier one's list).
put("vcard", "same-name-many", b"".join(b"BEGIN:VCARD\nVERSION:3.0\nFN:Alice\nEMAIL:alice%d@example.org\nEND:VCARD\n" % i for i in range(400)))
# Images: tiny PNM pictures here; PNG and JPEG come from qrencode and Pillow below when present.
put("image", "pgm", b"P5\n4 4\n255\n" + bytes(range(0, 256, 16)))
put("image", "pbm", b"P4\n8 2\n\xaa\x55")
put("image", "ppm", b"P6\n2 2\n255\n" + bytes(range(12)))
put("image", "pgm-ascii", b"P2\n2 2\n15\n0 15 15 0\n")
put("image", "pgm-truncated", b"P5\n100 100\n255\n\x00\x01")
PY
    # A progressive JPEG of 120 repeated cheap scans (issue 22, finding 7): refused at the 101st.
    python3 tools/progressive-jpeg-bomb.py 512 512 120 "$CORPUS/image/progressive-120-scans.jpg"
    if command -v qrencode >/dev/null; then
        qrencode -s 1 -m 1 -o "$CORPUS/image/qr.png" "MEISHI1:seed"
        qrencode -s 2 -m 2 -l H -o "$CORPUS/image/qr-ecc-h.png" "hello"
    fi
    if [ -x .venv/bin/python ]; then
        .venv/bin/python - "$CORPUS/image" <<'PY'
import sys
from PIL import Image
d = sys.argv[1]
im = Image.open(d + "/qr.png").convert("L")
im.save(d + "/qr.jpg", quality=60)
im.convert("RGB").save(d + "/qr-progressive.jpg", progressive=True)
im.save(d + "/qr-interlaced.png", interlace=1)
im.convert("P").save(d + "/qr-palette.png")
PY
    fi
    # Envelopes: valid ones sealed with the target's fixed keys, then a cut and a bad version.
    swift build --product meishi-fuzz >/dev/null
    .build/debug/meishi-fuzz seed-envelopes "$CORPUS/envelope"
    head -c 60 "$CORPUS/envelope/short" > "$CORPUS/envelope/truncated"
    printf 'MSHM\002' > "$CORPUS/envelope/version-2"
    for t in "${TARGETS[@]}"; do printf '%-13s %3d seeds\n' "$t" "$(ls "$CORPUS/$t" | wc -l)"; done
}

run() {
    local seconds=$1; shift
    local targets=("$@")
    [ ${#targets[@]} -gt 0 ] || targets=("${TARGETS[@]}")
    if [ "${FUZZ_NO_BUILD:-0}" = 1 ]; then :; else
    echo "building meishi-fuzz with libFuzzer + AddressSanitizer (.build-fuzz)…"
    # swiftc adds coverage for -sanitize=fuzzer only when it links, not to modules it compiles
    # with -c as SwiftPM does: name the instrumentation libFuzzer reads. SwiftPM does not rebuild
    # a module when only -Xswiftc flags change, so meishi's own sources are touched to rebuild them.
    touch Sources/{MeishiText,MeishiCard,MeishiCrypto,MeishiProximity,MeishiQR,MeishiFuzz,meishi-fuzz}/*.swift
    swift build -c release --product meishi-fuzz --sanitize fuzzer --sanitize address -Xswiftc -DFUZZING \
        -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp \
        --scratch-path .build-fuzz 2>&1 | grep -v "ld.gold: warning: Cannot export local symbol" | tail -3
    [ "${PIPESTATUS[0]}" = 0 ] || { echo "fuzz build failed" >&2; exit 1; }
    fi
    local bin=.build-fuzz/release/meishi-fuzz
    mkdir -p .fuzz
    printf '\n%-13s %8s %12s %10s %8s %6s %9s\n' target seconds executions exec/s cov ft findings
    for t in "${targets[@]}"; do
        local work=.fuzz/work/$t findings=.fuzz/findings/$t log=.fuzz/$t.log
        mkdir -p "$work" "$findings"
        set +e
        MEISHI_FUZZ_TARGET=$t ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=3072 \
            -max_len=70000 -print_final_stats=1 -artifact_prefix="$findings/" "$work" "$CORPUS/$t" >"$log" 2>&1
        set -e
        local execs cov ft rate found
        execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
        rate=$(awk '/stat::average_exec_per_sec/ {print $2}' "$log")
        cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}' || true)
        ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | awk '{print $2}' || true)
        if grep -q "no interesting inputs were found" "$log" && [ -z "$cov" ]; then
            echo "  $t: the binary records no coverage (not instrumented?): see $log" >&2; exit 1
        fi
        found=$(ls "$findings" | wc -l)
        printf '%-13s %8s %12s %10s %8s %6s %9s\n' "$t" "$seconds" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$found"
        if [ "$found" != 0 ]; then echo "  findings in $findings/ (log: $log)"; grep -m3 -E "ERROR|fuzz property|Fatal error" "$log" | sed 's/^/  /'; fi
        if [ "${UPDATE_CORPUS:-0}" = 1 ]; then
            MEISHI_FUZZ_TARGET=$t "$bin" -merge=1 -max_len=70000 "$CORPUS/$t" "$work" >/dev/null 2>&1 || true
        fi
    done
    differential
}

# The payload verifier against an independent one (Python json + rfc8785 + cryptography) on every
# payload input either of them accepts. tools/verify-payload.py has no clock, so meishi's
# from-the-future counts as a valid signature here.
differential() {
    [ -x .venv/bin/python ] || scripts/python-tools.sh rfc8785 cryptography >/dev/null
    .venv/bin/python -c 'import rfc8785, cryptography' 2>/dev/null || scripts/python-tools.sh rfc8785 cryptography >/dev/null
    swift build --product meishi-fuzz >/dev/null
    local files
    files=$(mktemp)
    find "$CORPUS/payload" .fuzz/work/payload -type f 2>/dev/null | sort > "$files"
    .build/debug/meishi-fuzz payload --verdicts $(cat "$files") > .fuzz/payload-verdicts.tsv
    .venv/bin/python - .fuzz/payload-verdicts.tsv <<'PY'
import subprocess, sys
total = accepted = disagree = 0
for line in open(sys.argv[1]):
    verdict, path = line.rstrip("\n").split("\t", 1)
    if open(path, "rb").read().lstrip().startswith(b"MEISHI"):
        continue  # the QR text form: verify-payload.py reads JSON only (the qr-text target covers it)
    ours = verdict in ("valid", "from-the-future")
    r = subprocess.run([".venv/bin/python", "tools/verify-payload.py", path], capture_output=True, text=True)
    theirs = r.returncode == 0
    total += 1
    if ours or theirs:
        accepted += 1
        if ours != theirs:
            disagree += 1
            print(f"  DISAGREE {path}: meishi {verdict}, verify-payload.py {(r.stdout or r.stderr).strip()}")
print(f"differential: {total} JSON payload inputs, {accepted} accepted by either, {disagree} disagreements")
sys.exit(1 if disagree else 0)
PY
    rm -f "$files"
}

case "${1:-}" in
    seed) seed ;;
    run) shift; run "${1:-60}" "${@:2}" ;;
    differential) differential ;;
    *) echo "usage: scripts/fuzz.sh seed | run SECONDS [TARGET…] | differential" >&2; exit 64 ;;
esac
