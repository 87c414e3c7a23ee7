#!/usr/bin/env python3
"""Writes fixtures/qr/locator/: the finder-pattern locator's regression images (small PNGs).

perspective-N.png  one code under strong perspective (zbar alone gives up), text in .txt
crowd.png          nine different codes on one page, turned a little each; texts in crowd.txt
nocode-*.png       no QR code: a checkerboard, blocks like text, squares like finder patterns
dots.png, bold.png codes drawn with dotted or bold modules, in perspective
inverted-perspective.png  light modules on dark, in perspective
shear.png          a strong shear with some perspective
wide.jpg           a 3300-pixel-wide JPEG (decoded at 1/2 scale)
blur.png           a dense code blurred by half a module
squeezed.png       two-pixel modules in perspective, located at twice the size
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


# Codes zbar alone does not read, in perspective: modules drawn as dots, and drawn bold (ink spread).
def warp(img, corners, side, fill):
    src = np.float32([[0, 0], [img.shape[1], 0], [img.shape[1], img.shape[0]], [0, img.shape[0]]])
    dst = np.float32([[x * side, y * side] for x, y in corners])
    return cv2.warpPerspective(img, cv2.getPerspectiveTransform(src, dst), (side, side), flags=cv2.INTER_AREA, borderValue=fill)


def styled(text, style, scale=10, version=4):
    q = segno.make(text, error="h", version=version, micro=False)
    m = np.array([[bool(v) for v in row] for row in q.matrix])
    n = m.shape[0]
    img = np.full(((n + 8) * scale, (n + 8) * scale), 255, np.uint8)
    finder = np.zeros_like(m)
    for ox, oy in [(0, 0), (n - 7, 0), (0, n - 7)]:
        finder[oy:oy + 7, ox:ox + 7] = True
    for y in range(n):
        for x in range(n):
            if not m[y, x]:
                continue
            x0, y0 = (x + 4) * scale, (y + 4) * scale
            if finder[y, x]:
                img[y0:y0 + scale, x0:x0 + scale] = 0
            elif style == "dots":
                cv2.circle(img, (x0 + scale // 2, y0 + scale // 2), int(scale * 0.25), 0, -1)
            else:  # bold: each dark module spreads 0.3 of a module into its neighbours
                e = int(scale * 0.3)
                img[max(0, y0 - e):y0 + scale + e, max(0, x0 - e):x0 + scale + e] = 0
    return img


for style in ("dots", "bold"):
    text = f"MEISHI {style.upper()} MODULES"
    img = warp(styled(text, style), warps[0], 330, 255)
    save(f"{style}.png", img)
    open(os.path.join(out, f"{style}.txt"), "w").write(text)

# Light modules on dark, in perspective: the locator looks for finder patterns of both polarities.
text = "MEISHI LIGHT ON DARK"
img = 255 - code(text, 4, version=3, border=0)
save("inverted-perspective.png", warp(img, warps[0], 300, 30))
open(os.path.join(out, "inverted-perspective.txt"), "w").write(text)

# A strong shear with some perspective (the code's axes 55 degrees apart), where the finders'
# corners mislead the fitted maps: the parallelogram through the three finder centres, or the
# likeliest fit, still straightens it enough for zbar.
text = "MEISHI SHEAR"
img = code(text, 4, version=2, border=1)
corners = [(128, 109), (302, 48), (200, 198), (51, 298)]
save("shear.png", warp(img, [(x / 350, y / 350) for x, y in corners], 350, 200))
open(os.path.join(out, "shear.txt"), "w").write(text)

# A wide JPEG, decoded at 1/2 scale (DCT scaling): its longer side stays at 1600.
Image.fromarray(np.tile(np.linspace(40, 220, 3300).astype(np.uint8), (40, 1)), "L").save(os.path.join(out, "wide.jpg"), quality=60)

# A dense code blurred (Gaussian, sigma half a module): zbar and the straightened picture miss
# modules; the grid redrawn with a threshold from a window one module around each centre reads it.
text = "MEISHI BLUR " + "B" * 150
img = code(text, 5, border=4)
save("blur.png", cv2.GaussianBlur(img.astype(np.float32), (0, 0), 2.5).round().astype(np.uint8))
open(os.path.join(out, "blur.txt"), "w").write(text)

# Modules of two pixels or less in perspective: too small for the locator at this size; at twice
# the size (a small picture where nothing was read) it finds the three finders.
text = "MEISHI SQUEEZED"
img = code(text, 2, version=7, border=0)
save("squeezed.png", warp(img, [(0.15, 0.15), (0.85, 0.18), (0.80, 0.72), (0.22, 0.68)], 200, 255))
open(os.path.join(out, "squeezed.txt"), "w").write(text)
