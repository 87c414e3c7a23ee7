#!/usr/bin/env python3
"""Vectors of `meishi card push` (docs/PROTOCOL.md §9.7), computed without meishi.

    push-vectors.py                 prints the vectors as JSON (fixtures/messages/push-vectors.json)
    push-vectors.py --check FILE    exits 1 unless FILE holds exactly what this script computes

Shares no code with meishi (its key set-up is tools/vectorkit.py): Noise_KK_25519_ChaChaPoly_SHA256 written out from the Noise
specification (revision 34) with `cryptography`'s X25519, ChaCha20-Poly1305, SHA-256 and HMAC;
the card signed with `cryptography`'s Ed25519 over JCS (`rfc8785`) as §2.2 says. Before it
prints anything it recomputes the HELLO, REPLY and sealed ENVELOPE of fixtures/messages/vectors.json
(§9.4, made by meishi) from the same keys, so this Noise is checked against meishi's and the
published cacophony vector meishi's is checked against.
"""
import sys

import vectorkit
from vectorkit import delivery, pub, signed_card, x25519


def compute(messages):
    tag = bytes.fromhex(messages["tag"])
    unix_time = messages["unix_time"]
    # The message vectors first: the same keys give meishi's HELLO, REPLY and sealed envelope.
    envelope = bytes.fromhex(messages["envelope"])
    ack = bytes([0x61]) + bytes.fromhex(messages["envelope_id"]) + b"\0"
    hello, reply, sealed, sealed_ack = delivery(tag, unix_time, bytes([0x60]) + envelope, ack)
    for name, mine in (("hello", hello), ("reply", reply), ("sealed_envelope", sealed), ("sealed_ack", sealed_ack)):
        if mine.hex() != messages[name]:
            sys.exit("push-vectors.py: this Noise KK does not give %s of fixtures/messages/vectors.json" % name)
    card_time = unix_time - 60
    card = signed_card(0x01, pub(x25519(0x11)), card_time)
    _, _, sealed_card, sealed_card_ack = delivery(tag, unix_time, bytes([0x64]) + card, bytes([0x65]) + card_time.to_bytes(8, "big"))
    _, _, _, sealed_refusal = delivery(tag, unix_time, bytes([0x64]) + card, bytes([0x62, 11]))
    return {
        "comment": "docs/PROTOCOL.md §9.7, made by tools/push-vectors.py without meishi. Keys, tag, time, HELLO and REPLY as in "
                   "fixtures/messages/vectors.json (X25519 0x11 sender, 0x22 listener; Noise ephemerals 0x33, 0x44); the card is "
                   "signed by the Ed25519 seed of 32 bytes 0x01 (the sender's DID) at unix_time - 60, written as JCS. "
                   "Frames without their 4-byte length prefix.",
        "tag": tag.hex(), "unix_time": unix_time, "hello": hello.hex(), "reply": reply.hex(),
        "card": card.decode(), "card_timestamp": card_time,
        "sealed_card": sealed_card.hex(), "sealed_card_ack": sealed_card_ack.hex(), "sealed_refusal_not_newer": sealed_refusal.hex(),
    }


if __name__ == "__main__":
    vectorkit.main(compute, "push-vectors.py")
