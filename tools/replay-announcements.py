#!/usr/bin/env python3
"""A hostile host on the LAN for meishi's discovery tests (docs/PROTOCOL.md section 5.5).

It joins the announcement group and, for every announcement it hears from someone else, sends
  1. the same datagram again from its own address (a re-addressed replay), and
  2. the same datagram under a new session id, once sorting first and once sorting last, so that
     both the dialling and the serving rule meet a forged candidate carrying the victim's tag.
It never answers on TCP. Runs until killed or --seconds pass. Standard library only.
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
    ap.add_argument("--seconds", type=float, default=60)
    args = ap.parse_args()
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    rx.bind(("0.0.0.0", PORT))
    mreq = struct.pack("4s4s", socket.inet_aton(GROUP), socket.inet_aton(args.interface_address))
    rx.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
    rx.settimeout(0.2)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(args.interface_address))
    tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
    tx.bind((args.interface_address, 0))
    end = time.time() + args.seconds
    forged = 0
    while time.time() < end:
        try:
            data, (host, _) = rx.recvfrom(2048)
        except socket.timeout:
            continue
        if host == args.interface_address or len(data) < 24 or data[:4] != b"MSHD":
            continue
        tx.sendto(data, (GROUP, PORT))
        for first in (b"\x00", b"\xff"):
            tx.sendto(data[:5] + first + os.urandom(15) + data[21:], (GROUP, PORT))
            forged += 1
    print(f"forged {forged} announcements", flush=True)


if __name__ == "__main__":
    main()
