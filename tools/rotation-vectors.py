#!/usr/bin/env python3
"""Vectors of key rotation (docs/PROTOCOL.md §10), computed without meishi.

    rotation-vectors.py                 prints the vectors as JSON (fixtures/messages/rotation-vectors.json)
    rotation-vectors.py --check FILE    exits 1 unless FILE holds exactly what this script computes

Shares no code with meishi (its key set-up is tools/vectorkit.py, shared with push-vectors.py):
each statement is signed with `cryptography`'s Ed25519 by the old and the new key over
"meishi-rotation-v1" || 0x00 || JCS (`rfc8785`) of its four signed members; the ROTATION frame of
`card push` is sealed with the Noise KK of §9.4 under the old X25519 key, with the keys, tag
and time of fixtures/messages/vectors.json. Statements that must be refused come with the
verdict a reader gives.
"""

import rfc8785

import vectorkit
from vectorkit import b64url, delivery, ed25519_did, pub, signed_card, x25519

FORMAT = "meishi-rotation-v1"


def signing_input(old_did, new_did, time):
    return FORMAT.encode() + b"\0" + rfc8785.dumps({"format": FORMAT, "newDID": new_did, "oldDID": old_did, "time": time})


def statement(old_seed, new_seed, time, old_signer=None, new_signer=None):
    """The statement from the key of `old_seed` to that of `new_seed` at `time` (JCS plus a
    newline); `old_signer`/`new_signer` sign in their place (a statement that must fail)."""
    old_key, _, old_did = ed25519_did(old_seed)
    new_key, _, new_did = ed25519_did(new_seed)
    message = signing_input(old_did, new_did, time)
    body = {"format": FORMAT, "oldDID": old_did, "newDID": new_did, "time": time,
            "oldSignature": b64url(ed25519_did(old_signer)[0].sign(message) if old_signer else old_key.sign(message)),
            "newSignature": b64url(ed25519_did(new_signer)[0].sign(message) if new_signer else new_key.sign(message))}
    return rfc8785.dumps(body) + b"\n"


def compute(messages):
    tag = bytes.fromhex(messages["tag"])
    unix_time = messages["unix_time"]
    time = unix_time - 120
    first = statement(0x01, 0x02, time)
    second = statement(0x02, 0x03, time + 60)
    # The card of the new key (seed 0x02) carries the new X25519 key (0x55).
    card = signed_card(0x02, pub(x25519(0x55)), time + 1)
    frame = bytes([0x66]) + len(first).to_bytes(2, "big") + first + card
    _, _, sealed_rotation, sealed_ack = delivery(tag, unix_time, frame, bytes([0x65]) + (time + 1).to_bytes(8, "big"))
    _, _, _, sealed_refusal = delivery(tag, unix_time, frame, bytes([0x62, 16]))
    _, _, old_did = ed25519_did(0x01)
    _, _, new_did = ed25519_did(0x02)
    return {
        "comment": "docs/PROTOCOL.md §10, made by tools/rotation-vectors.py without meishi. Ed25519 seeds of 32 equal bytes: "
                   "0x01 the old key, 0x02 the new, 0x03 the next; time is unix_time - 120. The ROTATION frame is sent as in "
                   "fixtures/messages/push-vectors.json (X25519 0x11 the old key of the sender, 0x22 the listener; Noise "
                   "ephemerals 0x33, 0x44), the card in it signed by seed 0x02 at time + 1 with the X25519 key 0x55. "
                   "Frames without their 4-byte length prefix.",
        "tag": tag.hex(), "unix_time": unix_time, "time": time, "old_did": old_did, "new_did": new_did,
        "signing_input": signing_input(old_did, new_did, time).hex(),
        "statement": first.decode(), "chain": (first + second).decode(), "card": card.decode(),
        "sealed_rotation": sealed_rotation.hex(), "sealed_rotation_ack": sealed_ack.hex(),
        "sealed_refusal_applied": sealed_refusal.hex(),
        "refused": [
            {"verdict": "bad-old-signature", "about": "the new key signed in the old key's place",
             "statement": statement(0x01, 0x02, time, old_signer=0x02).decode()},
            {"verdict": "bad-new-signature", "about": "signed by the old key alone (a third key in the new key's place)",
             "statement": statement(0x01, 0x02, time, new_signer=0x04).decode()},
            {"verdict": "bad-old-signature", "about": "the time changed after signing",
             "statement": statement(0x01, 0x02, time).decode().replace('"time":%d' % time, '"time":%d' % (time + 1))},
            {"verdict": "not-a-chain", "about": "two statements, the later first",
             "statement": (second + first).decode()},
            {"verdict": "same-key", "about": "a key replaced by itself",
             "statement": statement(0x01, 0x01, time).decode()},
        ],
    }


if __name__ == "__main__":
    vectorkit.main(compute, "rotation-vectors.py")
