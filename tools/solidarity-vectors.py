#!/usr/bin/env python3
"""Writes fixtures/solidarity/: Solidarity didSigned card vectors, made independently of meishi.

usage: solidarity-vectors.py [OUT_DIR]        (default: fixtures/solidarity next to this tool)

Python `cryptography` (ECDSA P-256, SHA-256) and `base58` build each compact JWS the way the
Solidarity app does (docs/PROTOCOL.md section 6): header {alg, typ, cty, kid}, claims {jti, iss,
sub, iat, nbf[, exp], vc}, signature r || s (or DER) over the ASCII "header.payload". Keys are fixed
scalars so DIDs stay the same; ECDSA signatures are randomised, so a rerun changes the signature
bytes but no verdict. Each file holds one verdict: header lines "# verdict:", "# now:", "# about:",
then the QR text. Times are chosen so every verdict is the same at "now" and at any later date
before 2100.
"""
import base64
import json
import os
import sys

import base58
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

NOW = 1767312000            # 2026-01-02T00:00:00Z
IAT = 1767225600            # 2026-01-01T00:00:00Z
FAR = 4102444800            # 2100-01-01T00:00:00Z
P = 2**256 - 2**224 + 2**192 + 2**96 - 1   # the P-256 field prime


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def key(scalar):
    return ec.derive_private_key(scalar, ec.SECP256R1())


def compressed(public_key):
    n = public_key.public_numbers()
    return bytes([2 + (n.y & 1)]) + n.x.to_bytes(32, "big")


def did_of(raw33):
    return "did:key:z" + base58.b58encode(b"\x80\x24" + raw33).decode()


def jwk_of(public_key, crv="P-256"):
    n = public_key.public_numbers()
    return {"kty": "EC", "crv": crv, "x": b64(n.x.to_bytes(32, "big")), "y": b64(n.y.to_bytes(32, "big"))}


def encode(obj):
    # Solidarity's JSON is not canonical; compact separators, keys in insertion order.
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


HOLDER = key(0x1F2E3D4C5B6A79881726354453627180AABBCCDDEEFF00112233445566778899)
OTHER = key(0x0102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F20)
DID = did_of(compressed(HOLDER.public_key()))


def claims(did=DID, jwk=None, name="Aiko Watanabe", iat=IAT, nbf=IAT, exp=None, extra_subject=None, flat_only=False):
    jwk = jwk or jwk_of(HOLDER.public_key())
    subject = {
        "id": did,
        "name": name,
        "summary": "Organiser, Tokyo mutual aid",
        "sameAs": ["https://example.net/aiko", "did:key:z6MkehRgf7yJbgaGfYsdoAsKdBPE3dj2CYhowQdcjqSJgvVd"],
        "publicKeyJwk": jwk,
    }
    if not flat_only:
        subject["subject_core"] = {"name": name, "publicKeyJwk": jwk, "pronouns": "she/her"}
        subject["verified_contact_claims"] = {
            "jobTitle": "Coordinator",
            "worksFor": "Shibuya Solidarity Kitchen",
            "email": ["aiko@example.net"],
            "telephone": ["+81 80 1111 2222"],
        }
        subject["credential_meta"] = {"schemaVersion": 2, "updatedAt": "2026-01-01T00:00:00Z", "sharingLevel": "professional"}
    else:
        subject["jobTitle"] = "Coordinator"
        subject["worksFor"] = {"@type": "Organization", "name": "Shibuya Solidarity Kitchen"}
        subject["email"] = "aiko@example.net"
    subject.update(extra_subject or {})
    c = {
        "jti": "urn:uuid:9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d",
        "iss": did,
        "sub": did,
        "iat": iat,
        "nbf": nbf,
    }
    if exp is not None:
        c["exp"] = exp
    c["vc"] = {
        "@context": ["https://www.w3.org/2018/credentials/v1"],
        "type": ["VerifiableCredential", "BusinessCardCredential"],
        "issuer": did,
        "issuanceDate": "2026-01-01T00:00:00Z",
        "credentialSubject": subject,
    }
    return c


def header(alg="ES256", did=DID):
    return {"alg": alg, "typ": "JWT", "cty": "application/vc+jwt", "kid": did + "#keys-1"}


def sign(h, c, signer=HOLDER, der=False, raw_payload=None):
    signing_input = b64(encode(h)) + "." + (raw_payload or b64(encode(c)))
    signature = signer.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
    if not der:
        r, s = decode_dss_signature(signature)
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return signing_input + "." + b64(signature)


