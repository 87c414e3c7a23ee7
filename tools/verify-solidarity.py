#!/usr/bin/env python3
"""An independent check of a Solidarity didSigned card, by the rules the Solidarity app applies.

usage: verify-solidarity.py [--same-as DID] [--now UNIX] FILE|-

Reads the QR text (a compact JWS) and checks, with Python `cryptography` and `base58` only:
three base64url segments without padding; header alg exactly "ES256", typ "JWT", cty
"application/vc+jwt", kid "<iss>#keys-1"; iss a did:key of multicodec p256-pub (0x80 0x24 and a
33-byte compressed point on the curve), sub equal to iss; every embedded publicKeyJwk (EC, P-256)
the same key; the ECDSA P-256 / SHA-256 signature (64-byte r || s, or DER) over the ASCII
"header.payload";
nbf <= now < exp; a VerifiableCredential + BusinessCardCredential whose subject has a name,
subject_core, verified_contact_claims and credential_meta.schemaVersion 2; with --same-as, that
sameAs lists DID. Prints "valid: NAME" and exits 0, or prints the first failure and exits 1.
"""
import base64
import json
import sys
import time

import base58
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

ALPHABET = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


class Invalid(Exception):
    pass


def unb64(segment, what):
    if not segment or set(segment) - ALPHABET or len(segment) % 4 == 1:
        raise Invalid("%s is not base64url without padding" % what)
    data = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    if base64.urlsafe_b64encode(data).rstrip(b"=").decode() != segment:
        raise Invalid("%s is not canonical base64url" % what)
    return data


def strict_json(data, what):
    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise Invalid("%s has a duplicate member" % what)
        return dict(pairs)
    value = json.loads(data.decode("utf-8"), object_pairs_hook=no_duplicates)
    if not isinstance(value, dict):
        raise Invalid("%s is not an object" % what)
    return value


def p256_key(did):
    if not did.startswith("did:key:z"):
        raise Invalid("iss is not a did:key")
    raw = base58.b58decode(did[len("did:key:z"):])
    if raw[:2] != b"\x80\x24" or len(raw) != 35 or raw[2] not in (2, 3):
        raise Invalid("iss is not a P-256 did:key")
    if "did:key:z" + base58.b58encode(raw).decode() != did:
        raise Invalid("iss is not canonical base58btc")
    return ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), raw[2:])


def check(text, now, same_as=None):
    parts = text.split(".")
    if len(parts) != 3:
        raise Invalid("not three segments")
    header = strict_json(unb64(parts[0], "header"), "header")
    if header.get("alg") != "ES256":
        raise Invalid("alg is %r" % header.get("alg"))
    claims = strict_json(unb64(parts[1], "payload"), "payload")
    signature = unb64(parts[2], "signature")
    iss = claims.get("iss")
    key = p256_key(iss)
    if header.get("typ") != "JWT" or header.get("cty") != "application/vc+jwt" or header.get("kid") != iss + "#keys-1":
        raise Invalid("header typ/cty/kid are not Solidarity's: %r" % header)
    if claims.get("sub") != iss:
        raise Invalid("sub is not iss")
    numbers = key.public_numbers()
    vc = claims.get("vc") or {}
    if not {"VerifiableCredential", "BusinessCardCredential"} <= set(vc.get("type", [])):
        raise Invalid("not a BusinessCardCredential")
    subject = vc.get("credentialSubject") or {}
    core = subject.get("subject_core") or {}
    jwks = [j for j in (core.get("publicKeyJwk"), subject.get("publicKeyJwk")) if j is not None]
    if not jwks:
        raise Invalid("no embedded publicKeyJwk")
    for jwk in jwks:
        if jwk.get("kty") != "EC" or jwk.get("crv") != "P-256":
            raise Invalid("JWK is not EC P-256")
        x = int.from_bytes(unb64(jwk["x"], "JWK x"), "big")
        y = int.from_bytes(unb64(jwk["y"], "JWK y"), "big")
        if (x, y) != (numbers.x, numbers.y):
            raise Invalid("embedded JWK is not the key of iss")
    # r || s as JOSE writes it; Solidarity accepts DER as well.
    if len(signature) == 64:
        der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    else:
        der = signature
    try:
        key.verify(der, (parts[0] + "." + parts[1]).encode("ascii"), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise Invalid("bad signature")
    for name in ("iat", "nbf"):
        if not isinstance(claims.get(name), int):
            raise Invalid("%s is not integer seconds" % name)
    if claims["nbf"] > now:
        raise Invalid("not yet valid")
    if "exp" in claims and claims["exp"] <= now:
        raise Invalid("expired")
    if not str(claims.get("jti", "")).startswith("urn:uuid:"):
        raise Invalid("jti is not a urn:uuid")
    name = core.get("name") or subject.get("name")
    if not name or subject.get("name") != name:
        raise Invalid("no name, or subject_core and the flat name differ")
    if not isinstance(subject.get("verified_contact_claims"), dict):
        raise Invalid("no verified_contact_claims")
    if (subject.get("credential_meta") or {}).get("schemaVersion") != 2:
        raise Invalid("credential_meta.schemaVersion is not 2")
    if same_as and same_as not in subject.get("sameAs", []):
        raise Invalid("sameAs does not list %s" % same_as)
    return name


def main():
    args = sys.argv[1:]
    same_as, now = None, int(time.time())
    while args and args[0].startswith("--"):
        if args[0] == "--same-as":
            same_as, args = args[1], args[2:]
        elif args[0] == "--now":
            now, args = int(args[1]), args[2:]
        else:
            print(__doc__)
            return 2
    text = (sys.stdin.read() if args[0] == "-" else open(args[0], encoding="utf-8").read()).strip()
    try:
        print("valid: %s" % check(text, now, same_as))
        return 0
    except (Invalid, ValueError, KeyError, TypeError) as e:
        print("invalid: %s" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
