#!/usr/bin/env python3
"""Writes fixtures/qr/locator/: the finder-pattern locator's regression images (small PNGs).

perspective-N.png  one code under strong perspective (zbar alone gives up), text in .txt
crowd.png          nine different codes on one page, turned a little each; texts in crowd.txt
nocode-*.png       no QR code: a checkerboard, blocks like text, squares like finder patterns
Run with the project's .venv (segno, numpy, opencv-python-headless, pillow); seeded, so the
same files come out each time.
"""
import io
import os
import sys

import cv2
import numpy as np
import segno
from PIL import Image

out = sys.argv[1] if len(sys.argv) > 1 else "fixtures/qr/locator"
os.makedirs(out, exist_ok=True)
rnd = np.random.default_rng(14)


def code(text, scale, version=None, border=4):
    buf = io.BytesIO()
    segno.make(text, error="m", version=version, micro=False).save(buf, kind="png", scale=scale, border=border)
    return np.array(Image.open(buf).convert("L"))


def save(name, img):
    Image.fromarray(img.astype(np.uint8), "L").save(os.path.join(out, name), optimize=True)


# Perspective: the code's far edge shrinks to a fraction of the near one, as when a phone is
# held at an angle to the camera.
warps = [  # corners (tl, tr, br, bl) as fractions of the output side
    [(0.10, 0.05), (0.95, 0.22), (0.92, 0.78), (0.08, 0.95)],
    [(0.20, 0.15), (0.80, 0.10), (0.97, 0.95), (0.03, 0.85)],
    [(0.05, 0.30), (0.90, 0.05), (0.95, 0.95), (0.15, 0.70)],
    [(0.25, 0.05), (0.95, 0.25), (0.75, 0.95), (0.05, 0.75)],
]
for n, (corners, version) in enumerate(zip(warps, [3, 5, 7, 10]), 1):
    text = f"MEISHI LOCATOR TEST {n} " + "X" * (version * 6)
    img = code(text, 4, version=version, border=0)
    side = 360
    src = np.float32([[0, 0], [img.shape[1], 0], [img.shape[1], img.shape[0]], [0, img.shape[0]]])
    dst = np.float32([[x * side, y * side] for x, y in [corners[0], corners[1], corners[2], corners[3]]])
    m = cv2.getPerspectiveTransform(src, dst)
    warped = cv2.warpPerspective(img, m, (side, side), flags=cv2.INTER_AREA, borderValue=235)
    save(f"perspective-{n}.png", warped)
    open(os.path.join(out, f"perspective-{n}.txt"), "w").write(text)

# A crowd: nine codes of different versions, each turned a little, on one grey page.
page = np.full((620, 620), 225, np.uint8)
texts = []
for i in range(9):
    text = f"CROWD CODE {i + 1} " + "Y" * (i * 9)
    texts.append(text)
    img = Image.fromarray(code(text, 3, border=2))
    img = np.array(img.rotate(float(rnd.uniform(-20, 20)), expand=True, fillcolor=255, resample=Image.BILINEAR))
    y, x = 10 + (i // 3) * 205, 10 + (i % 3) * 205
    h, w = min(img.shape[0], 200), min(img.shape[1], 200)
    page[y:y + h, x:x + w] = img[:h, :w]
# Seen at an angle, as a phone sees a poster: zbar alone misses some of them.
m = cv2.getPerspectiveTransform(np.float32([[0, 0], [620, 0], [620, 620], [0, 620]]),
                                np.float32([[60, 20], [560, 90], [600, 560], [10, 600]]))
page = cv2.warpPerspective(page, m, (620, 620), flags=cv2.INTER_AREA, borderValue=225)
save("crowd.png", page)
open(os.path.join(out, "crowd.txt"), "w").write("\n".join(texts) + "\n")

# No code: shapes that tempt a finder-pattern locator, and nothing else.
board = np.kron(((np.indices((30, 30)).sum(axis=0)) % 2) * 255, np.ones((8, 8)))
save("nocode-checkerboard.png", board)
blocks = np.full((240, 320), 255, np.uint8)
for _ in range(400):
    x, y = rnd.integers(0, 300), rnd.integers(0, 230)
    blocks[y:y + rnd.integers(2, 9), x:x + rnd.integers(2, 14)] = 0
save("nocode-blocks.png", blocks)
finders = np.full((260, 260), 255, np.uint8)
for cx, cy in [(40, 40), (200, 40), (40, 200), (130, 130), (210, 190)]:  # lone finder patterns, no code
    for r, v in [(21, 0), (15, 255), (9, 0)]:
        finders[cy - r:cy + r, cx - r:cx + r] = v
save("nocode-finders.png", finders)
