#!/usr/bin/env python3
"""Independent verifier for meishi ProximityPayload v1 (docs/PROTOCOL.md).

Shares no code with meishi: Python's json, the `rfc8785` package for JCS and `cryptography`
for Ed25519. Usage: verify-payload.py FILE|-  ->  prints "valid" (exit 0) or "invalid: why" (exit 1).
Lines starting with '#' before the JSON (the fixtures/vectors header) are skipped.
"""
import base64
import json
import sys

import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def b58decode(s):
    n = 0
    for ch in s:
        n = n * 58 + B58.index(ch)
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return b"\0" * (len(s) - len(s.lstrip("1"))) + raw


def b64url(s):
    if "=" in s:
        raise ValueError("padding")
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError("duplicate member " + k)
        d[k] = v
    return d


MEMBERS = {"version", "shareId", "senderDID", "signPubKey", "pubKey", "timestamp", "level", "cardFields",
           "payloadSignature"}


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from strings(v)


def verify(data):
    lines = data.split(b"\n")
    while lines and lines[0].startswith(b"#"):
        lines.pop(0)
    payload = json.loads(b"\n".join(lines), object_pairs_hook=no_duplicates)
    if payload.get("version") != 1:
        return "unsupported version"
    # Member names compare by code point, as Python compares str: "pub\u212aey" is not pubKey.
    if set(payload) != MEMBERS:
        return "malformed: members %s" % sorted(ascii(k) for k in set(payload) ^ MEMBERS)
    if any("\0" in s for s in strings(payload)):
        return "malformed: a NUL character"
    did = payload["senderDID"]
    if not did.startswith("did:key:z"):
        return "not a did:key"
    decoded = b58decode(did[len("did:key:z"):])
    if decoded[:2] != b"\xed\x01" or len(decoded) != 34:
        return "not an Ed25519 did:key"
    key = b64url(payload["signPubKey"])
    if key != decoded[2:]:
        return "key mismatch"
    signature = b64url(payload.pop("payloadSignature"))
    message = b"meishi-card-v1\x00" + rfc8785.dumps(payload)
    try:
        Ed25519PublicKey.from_public_bytes(key).verify(signature, message)
    except InvalidSignature:
        return "bad signature"
    return None


def main():
    path = sys.argv[1]
    data = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
    try:
        problem = verify(data)
    except Exception as e:  # malformed input of any kind
        problem = "malformed: %s" % e
    print("valid" if problem is None else "invalid: " + problem)
    return 0 if problem is None else 1


if __name__ == "__main__":
    sys.exit(main())
