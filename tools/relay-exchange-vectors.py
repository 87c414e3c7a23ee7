#!/usr/bin/env python3
"""Vectors of `meishi exchange --code --relay` on the mailbox server and the transit relay
(docs/PROTOCOL.md §5.8), computed without meishi.

    relay-exchange-vectors.py                 prints the vectors as JSON (fixtures/relay-exchange-vectors.json)
    relay-exchange-vectors.py --check FILE    exits 1 unless FILE holds exactly what this script computes

Two sides meet on nameplate 7, the server's mailbox "mb1": side 0101010101010101 with nonce 32 bytes
0x11 and the direct hint 10.0.0.1:4567, side 0202020202020202 with nonce 32 bytes 0x22 and two hints.
For each side the WebSocket text frames it sends, in order (bind, claim; once claimed open, its
hints, its nonce; once the other's nonce is in, release; close "happy" at the end), each the JCS
form of its JSON (sorted members, no spaces: json.dumps with sort_keys and compact separators
gives the same bytes here); then the transit token, which side dials, the relay request line,
both role lines of transit v2, go and nevermind. Python's json and hashlib only.
"""
import hashlib
import json

import vectorkit

APPID = "meishi.example/exchange-v1"


def jcs(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def side_messages(side, nameplate, mailbox, nonce, hints):
    hints_body = jcs({"direct-tcp-v1": [{"hostname": h, "port": p} for h, p in hints]}).encode()
    return {
        "side": side,
        "nonce": nonce.hex(),
        "hints_body": hints_body.decode(),
        "sends": [
            jcs({"type": "bind", "appid": APPID, "side": side}),
            jcs({"type": "claim", "nameplate": str(nameplate)}),
            jcs({"type": "open", "mailbox": mailbox}),
            jcs({"type": "add", "phase": "meishi-hints-v1", "body": hints_body.hex()}),
            jcs({"type": "add", "phase": "meishi-transit-v1", "body": nonce.hex()}),
            jcs({"type": "release", "nameplate": str(nameplate)}),
            jcs({"type": "close", "mailbox": mailbox, "mood": "happy"}),
        ],
    }


def compute(_messages):
    nameplate, mailbox = 7, "mb1"
    low = side_messages("0101010101010101", nameplate, mailbox, bytes([0x11]) * 32, [("10.0.0.1", 4567)])
    high = side_messages("0202020202020202", nameplate, mailbox, bytes([0x22]) * 32, [("10.0.0.2", 80), ("192.168.1.9", 65535)])
    # The side that sorts first as bytes is the dialer, and comes first in the token.
    token = hashlib.sha256(b"meishi-transit-token-v1\x00" + low["side"].encode() + bytes.fromhex(low["nonce"])
                           + high["side"].encode() + bytes.fromhex(high["nonce"])).hexdigest()
    return {
        "comment": "docs/PROTOCOL.md §5.8, made by tools/relay-exchange-vectors.py without meishi. Every text is sent as its "
                   "UTF-8 bytes; a relay request and a role line end with a newline.",
        "appid": APPID, "nameplate": nameplate, "mailbox": mailbox,
        "low": low, "high": high,
        "token": token, "dialer_side": low["side"],
        "relay_request_low": "please relay %s for side %s\n" % (token, low["side"]),
        "role_line_dialer": "meishi-transit-v2 dialer %s\n" % token,
        "role_line_listener": "meishi-transit-v2 listener %s\n" % token,
        "go": "go\n", "nevermind": "nevermind\n",
    }


if __name__ == "__main__":
    vectorkit.main(compute, "relay-exchange-vectors.py")
