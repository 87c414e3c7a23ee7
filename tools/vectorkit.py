"""Key set-up shared by the vector scripts of docs/PROTOCOL.md §9.7 and §10 (push-vectors.py,
rotation-vectors.py): fixed X25519 and Ed25519 keys from one repeated byte, base58/base64url,
did:key, a §2 card signed over JCS, and Noise_KK_25519_ChaChaPoly_SHA256 written out from the
Noise specification (revision 34) with `cryptography`; no code of meishi. exchange-vectors.py
takes its base58 and base64url from here too.
"""
import base64
import hashlib
import hmac

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

RAW = serialization.Encoding.Raw, serialization.PublicFormat.Raw
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def x25519(byte):
    return X25519PrivateKey.from_private_bytes(bytes([byte]) * 32)


def pub(key):
    return key.public_key().public_bytes(*RAW)


def b58(data):
    n = int.from_bytes(data, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = B58[r] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class CipherState:
    def __init__(self, key=None):
        self.k, self.n = key, 0

    def encrypt(self, ad, plaintext):
        if self.k is None:
            return plaintext
        nonce = b"\0" * 4 + self.n.to_bytes(8, "little")
        self.n += 1
        return ChaCha20Poly1305(self.k).encrypt(nonce, plaintext, ad)

    def decrypt(self, ad, ciphertext):
        if self.k is None:
            return ciphertext
        nonce = b"\0" * 4 + self.n.to_bytes(8, "little")
        self.n += 1
        return ChaCha20Poly1305(self.k).decrypt(nonce, ciphertext, ad)


def hkdf(ck, ikm, n):
    temp = hmac.new(ck, ikm, hashlib.sha256).digest()
    out, prev = [], b""
    for i in range(1, n + 1):
        prev = hmac.new(temp, prev + bytes([i]), hashlib.sha256).digest()
        out.append(prev)
    return out


class Symmetric:
    def __init__(self, name):
        self.h = name.ljust(32, b"\0") if len(name) <= 32 else hashlib.sha256(name).digest()
        self.ck = self.h
        self.cipher = CipherState()

    def mix_hash(self, data):
        self.h = hashlib.sha256(self.h + data).digest()

    def mix_key(self, ikm):
        self.ck, key = hkdf(self.ck, ikm, 2)
        self.cipher = CipherState(key)

    def encrypt_and_hash(self, plaintext):
        c = self.cipher.encrypt(self.h, plaintext)
        self.mix_hash(c)
        return c

    def decrypt_and_hash(self, ciphertext):
        p = self.cipher.decrypt(self.h, ciphertext)
        self.mix_hash(ciphertext)
        return p

    def split(self):
        k1, k2 = hkdf(self.ck, b"", 2)
        return CipherState(k1), CipherState(k2)


def dh(secret, public):
    return secret.exchange(X25519PublicKey.from_public_bytes(public))


class NoiseKK:
    """KK:  -> s  <- s  ...  -> e, es, ss  <- e, ee, se"""

    def __init__(self, initiator, prologue, s, rs, e):
        self.initiator, self.s, self.rs, self.e, self.re = initiator, s, rs, e, None
        self.sym = Symmetric(b"Noise_KK_25519_ChaChaPoly_SHA256")
        self.sym.mix_hash(prologue)
        i_static, r_static = (pub(s), rs) if initiator else (rs, pub(s))
        self.sym.mix_hash(i_static)
        self.sym.mix_hash(r_static)

    def write1(self, payload):
        self.sym.mix_hash(pub(self.e))
        self.sym.mix_key(dh(self.e, self.rs))
        self.sym.mix_key(dh(self.s, self.rs))
        return pub(self.e) + self.sym.encrypt_and_hash(payload)

    def read1(self, message):
        self.re = message[:32]
        self.sym.mix_hash(self.re)
        self.sym.mix_key(dh(self.s, self.re))
        self.sym.mix_key(dh(self.s, self.rs))
        return self.sym.decrypt_and_hash(message[32:])

    def write2(self, payload):
        self.sym.mix_hash(pub(self.e))
        self.sym.mix_key(dh(self.e, self.re))
        self.sym.mix_key(dh(self.e, self.rs))
        return pub(self.e) + self.sym.encrypt_and_hash(payload)

    def read2(self, message):
        self.re = message[:32]
        self.sym.mix_hash(self.re)
        self.sym.mix_key(dh(self.e, self.re))
        self.sym.mix_key(dh(self.s, self.re))
        return self.sym.decrypt_and_hash(message[32:])


def ed25519_did(seed_byte):
    key = Ed25519PrivateKey.from_private_bytes(bytes([seed_byte]) * 32)
    raw = key.public_key().public_bytes(*RAW)
    return key, raw, "did:key:z" + b58(b"\xed\x01" + raw)


def signed_card(seed_byte, box_public, timestamp):
    """A §2 payload signed as §2.2 says, written as JCS (no newline)."""
    key, raw, did = ed25519_did(seed_byte)
    payload = {
        "version": 1, "shareId": "0f8fad5b-d9cb-469f-a165-70867728950e", "senderDID": did,
        "signPubKey": b64url(raw), "pubKey": b64url(box_public), "timestamp": timestamp, "level": "public",
        "cardFields": {"name": "Mei Tanaka", "title": "Lead", "phone": ["+81 3 1234 5678"]},
    }
    import rfc8785  # only the card needs it (exchange-vectors.py imports this module without it)
    payload["payloadSignature"] = b64url(key.sign(b"meishi-card-v1\x00" + rfc8785.dumps(payload)))
    return rfc8785.dumps(payload)


def delivery(tag, unix_time, inner, answer):
    """HELLO, REPLY, the sender's sealed `inner` and the listener's sealed `answer` (§9.4)."""
    mei, ken = x25519(0x11), x25519(0x22)
    prologue = b"meishi-message-v1\x00" + tag
    initiator = NoiseKK(True, prologue, mei, pub(ken), x25519(0x33))
    responder = NoiseKK(False, prologue, ken, pub(mei), x25519(0x44))
    hello = bytes([0x50]) + tag + initiator.write1(unix_time.to_bytes(8, "big"))
    assert responder.read1(hello[17:]) == unix_time.to_bytes(8, "big")
    reply = bytes([0x51]) + responder.write2(b"")
    assert initiator.read2(reply[1:]) == b""
    i_send, _ = initiator.sym.split()
    _, r_send = responder.sym.split()  # the responder sends with the second key
    return hello, reply, bytes([0x52]) + i_send.encrypt(b"", inner), bytes([0x52]) + r_send.encrypt(b"", answer)


def main(compute, script):
    """A vector script's command line: prints what `compute(messages)` returns (from the keys of
    fixtures/messages/vectors.json) as JSON, or with `--check FILE` exits 1 unless FILE holds it."""
    import json
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "fixtures", "messages", "vectors.json")) as f:
        messages = json.load(f)
    text = json.dumps(compute(messages), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        with open(sys.argv[2], encoding="utf-8") as f:
            if f.read() != text:
                sys.exit("%s: %s is not what this script computes" % (script, sys.argv[2]))
        return
    if len(sys.argv) != 1:
        sys.exit(sys.modules["__main__"].__doc__)
    sys.stdout.write(text)
