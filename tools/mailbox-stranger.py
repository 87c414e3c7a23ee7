#!/usr/bin/env python3
"""A stranger on a magic-wormhole mailbox server who takes the second seat of a meishi
`exchange --code N-... --relay` and misbehaves there (issue 25's attacker), without meishi.

    mailbox-stranger.py WS_URL NAMEPLATE MODE [TRANSIT]

It binds with meishi's appid and a side of its own, claims NAMEPLATE (the honest side claimed it
first and waits), opens the mailbox, reads what the honest side added (its hints, its nonce),
then, by MODE:

  garbage   adds a transit nonce that is not hex
  oversize  adds hints whose body is 256 KiB of hex
  escape    binds with a side holding terminal escapes and adds a well-formed nonce and hints
            whose hostname holds escapes too
  silent    adds nothing
  transit   adds a well-formed nonce (no hints: transit v1), asks the transit relay to pair it
            under the token both sides derive, and once paired sends 64 random bytes where the
            session's first frame belongs, then reads what comes back
  hello     the same, with a well-framed plain-handshake HELLO (no --code) holding escapes

and stays 10 s (or until the server closes) before closing. Prints one line per message it got
on stderr. Python's standard library only: the WebSocket client is written out here (RFC 6455,
client frames masked, text frames, pings answered).
"""
import base64
import hashlib
import json
import os
import socket
import struct
import sys
import time
import urllib.parse

APPID = "meishi.example/exchange-v1"


class WebSocket:
    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port or 80), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
                           % (u.path or "/", u.hostname, u.port or 80, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                sys.exit("mailbox-stranger: the server closed during the upgrade")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            sys.exit("mailbox-stranger: no WebSocket upgrade: %r" % head[:80])

    def send(self, value):
        payload = json.dumps(value).encode()
        mask = os.urandom(4)
        n = len(payload)
        header = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                                  bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else
                                  bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _exactly(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise EOFError
            out += chunk
        return out

    def receive(self):
        """The next text message as JSON; None once the server closed."""
        while True:
            try:
                b0, b1 = self._exactly(2)
                n = b1 & 0x7F
                if n == 126:
                    n = struct.unpack(">H", self._exactly(2))[0]
                elif n == 127:
                    n = struct.unpack(">Q", self._exactly(8))[0]
                payload = self._exactly(n)
            except (EOFError, ConnectionError, socket.timeout):
                return None
            opcode = b0 & 0x0F
            if opcode == 0x8:
                return None
            if opcode == 0x9:  # ping: pong with the same payload
                mask = os.urandom(4)
                self.sock.sendall(bytes([0x8A, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
                continue
            if opcode == 0x1:
                return json.loads(payload)


def into_session(address, token, side, first):
    """Through the transit relay at tcp:HOST:PORT into the honest side's session: `first` for its first frame."""
    _, host, port = address.split(":")
    t = socket.create_connection((host, int(port)), timeout=15)
    t.sendall(("please relay %s for side %s\n" % (token, side)).encode())
    answer = b""
    while not answer.endswith(b"\n"):
        chunk = t.recv(1)
        if not chunk:
            print("mailbox-stranger: the transit relay closed before pairing", file=sys.stderr)
            return
        answer += chunk
    print("mailbox-stranger: the transit relay answered %r" % answer, file=sys.stderr)
    t.sendall(first)
    got = b""
    try:
        while len(got) < 1 << 20:
            chunk = t.recv(4096)
            if not chunk:
                break
            got += chunk
    except (socket.timeout, ConnectionError):
        pass
    print("mailbox-stranger: the session gave %d bytes: %s" % (len(got), got.hex()), file=sys.stderr)


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[3] not in ("garbage", "oversize", "escape", "silent", "transit", "hello"):
        sys.exit(__doc__)
    url, nameplate, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    transit = sys.argv[4] if len(sys.argv) == 5 else "tcp:127.0.0.1:4001"
    ws = WebSocket(url)
    side = "\x1b[31mstranger\x1b]0;owned\x07" if mode == "escape" else os.urandom(8).hex()
    ws.send({"type": "bind", "appid": APPID, "side": side})
    ws.send({"type": "claim", "nameplate": nameplate})
    honest = {}
    misbehaved = False
    until = time.time() + 30
    while time.time() < until:
        m = ws.receive()
        if m is None:
            print("mailbox-stranger: the server closed", file=sys.stderr)
            return
        print("mailbox-stranger: got %s %s" % (m.get("type"), m.get("phase", "")), file=sys.stderr)
        if m.get("type") == "claimed":
            ws.send({"type": "open", "mailbox": m["mailbox"]})
        elif m.get("type") == "message" and m.get("side") != side:
            honest[m.get("phase")] = (m.get("side"), m.get("body"))
        if not misbehaved and "meishi-transit-v1" in honest:
            misbehaved = True
            until = time.time() + 10
            if mode == "garbage":
                ws.send({"type": "add", "phase": "meishi-transit-v1", "body": "zz" * 32})
            elif mode == "oversize":
                ws.send({"type": "add", "phase": "meishi-hints-v1", "body": "7b" * (128 * 1024)})
            elif mode == "escape":
                hints = json.dumps({"direct-tcp-v1": [{"hostname": "\x1b[2J10.0.0.9", "port": 9}]}).encode()
                ws.send({"type": "add", "phase": "meishi-hints-v1", "body": hints.hex()})
                ws.send({"type": "add", "phase": "meishi-transit-v1", "body": os.urandom(32).hex()})
            elif mode in ("transit", "hello"):
                nonce = os.urandom(32)
                ws.send({"type": "add", "phase": "meishi-transit-v1", "body": nonce.hex()})
                theirs = honest["meishi-transit-v1"]
                pair = sorted([(side, nonce), (theirs[0], bytes.fromhex(theirs[1]))], key=lambda p: p[0].encode())
                token = hashlib.sha256(b"meishi-transit-token-v1\0" + b"".join(s.encode() + n for s, n in pair)).hexdigest()
                hello = b"\x01\x01" + b"\x1b[2J\x1b]0;owned\x07".ljust(32, b"\x1b")
                into_session(transit, token, side, struct.pack(">I", len(hello)) + hello if mode == "hello" else os.urandom(64))
                return
    print("mailbox-stranger: done (%s)" % mode, file=sys.stderr)


main()
