#!/usr/bin/env python3
"""An independent check of a meishi identity backup (docs/PROTOCOL.md 3.1.1).

    verify-backup.py BACKUP.json PASSPHRASE      # prints the DID the secret belongs to, exit 0

Written from the document alone, with other code than meishi's: Argon2id and ChaCha20-Poly1305
from Python `cryptography` (OpenSSL), HChaCha20 (which turns ChaCha20-Poly1305 into the
XChaCha20 variant libsodium uses) in plain Python (tools/xchacha.py), Ed25519 from `cryptography` and did:key
with `base58`. Exit 1 when the file is not a backup, the passphrase is wrong or the secret does
not belong to the DID the file names.
"""
import base64
import json
import sys

import base58
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from xchacha import xchacha20poly1305_open


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def did_key(ed25519_public):
    return "did:key:z" + base58.b58encode(b"\xed\x01" + ed25519_public).decode()


def main():
    path, passphrase = sys.argv[1], sys.argv[2].encode()
    with open(path, "rb") as f:
        doc = json.loads(f.read())
    if doc.get("format") != "meishi-identity-backup-v1" or doc.get("protection") != "argon2id-xchacha20poly1305":
        sys.exit("not a meishi identity backup")
    key = Argon2id(salt=b64url(doc["salt"]), length=32, iterations=int(doc["opslimit"]), lanes=1,
                   memory_cost=int(doc["memlimit"]) // 1024).derive(passphrase)
    aad = b"meishi-identity-backup-v1\0" + doc["did"].encode()
    try:
        secret = xchacha20poly1305_open(key, b64url(doc["nonce"]), b64url(doc["secret"]), aad)
    except Exception:
        sys.exit("wrong passphrase, or the file was changed")
    if len(secret) != 64:
        sys.exit("the secret is not 64 bytes")
    public = Ed25519PrivateKey.from_private_bytes(secret[:32]).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    if did_key(public) != doc["did"] or b64url(doc["signPubKey"]) != public:
        sys.exit("the secret does not belong to " + doc["did"])
    print(doc["did"])


main()
