#!/usr/bin/env python3
"""Turns a clean QR image into something like a phone photo of a screen, for scan tests.

usage: photograph.py IN.png OUT.jpg [ANGLE BLUR QUALITY]   (defaults: 12 degrees, blur 1.5, JPEG 70)

The code is rotated, placed on a grey 2000x1500 background, seen in perspective (as from a hand-held
phone), blurred, lit unevenly, given sensor noise (a fixed seed) and saved as JPEG. Needs Pillow and
NumPy (the .venv that `make test` sets up).
"""
import sys

import numpy as np
from PIL import Image, ImageFilter


def main():
    src, out = sys.argv[1], sys.argv[2]
    angle, blur, quality = (float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])) if len(sys.argv) > 5 else (12.0, 1.5, 70)
    code = Image.open(src).convert("RGBA").convert("L")
    scene = Image.new("L", (2000, 1500), 90)
    scene.paste(code.rotate(angle, expand=True, fillcolor=255, resample=Image.BICUBIC), (300, 150))
    w, h = scene.size
    photo = scene.transform((w, h), Image.QUAD, (40, 30, 0, h, w, h - 20, w - 60, 0), resample=Image.BICUBIC)
    photo = photo.filter(ImageFilter.GaussianBlur(blur))
    pixels = np.asarray(photo).astype(float) * np.linspace(0.75, 1.1, w)[None, :]
    pixels += np.random.default_rng(1).normal(0, 6, pixels.shape)
    Image.fromarray(np.clip(pixels, 0, 255).astype("uint8")).save(out, quality=quality)
    return 0


if __name__ == "__main__":
    sys.exit(main())
