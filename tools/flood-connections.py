#!/usr/bin/env python3
"""A hostile host on the LAN for meishi's exchange tests (issue 22, finding 1).

It joins the announcement group (docs/PROTOCOL.md section 5.5) and, every --every seconds, opens
one TCP connection to the port of each peer it has heard announcing and writes a few bytes of
garbage on it, leaving it open for 2 s (so that some are always waiting to be served). Runs
until --seconds pass, then prints how many connections it opened. Standard library only.
"""
import argparse
import os
import socket
import struct
import time

GROUP, PORT = "239.255.77.23", 47824


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--interface-address", required=True, help="this host's IPv4 address")
    ap.add_argument("--every", type=float, default=0.05)
    ap.add_argument("--seconds", type=float, default=20)
    args = ap.parse_args()
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    rx.bind(("0.0.0.0", PORT))
    mreq = struct.pack("4s4s", socket.inet_aton(GROUP), socket.inet_aton(args.interface_address))
    rx.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
    rx.setblocking(False)
    targets, open_sockets = set(), []
    opened = 0
    end = time.time() + args.seconds
    next_round = time.time()
    while time.time() < end:
        try:
            while True:
                data, (host, _) = rx.recvfrom(2048)
                if host != args.interface_address and len(data) >= 24 and data[:4] == b"MSHD":
                    targets.add((host, struct.unpack(">H", data[21:23])[0]))
        except BlockingIOError:
            pass
        now = time.time()
        if now >= next_round:
            next_round = now + args.every
            for target in targets:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.settimeout(0.2)
                try:
                    s.connect(target)
                    s.send(b"\x00\x00\x00\x08" + os.urandom(8))
                    opened += 1
                    open_sockets.append((now, s))
                except OSError:
                    s.close()
        while open_sockets and now - open_sockets[0][0] > 2:
            open_sockets.pop(0)[1].close()
        time.sleep(0.005)
    print(f"opened {opened} connections to {len(targets)} ports", flush=True)


if __name__ == "__main__":
    main()
