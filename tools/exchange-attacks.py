#!/usr/bin/env python3
"""A stranger on the LAN against meishi's exchange (issue 22, "also measured").

Four attacks, one per subcommand, each printing one line of what it did:
  idle      K idle TCP connections to a listener (from --sources addresses in turn), held open
            for --seconds: they send nothing.
  hellos    N connections (from --sources in turn) that each send one well-formed PAKE HELLO (4 + 18 bytes: what a
            `--code` dialer sends first), wait for the listener's REPLY, and hang up.
  alias     listens to the announcement group and, once it hears a peer with an alias, announces
            a forged peer (a new session id, no TCP listener behind it) carrying that alias,
            every 250 ms until --seconds pass.
  sessions  announces --ids forged session ids carrying the code number --nameplate, spread over
            the --sources addresses (which must be this host's), each id every 500 ms, until
            --seconds pass; nothing listens on TCP behind them.
See docs/PROTOCOL.md sections 5.4-5.6 for the wire formats. Standard library only.
"""
import argparse
import os
import signal
import socket
import struct
import time

GROUP, PORT = "239.255.77.23", 47824
PAKE_HELLO, VERSION = 0x04, 1
stopped = []  # SIGTERM ends an attack early; it still says what it did
signal.signal(signal.SIGTERM, lambda *_: stopped.append(True))
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])  # a parent may start us with it blocked


def announcement(session_id, port, nameplate=None, alias=None):
    flags = (1 if nameplate is not None else 0) | (2 if alias is not None else 0)
    out = b"MSHD" + bytes([1]) + session_id + struct.pack(">H", port) + bytes([flags])
    if nameplate is not None:
        out += struct.pack(">H", nameplate)
    if alias is not None:
        out += bytes([len(alias)]) + alias
    return out


def sender(address):
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(address))
    tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
    tx.bind((address, 0))
    return tx


def connect(host, port, source):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if source:
        s.bind((source, 0))
    s.settimeout(2)
    s.connect((host, port))
    return s


def idle(args):
    sources = args.sources.split(",") if args.sources else [None]
    held = []
    for n in range(args.count):
        try:
            held.append(connect(args.host, args.port, sources[n % len(sources)]))
        except OSError as e:
            print(f"connection {n + 1} failed: {e}", flush=True)
    print(f"holding {len(held)} idle connections from {len(sources)} addresses", flush=True)
    time.sleep(args.seconds)
    for s in held:
        s.close()


def hellos(args):
    started = time.time()
    sent = replies = 0
    sources = args.sources.split(",") if args.sources else [None]
    for n in range(args.count):
        try:
            s = connect(args.host, args.port, sources[n % len(sources)])
            body = bytes([PAKE_HELLO, VERSION]) + os.urandom(16)
            frame = struct.pack(">I", len(body)) + body
            s.sendall(frame)
            sent += len(frame)
            if s.recv(4):
                replies += 1
            s.close()
        except OSError as e:
            print(f"connection failed: {e}", flush=True)
    took = (time.time() - started) * 1000
    print(f"sent {sent} bytes on {args.count} connections, {replies} replies, in {took:.0f} ms", flush=True)


def alias(args):
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    rx.bind(("0.0.0.0", PORT))
    mreq = struct.pack("4s4s", socket.inet_aton(GROUP), socket.inet_aton(args.interface_address))
    rx.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
    rx.settimeout(0.05)
    tx = sender(args.interface_address)
    end = time.time() + args.seconds
    forged, copied, sent, last = None, None, 0, 0.0
    while time.time() < end and not stopped:
        try:
            data, (host, _) = rx.recvfrom(2048)
            if forged is None and host != args.interface_address and len(data) >= 24 and data[:4] == b"MSHD" and data[23] & 2:
                at = 24 + (2 if data[23] & 1 else 0)
                copied = data[at + 1:at + 1 + data[at]]
                nameplate = struct.unpack(">H", data[24:26])[0] if data[23] & 1 else None
                forged = announcement(os.urandom(16), 47000 + os.getpid() % 1000, nameplate, copied)
        except socket.timeout:
            pass
        if forged and time.time() - last >= 0.25:
            try:
                tx.sendto(forged, (GROUP, PORT))
            except OSError:  # the network went away: the test is over
                break
            sent += 1
            last = time.time()
    print(f"sent {sent} forged announcements carrying the alias {copied!r}", flush=True)


def sessions(args):
    sources = args.sources.split(",")
    txs = [sender(a) for a in sources]
    ids = [(txs[n % len(txs)], announcement(os.urandom(16), 47000 + n, args.nameplate)) for n in range(args.ids)]
    end = time.time() + args.seconds
    sent = 0
    while time.time() < end and not stopped:
        round_start = time.time()
        try:
            for tx, datagram in ids:
                tx.sendto(datagram, (GROUP, PORT))
                sent += 1
        except OSError:  # the network went away: the test is over
            break
        time.sleep(max(0, 0.5 - (time.time() - round_start)))
    print(f"sent {sent} datagrams for {args.ids} session ids from {len(sources)} addresses", flush=True)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="attack", required=True)
    p = sub.add_parser("idle")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--sources", help="comma-separated source addresses, used in turn")
    p.add_argument("--seconds", type=float, default=30)
    p = sub.add_parser("hellos")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--count", type=int, default=3)
    p.add_argument("--sources", help="comma-separated source addresses, used in turn")
    p = sub.add_parser("alias")
    p.add_argument("--interface-address", required=True)
    p.add_argument("--seconds", type=float, default=20)
    p = sub.add_parser("sessions")
    p.add_argument("--sources", required=True, help="comma-separated addresses of this host")
    p.add_argument("--ids", type=int, default=64)
    p.add_argument("--nameplate", type=int, required=True)
    p.add_argument("--seconds", type=float, default=40)
    args = ap.parse_args()
    {"idle": idle, "hellos": hellos, "alias": alias, "sessions": sessions}[args.attack](args)


if __name__ == "__main__":
    main()
