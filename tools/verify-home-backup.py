#!/usr/bin/env python3
"""An independent check of a meishi home backup (docs/PROTOCOL.md 3.1.2, `meishi backup`).

    verify-home-backup.py BACKUP PASSPHRASE     # prints what it holds as JSON, exit 0

Written from the document alone, with other code than meishi's: Argon2id and ChaCha20-Poly1305
from Python `cryptography` (OpenSSL), HChaCha20 in plain Python (tools/xchacha.py), the
store opened with Python's own sqlite3. Prints {"did", "created", "files": [names],
"contacts": N, "messages": N, "card": {fields...} or null}. Exit 1 when the file is not a home
backup, the passphrase is wrong, the file was changed, or what it holds breaks a rule of the
document (a file it may not hold, identity files of another DID, a store that is not a whole
SQLite database).
"""
import base64
import json
import os
import sqlite3
import sys
import tempfile

from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

from xchacha import xchacha20poly1305_open

FILES = {"identity.key", "identity.json", "card.json", "solidarity.key", "rotations.json", "previous-box.key", "meishi.sqlite"}


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def main():
    path, passphrase = sys.argv[1], sys.argv[2].encode()
    data = open(path, "rb").read()
    newline = data.find(b"\n")
    if newline < 0:
        sys.exit("not a meishi home backup: no header line")
    header = json.loads(data[:newline])
    if header.get("format") != "meishi-home-backup-v1" or header.get("protection") != "argon2id-xchacha20poly1305":
        sys.exit("not a meishi home backup")
    did = header["did"]
    key = Argon2id(salt=b64url(header["salt"]), length=32, iterations=int(header["opslimit"]), lanes=1,
                   memory_cost=int(header["memlimit"]) // 1024).derive(passphrase)
    nonce = b64url(header["nonce"])
    try:
        plain = xchacha20poly1305_open(key, nonce, data[newline + 1:], b"meishi-home-backup-v1\0" + did.encode())
    except Exception:
        sys.exit("wrong passphrase, or the file was changed")
    doc = json.loads(plain)
    if doc.get("format") != "meishi-home-v1" or doc.get("did") != did:
        sys.exit("the sealed document is not a meishi home of " + did)
    files = {name: b64url(text) for name, text in doc["files"].items()}
    if not set(files) <= FILES or not {"identity.key", "identity.json"} <= set(files):
        sys.exit("unexpected or missing files: " + ", ".join(sorted(files)))
    for name in ("identity.key", "identity.json"):
        if json.loads(files[name]).get("did") != did:
            sys.exit(name + " belongs to another identity")
    contacts = messages = 0
    if "meishi.sqlite" in files:
        with tempfile.TemporaryDirectory() as tmp:
            db = os.path.join(tmp, "store.sqlite")
            open(db, "wb").write(files["meishi.sqlite"])
            con = sqlite3.connect(db)
            if con.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
                sys.exit("the store fails SQLite's integrity check")
            contacts = con.execute("SELECT count(*) FROM contact").fetchone()[0]
            messages = con.execute("SELECT count(*) FROM message").fetchone()[0]
            con.close()
    card = json.loads(files["card.json"]).get("fields") if "card.json" in files else None
    json.dump({"did": did, "created": doc["created"], "files": sorted(files), "contacts": contacts, "messages": messages,
               "card": card}, sys.stdout, ensure_ascii=False, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