def vectors():
    out = []

    def add(name, verdict, about, text):
        out.append((name, verdict, about, text))

    add("01-valid", "valid", "a didSigned card as Solidarity writes it, signature r || s", sign(header(), claims()))
    add("02-valid-der", "valid", "the same card with a DER signature, which Solidarity also accepts", sign(header(), claims(), der=True))
    add("03-valid-flat", "valid", "only the older flat members, worksFor as an object, exp in 2100",
        sign(header(), claims(flat_only=True, exp=FAR)))
    add("04-valid-hostile-text", "valid",
        "a valid card whose name holds ESC, a bidi override and a newline: shown escaped, never raw",
        sign(header(), claims(name="Aiko\u001b[31m \u202eevil\u202c\nWatanabe")))
    good = sign(header(), claims())
    h, p, s = good.split(".")
    tampered = b64(encode(claims(name="Mallory")))
    add("10-tampered-payload", "bad-signature", "the payload changed after signing (name), signature kept", h + "." + tampered + "." + s)
    add("11-wrong-jwk", "key-mismatch", "signed by the holder, but the embedded JWK is another key",
        sign(header(), claims(jwk=jwk_of(OTHER.public_key()))))
    add("12-expired", "expired", "exp one day after iat, long past", sign(header(), claims(exp=IAT + 86400)))
    add("13-alg-none", "unsupported-algorithm", "alg none and an empty signature",
        b64(encode(header("none"))) + "." + b64(encode(claims())) + ".")
    add("14-alg-lowercase", "unsupported-algorithm", "alg es256: names are case-sensitive", sign(header("es256"), claims()))
    add("15-alg-trailing-space", "unsupported-algorithm", "alg \"ES256 \"", sign(header("ES256 "), claims()))
    add("16-not-yet-valid", "not-yet-valid", "nbf in 2100", sign(header(), claims(nbf=FAR)))
    add("17-jwk-other-curve", "key-mismatch", "the embedded JWK says crv P-384",
        sign(header(), claims(jwk=jwk_of(HOLDER.public_key(), crv="P-384"))))
    add("18-signed-by-other-key", "bad-signature", "iss and JWK are the holder's, the signature another key's",
        sign(header(), claims(), signer=OTHER))
    add("19-kid-other-did", "key-mismatch", "kid names another did:key",
        sign(header(did=did_of(compressed(OTHER.public_key()))), claims()))
    raw = encode(claims())
    duplicate = raw.replace(b'"iat":', b'"iat":%d,"iat":' % IAT, 1)
    add("20-duplicate-member", "malformed", "the payload names \"iat\" twice", sign(header(), None, raw_payload=b64(duplicate)))
    huge = raw.replace(b'"iat":%d' % IAT, b'"iat":1e300', 1)
    add("21-huge-iat", "malformed", "iat 1e300", sign(header(), None, raw_payload=b64(huge)))
    fraction = raw.replace(b'"iat":%d' % IAT, b'"iat":%d.5' % IAT, 1)
    add("22-fractional-iat", "malformed", "iat with a fraction", sign(header(), None, raw_payload=b64(fraction)))
    ed = "did:key:z6MkehRgf7yJbgaGfYsdoAsKdBPE3dj2CYhowQdcjqSJgvVd"
    add("23-iss-ed25519", "malformed", "iss is an Ed25519 did:key", sign(header(did=ed), claims(did=ed)))
    off_curve = did_of(b"\x02" + (P + 1).to_bytes(32, "big"))
    add("24-iss-x-not-below-p", "malformed", "iss holds x = p + 1, a non-canonical coordinate",
        sign(header(did=off_curve), claims(did=off_curve)))
    padded = good.split(".")
    add("25-padded-base64url", "malformed", "the payload segment ends in = padding", padded[0] + "." + padded[1] + "=." + padded[2])
    add("26-four-segments", "malformed", "a fourth segment", good + ".AAAA")
    add("27-sub-other", "key-mismatch", "sub names another did:key",
        sign(header(), dict(claims(), sub=did_of(compressed(OTHER.public_key())))))
    add("28-payload-not-object", "malformed", "the payload is a JSON array", sign(header(), None, raw_payload=b64(b"[1,2,3]")))
    add("29-crit", "unsupported-algorithm", "the header names a critical extension",
        sign(dict(header(), crit=["b64"], b64=False), claims()))
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    target = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "fixtures", "solidarity")
    os.makedirs(target, exist_ok=True)
    for name, verdict, about, text in vectors():
        with open(os.path.join(target, name + ".txt"), "w", encoding="utf-8", newline="\n") as f:
            f.write("# verdict: %s\n# now: %d\n# about: %s\n%s\n" % (verdict, NOW, about, text))
    with open(os.path.join(target, "holder.json"), "w", encoding="utf-8") as f:
        n = HOLDER.private_numbers()
        json.dump({"did": DID, "privateScalar": "%064x" % n.private_value, "jwk": jwk_of(HOLDER.public_key())}, f, indent=1)
        f.write("\n")
    print("wrote %d vectors to %s" % (len(vectors()), os.path.normpath(target)))


if __name__ == "__main__":
    main()
