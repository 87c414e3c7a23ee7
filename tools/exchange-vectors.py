#!/usr/bin/env python3
"""Test vectors for the exchange (docs/PROTOCOL.md §1.2, §5.2, §5.3, §5.6), computed without meishi.

usage: exchange-vectors.py                 prints the vectors (JSON) to stdout
       exchange-vectors.py --check FILE    exits 1 unless FILE holds exactly what this script computes

Written from docs/PROTOCOL.md alone: hashlib and hmac for every hash, MAC and KDF (SHA-256,
SHA-512, keyed BLAKE2b, libsodium's crypto_kdf as BLAKE2b with salt and personal), the Python
`cryptography` package for X25519, Ed25519 and ChaCha20-Poly1305, HChaCha20 in plain Python (to
make XChaCha20-Poly1305, shared with tools/xchacha.py), and libsodium through ctypes only for the ristretto255 group
operations (from_hash, scalar multiplication: what the CPace draft's own vectors already check).
fixtures/exchange-vectors.json is this script's output; Tests/MeishiProximityTests/ExchangeVectorTests
checks meishi against the file and that this script still prints it.
"""
import ctypes
import ctypes.util
import hashlib
import hmac
import json
import struct
import sys
import os
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xchacha import hchacha20  # noqa: E402
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

RAW = serialization.Encoding.Raw, serialization.PublicFormat.Raw


def hx(b):
    return b.hex()


def sha256(*parts):
    return hashlib.sha256(b"".join(parts)).digest()


def sha512(*parts):
    return hashlib.sha512(b"".join(parts)).digest()


def domain(label):
    return label.encode() + b"\x00"


# ---- §1.1, §1.2: did:key and the fingerprint ----

from vectorkit import b58 as base58btc, b64url  # noqa: E402  (shared with push-vectors.py, rotation-vectors.py)


def did_key(ed_public):
    return "did:key:z" + base58btc(b"\xed\x01" + ed_public)


def fingerprint(ed_public):
    d = sha256(domain("meishi-fingerprint-v1"), ed_public)
    return " ".join("%05d" % (int.from_bytes(d[5 * i:5 * i + 5], "big") % 100000) for i in range(6))


# ---- §2: a signed card (JCS of ASCII strings and integers is sorted, compact JSON) ----

def jcs(obj):
    def ascii_keys(o):
        if isinstance(o, dict):
            assert all(k.isascii() for k in o), "JCS here sorts ASCII member names only"
            for v in o.values():
                ascii_keys(v)
        elif isinstance(o, list):
            for v in o:
                ascii_keys(v)
    ascii_keys(obj)
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def card(seed, box_secret, share_id, timestamp, level, fields):
    sk = Ed25519PrivateKey.from_private_bytes(seed)
    pub = sk.public_key().public_bytes(*RAW)
    box_pub = X25519PrivateKey.from_private_bytes(box_secret).public_key().public_bytes(*RAW)
    payload = {"version": 1, "shareId": share_id, "senderDID": did_key(pub), "signPubKey": b64url(pub),
               "pubKey": b64url(box_pub), "timestamp": timestamp, "level": level, "cardFields": fields}
    payload["payloadSignature"] = b64url(sk.sign(domain("meishi-card-v1") + jcs(payload)))
    return sk, {"ed25519_seed": hx(seed), "x25519_secret": hx(box_secret), "did": did_key(pub),
                "fingerprint": fingerprint(pub), "timestamp": timestamp, "level": level, "share_id": share_id,
                "fields": fields, "payload": jcs(payload).decode()}


# ---- XChaCha20-Poly1305-IETF = HChaCha20 subkey (tools/xchacha.py) + ChaCha20-Poly1305 (RFC 8439) ----

def xchacha_seal(key, nonce24, plaintext, ad):
    return ChaCha20Poly1305(hchacha20(key, nonce24[:16])).encrypt(b"\x00" * 4 + nonce24[16:], plaintext, ad)


# HChaCha20's own test vector (draft-irtf-cfrg-xchacha-03 §2.2.1), so the Python above is checked too.
assert hchacha20(bytes(range(32)), bytes.fromhex("000000090000004a0000000031415927")).hex() == \
    "82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc"


# ---- ristretto255 (libsodium through ctypes: the group operations only) ----

_sodium = ctypes.CDLL(ctypes.util.find_library("sodium") or "libsodium.so.23")
assert _sodium.sodium_init() >= 0
ELL = 2 ** 252 + 27742317777372353535851937790883648493


