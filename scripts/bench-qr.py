#!/usr/bin/env python3
"""Helpers for `make bench` (QR part): payloads for qrkit's generator, a 12-megapixel photo."""
import json
import random
import sys


def payloads(out, card_text, vcard_text):
    texts = [
        (card_text, "meishi", "meishi-card"),
        (vcard_text, "meishi", "vcard"),
        ("did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp", "w3c", "did:key"),
        ("https://example.org/mei", "meishi", "url"),
        ("MECARD:N:Tanaka,Mei;TEL:+819012345678;EMAIL:mei@example.org;;", "meishi", "mecard"),
        ("名刺交換 — 田中 芽衣 (Mei Tanaka) ünïcödé", "meishi", "utf8"),
        ("WIFI:T:WPA;S:meishi-lab;P:correct horse battery staple;;", "meishi", "wifi"),
    ]
    json.dump([dict(text=t, source=s, kind=k, bytes=len(t.encode())) for t, s, k in texts], open(out, "w"))


def photo(out, text):
    """A 4000x3000 JPEG: textured, unevenly lit background with a rotated QR code in it."""
    import numpy as np
    import segno
    from PIL import Image, ImageFilter
    rnd = np.random.default_rng(1)
    w, h = 4000, 3000
    yy, xx = np.mgrid[0:h, 0:w]
    light = 150 + 60 * np.sin(xx / 700.0) * np.cos(yy / 500.0)
    noise = rnd.normal(0, 12, (h, w))
    bg = np.clip(light + noise, 0, 255).astype(np.uint8)
    img = Image.fromarray(bg, "L").convert("RGB")
    qr = segno.make(text, error="m", micro=False)
    import io
    buf = io.BytesIO()
    qr.save(buf, kind="png", scale=14, border=4)
    code = Image.open(buf).convert("RGB").rotate(11, expand=True, fillcolor=(235, 235, 235))
    img.paste(code, (1400, 900))
    img = img.filter(ImageFilter.GaussianBlur(1.2))
    img.save(out, "JPEG", quality=88)


if __name__ == "__main__":
    if sys.argv[1] == "payloads":
        payloads(sys.argv[2], open(sys.argv[3]).read().strip("\n"), open(sys.argv[4]).read())
    elif sys.argv[1] == "photo":
        photo(sys.argv[2], open(sys.argv[3]).read().strip("\n"))
