#!/usr/bin/env python3
"""Vectors of `meishi send --relay` / `listen --relay` (docs/PROTOCOL.md §9.8), computed without meishi.

    relay-note-vectors.py                 prints the vectors as JSON (fixtures/messages/relay-vectors.json)
    relay-note-vectors.py --check FILE    exits 1 unless FILE holds exactly what this script computes

From the keys of fixtures/messages/vectors.json (X25519 0x11 sender, 0x22 listener): the pair key
of §9.2 again (checked against that file), then with Python's hashlib the pair's mailbox and
sides for the UTC day of its unix_time and the next, the call and answer bodies for fixed nonces,
and the transit token.
"""
import hashlib
import sys

import vectorkit
from vectorkit import pub, x25519


def meeting(pair_key, sender, recipient, day):
    out = hashlib.blake2b(b"meishi-relay-mailbox-v1" + sender + recipient + day.to_bytes(8, "big"), key=pair_key, digest_size=64).digest()
    return {"day": day, "mailbox": out[:32].hex(), "listener_side": out[32:40].hex(), "sender_side": out[40:48].hex()}


def compute(messages):
    mei, ken = x25519(0x11), x25519(0x22)
    a, b = pub(mei), pub(ken)
    shared = mei.exchange(ken.public_key())
    pair_key = hashlib.blake2b(b"meishi-pair-v1" + min(a, b) + max(a, b), key=shared, digest_size=32).digest()
    if pair_key.hex() != messages["pair_key"]:
        sys.exit("relay-note-vectors.py: this pair key is not the one of fixtures/messages/vectors.json")
    unix_time = messages["unix_time"]
    day = unix_time // 86400
    call, answer = bytes([0x55]) * 32, bytes([0x66]) * 32
    return {
        "comment": "docs/PROTOCOL.md §9.8, made by tools/relay-note-vectors.py without meishi. Keys, pair key and unix_time as in "
                   "fixtures/messages/vectors.json (X25519 0x11 sender, 0x22 listener); the call nonce is 32 bytes 0x55, the "
                   "listener's answer nonce 32 bytes 0x66. Bodies as sent in the mailbox messages (lowercase hex).",
        "pair_key": pair_key.hex(), "unix_time": unix_time,
        "today": meeting(pair_key, a, b, day), "tomorrow": meeting(pair_key, a, b, day + 1),
        "reverse_direction": meeting(pair_key, b, a, day),
        "call_nonce": call.hex(), "answer_nonce": answer.hex(),
        "call_body": (call + unix_time.to_bytes(8, "big")).hex(), "answer_body": (answer + call).hex(),
        "token": hashlib.sha256(b"meishi-note-token-v1\x00" + call + answer).hexdigest(),
    }


if __name__ == "__main__":
    vectorkit.main(compute, "relay-note-vectors.py")