def ristretto_from_hash(h64):
    out = ctypes.create_string_buffer(32)
    assert _sodium.crypto_core_ristretto255_from_hash(out, h64) == 0
    return out.raw


def ristretto_mul(scalar, point):
    out = ctypes.create_string_buffer(32)
    assert _sodium.crypto_scalarmult_ristretto255(out, scalar, point) == 0, "identity"
    return out.raw


def scalar_from_label(label):
    """SHA-512(label) reduced mod ℓ, little-endian (as fixtures/cpace-meishi.json)."""
    return (int.from_bytes(sha512(label.encode()), "little") % ELL).to_bytes(32, "little")


# ---- CPace (draft-irtf-cfrg-cpace-21, CPACE-RISTR255-SHA512, initiator-responder) ----

def leb128(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def prepend_len(b):
    return leb128(len(b)) + b


def lv_cat(*parts):
    return b"".join(prepend_len(p) for p in parts)


DSI = b"CPaceRistretto255"


def generator_string(prs, ci, sid):
    zpad = max(0, 128 - 1 - len(prepend_len(prs)) - len(prepend_len(DSI)))
    return lv_cat(DSI, prs, b"\x00" * zpad, ci, sid)


# ---- the exchange ----

def x25519_public(secret):
    return X25519PrivateKey.from_private_bytes(secret).public_key().public_bytes(*RAW)


def kdf_subkey(master, subkey_id, context=b"meishiEX", length=32):
    """libsodium crypto_kdf_derive_from_key: BLAKE2b(key = master, salt = id (u64 LE) ‖ 0⁸, personal = context ‖ 0⁸)."""
    return hashlib.blake2b(b"", digest_size=length, key=master, salt=struct.pack("<Q", subkey_id) + b"\x00" * 8,
                           person=context + b"\x00" * 8).digest()


def keys_from(secret, transcript):
    t = sha256(domain("meishi-exchange-transcript-v1"), transcript)
    master = hashlib.blake2b(domain("meishi-exchange-keys-v1") + t, digest_size=32, key=secret).digest()
    return t, master, kdf_subkey(master, 1), kdf_subkey(master, 2), kdf_subkey(master, 3)


def sealed(key, counter, plaintext):
    nonce = b"\x00" * 16 + struct.pack(">Q", counter)
    return b"\x10" + xchacha_seal(key, nonce, plaintext, b"\x10")


def card_frames(t, k_dl, k_ld, dialer, listener, first_counter):
    """CARD both ways (binding ‖ payload), then ACK both ways, each direction counting on."""
    out = []
    for side, (sk, c), key in (("dialer", dialer, k_dl), ("listener", listener, k_ld)):
        p = c["payload"].encode()
        binding_input = domain("meishi-exchange-v1") + t + sha256(p)
        binding = sk.sign(binding_input)
        out.append({"from": side, "counter": first_counter, "type": "CARD (0x30)", "binding_input": hx(binding_input),
                    "binding": hx(binding), "plaintext": hx(b"\x30" + binding + p),
                    "frame": hx(sealed(key, first_counter, b"\x30" + binding + p))})
    for side, key in (("dialer", k_dl), ("listener", k_ld)):
        out.append({"from": side, "counter": first_counter + 1, "type": "ACK (0x40)", "plaintext": "40",
                    "frame": hx(sealed(key, first_counter + 1, b"\x40"))})
    return out


def plain_run(e_d, n_d, e_l, n_l, dialer, listener):
    E_d, E_l = x25519_public(e_d), x25519_public(e_l)
    commitment = sha256(domain("meishi-commit-v1"), E_d, n_d)
    hello = b"\x01\x01" + commitment
    response = b"\x02\x01" + E_l + n_l
    reveal = b"\x03" + E_d + n_d
    s = X25519PrivateKey.from_private_bytes(e_d).exchange(X25519PublicKey.from_public_bytes(E_l))
    assert s == X25519PrivateKey.from_private_bytes(e_l).exchange(X25519PublicKey.from_public_bytes(E_d))
    t, master, k_dl, k_ld, k_code = keys_from(s, hello + response + reveal)
    digits = "%06d" % (int.from_bytes(k_code[:4], "big") % 10 ** 6)
    frames = [{"from": "dialer", "counter": 0, "type": "CONFIRM (0x20)", "plaintext": "20", "frame": hx(sealed(k_dl, 0, b"\x20"))},
              {"from": "listener", "counter": 0, "type": "CONFIRM (0x20)", "plaintext": "20", "frame": hx(sealed(k_ld, 0, b"\x20"))}]
    frames += card_frames(t, k_dl, k_ld, dialer, listener, 1)
    return {
        "dialer_ephemeral_secret": hx(e_d), "dialer_ephemeral_public": hx(E_d), "dialer_nonce": hx(n_d),
        "listener_ephemeral_secret": hx(e_l), "listener_ephemeral_public": hx(E_l), "listener_nonce": hx(n_l),
        "commitment": hx(commitment), "hello": hx(hello), "response": hx(response), "reveal": hx(reveal),
        "transcript_hash": hx(t), "shared_secret": hx(s), "master_key": hx(master),
        "key_dialer_to_listener": hx(k_dl), "key_listener_to_dialer": hx(k_ld), "code_material": hx(k_code),
        "code": digits[:3] + " " + digits[3:],
        "sealed_frames": frames,
    }


def code_run(code, nonce_d, nonce_l, ya, yb, dialer, listener, dialer_id=b"", listener_id=b"", table=False):
    n, words = code.split("-", 1)
    prs = unicodedata.normalize("NFC", words.strip()).lower().encode()
    ci_parts = [b"meishi-cpace-v1", b"dialer", b"listener", str(int(n)).encode()]
    if dialer_id or listener_id:
        ci_parts += [dialer_id, listener_id]
    if table:
        ci_parts.append(b"table")
    ci = lv_cat(*ci_parts)
    sid = lv_cat(nonce_d, nonce_l)
    gen = generator_string(prs, ci, sid)
    g = ristretto_from_hash(sha512(gen))
    Ya, Yb = ristretto_mul(ya, g), ristretto_mul(yb, g)
    K = ristretto_mul(ya, Yb)
    assert K == ristretto_mul(yb, Ya)
    msg_a, msg_b = lv_cat(Ya, b""), lv_cat(Yb, b"")
    isk = sha512(lv_cat(DSI + b"_ISK", sid, K), msg_a + msg_b)
    mac_key = sha512(b"CPaceMac", sid, isk)
    ta = hmac.new(mac_key, msg_a, hashlib.sha512).digest()
    tb = hmac.new(mac_key, msg_b, hashlib.sha512).digest()
    f1 = b"\x04\x01" + nonce_d
    f2 = b"\x05\x01" + nonce_l + msg_b
    f3 = b"\x06" + prepend_len(msg_a) + ta
    f4 = b"\x07" + tb
    t, master, k_dl, k_ld, _ = keys_from(isk, f1 + f2 + f3 + f4)
    out = {"code": code, "N": str(int(n)), "PRS": hx(prs)}
    if dialer_id or listener_id:
        out.update({"dialer_session_id": hx(dialer_id), "listener_session_id": hx(listener_id)})
    if table:
        out["table"] = True
    out.update({
        "CI": hx(ci), "nonce_D": hx(nonce_d), "nonce_L": hx(nonce_l), "sid": hx(sid), "generator_string": hx(gen), "g": hx(g),
        "ya": hx(ya), "yb": hx(yb), "Ya": hx(Ya), "Yb": hx(Yb), "K": hx(K), "ISK": hx(isk), "mac_key": hx(mac_key),
        "Ta": hx(ta), "Tb": hx(tb),
        "pake_hello": hx(f1), "pake_reply": hx(f2), "pake_finish": hx(f3), "pake_confirm": hx(f4),
        "transcript_hash": hx(t), "master_key": hx(master),
        "key_dialer_to_listener": hx(k_dl), "key_listener_to_dialer": hx(k_ld),
        "sealed_frames": card_frames(t, k_dl, k_ld, dialer, listener, 0),
    })
    return out


def announcement(session_id, port, nameplate=None, alias=None, answer=False, table=False):
    """§5.5 and §5.7: MSHD, version 1, session id, port, flags, [N], [alias]."""
    flags = (1 if nameplate is not None else 0) | (2 if alias is not None else 0) | (4 if answer else 0) | (8 if table else 0)
    out = b"MSHD\x01" + session_id + struct.pack(">H", port) + bytes([flags])
    if nameplate is not None:
        out += struct.pack(">H", nameplate)
    if alias is not None:
        a = alias.encode()
        out += bytes([len(a)]) + a
    return out


def announcements():
    sid = bytes(range(0xA0, 0xB0))
    valid = [
        ("pairwise, no code", announcement(sid, 40000), {"port": 40000}),
        ("pairwise --code 7-…", announcement(sid, 40000, 7), {"port": 40000, "N": 7}),
        ("table 7, answer me", announcement(sid, 40001, 7, answer=True, table=True),
         {"port": 40001, "N": 7, "answer": True, "table": True}),
        ("table 999 with an alias", announcement(sid, 65535, 999, alias="Mei", table=True),
         {"port": 65535, "N": 999, "alias": "Mei", "table": True}),
    ]
    refused = [
        ("table flag without a code number", b"MSHD\x01" + sid + struct.pack(">H", 40000) + b"\x08"),
        ("unknown flag bit 4", b"MSHD\x01" + sid + struct.pack(">H", 40000) + b"\x19\x00\x07"),
        ("table N 0", b"MSHD\x01" + sid + struct.pack(">H", 40000) + b"\x09\x00\x00"),
    ]
    return {
        "session_id": hx(sid),
        "valid": [dict({"name": n, "bytes": hx(b)}, **fields) for n, b, fields in valid],
        "refused": [{"name": n, "bytes": hx(b)} for n, b in refused],
    }


def vectors():
    now = 1795000000
    dialer = card(bytes(range(0, 32)), bytes(range(32, 64)), "6f1c2a5e-8d4b-4f3a-9c2e-1b7d5e3f9a01", now - 30, "professional",
                  {"email": ["mei.tanaka@example.org"], "name": "Mei Tanaka", "org": "Example Robotics"})
    listener = card(bytes(range(64, 96)), bytes(range(96, 128)), "0b5d7e21-3c4a-4e6f-8a9b-2c3d4e5f6a7b", now - 20, "public",
                    {"name": "Ken Sato"})
    cards = {"dialer": dialer[1], "listener": listener[1]}
    plain = plain_run(bytes([0xA1] * 32), bytes([0xC3] * 32), bytes([0xB2] * 32), bytes([0xD4] * 32), dialer, listener)
    ya, yb = scalar_from_label("meishi cpace vector ya"), scalar_from_label("meishi cpace vector yb")
    nonce_d, nonce_l = bytes(range(0, 16)), bytes(range(16, 32))
    with_code = code_run("7-Tulip-Anchor", nonce_d, nonce_l, ya, yb, dialer, listener)
    discovered = code_run("7-Tulip-Anchor", nonce_d, nonce_l, ya, yb, dialer, listener,
                          bytes([0xDD] * 16), bytes([0xEE] * 16))
    at_table = code_run("7-Tulip-Anchor", nonce_d, nonce_l, ya, yb, dialer, listener,
                        bytes([0xDD] * 16), bytes([0xEE] * 16), table=True)
    ed = Ed25519PrivateKey.from_private_bytes(bytes(range(32))).public_key().public_bytes(*RAW)
    return {
        "comment": ("docs/PROTOCOL.md §1.2, §5.2, §5.3, §5.5, §5.6 and §5.7, computed by tools/exchange-vectors.py without meishi. "
                    "Byte strings are hex; frames are shown without their 4-byte length prefix. The dialer is D (the CPace "
                    "initiator), the listener L (the responder). Each card's payload is sent as these exact bytes (its JCS) "
                    "and verifies at unix time `now`. Sealed frames: each direction counts from 0; with a code there are no "
                    "CONFIRM frames, so CARD is frame 0."),
        "now": now,
        "fingerprint": {"ed25519_public": hx(ed), "did": did_key(ed), "fingerprint": fingerprint(ed)},
        "cards": cards,
        "handshake": plain,
        "code": with_code,
        "code_after_discovery": discovered,
        "code_at_table": at_table,
        "announcements": announcements(),
    }


def main():
    v = vectors()
    # The run with a code and no discovery is the one of fixtures/cpace-meishi.json, computed separately before.
    earlier = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "cpace-meishi.json")
    if os.path.exists(earlier):
        with open(earlier, encoding="utf-8") as f:
            e = json.load(f)
        assert all(e[k] == v["code"][k] for k in ("CI", "sid", "g", "Ya" if "Ya" in e else "K", "ISK", "Ta", "Tb")), earlier
    text = json.dumps(v, indent=2, ensure_ascii=False) + "\n"
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        with open(sys.argv[2], encoding="utf-8") as f:
            if f.read() != text:
                print("%s differs from what tools/exchange-vectors.py computes" % sys.argv[2], file=sys.stderr)
                return 1
        print("%s: as computed" % sys.argv[2])
        return 0
    if len(sys.argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
