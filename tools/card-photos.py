#!/usr/bin/env python3
"""Phone photos of printed business cards with QR codes, made up, for the scanner (issue 28).

  tools/card-photos.py gen OUT [--n 60] [--seed 28]   writes OUT/<id>.jpg + <id>.json (texts, kind)
  tools/card-photos.py eval OUT MEISHI                 codes found by meishi scan --raw, zxing-cpp
                                                        (PyPI zxing-cpp, in process) and zbarimg,
                                                        per kind of card and in all; wrong outputs

Each card is 90x55 mm drawn at 12 px/mm: a name line, text-like blocks, and one of these kinds
(cycled, so every kind gets n/6 cards):
  plain      one code, error level M, on a white card
  two        two codes side by side (a card and a URL), as a card with a contact and a web code
  logo       one code at level H with a logo over its centre (about 7 % of its area)
  small      one code of about 1 mm modules on a card seen from afar (2 px modules or fewer)
  dark       a dark card: the code printed light on dark (half of them) or on a white patch
  uneven     a white card under a lamp: bright spot and a shadow across the code
The card is then photographed in the manner of tools/photograph.py: turned, put on a desk of some
grey, seen in perspective from a hand-held phone, blurred, lit unevenly, given sensor noise and
saved as JPEG (quality 60-90), at 1600x1200. Everything comes from --seed: the same seed gives
the same photos. Needs the project's .venv (segno, numpy, opencv-python-headless, pillow,
zxing-cpp). The photos are not kept in git: make them again from the seed.
"""
import argparse
import io
import json
import os
import subprocess
import sys

KINDS = ["plain", "two", "logo", "small", "dark", "uneven"]
NAMES = ["Mei Tanaka", "Cleo Park", "Dev Rao", "Ana Souza", "Jonas Berg", "Yuki Sato", "Omar Haddad", "Lina Novak"]


def qr(text, scale, error="m"):
    import numpy as np
    import segno
    from PIL import Image
    buf = io.BytesIO()
    segno.make(text, error=error, micro=False).save(buf, kind="png", scale=scale, border=2)
    return np.array(Image.open(buf).convert("L"))


def payload(rnd, k, kind):
    name = NAMES[k % len(NAMES)]
    first, last = name.split()
    if kind == "two":
        return [f"BEGIN:VCARD\nVERSION:3.0\nN:{last};{first};;;\nFN:{name}\nTEL:+81 90 {rnd.integers(1000, 9999)} {rnd.integers(1000, 9999)}\n"
                f"EMAIL:{first.lower()}@example.org\nEND:VCARD", f"https://example.org/{first.lower()}-{k}"]
    if kind == "small":
        return [f"https://ex.org/{k}"]
    return [f"MECARD:N:{last},{first};TEL:+8190{rnd.integers(10000000, 99999999)};EMAIL:{first.lower()}.{k}@example.org;;"]


def card(rnd, k, kind):
    """(card image 1080x660, texts)."""
    import cv2
    import numpy as np
    W, H = 1080, 660
    texts = payload(rnd, k, kind)
    dark = kind == "dark"
    paper, ink = (40 + int(rnd.integers(0, 30)), 235) if dark else (245, 30 + int(rnd.integers(0, 40)))
    img = np.full((H, W), paper, np.uint8)
    cv2.putText(img, NAMES[k % len(NAMES)], (60, 120), cv2.FONT_HERSHEY_SIMPLEX, 2.0, ink, 4, cv2.LINE_AA)
    for line in range(5):  # text-like blocks: words of dashes
        x = 60
        while x < 560:
            w = int(rnd.integers(20, 90))
            cv2.rectangle(img, (x, 200 + line * 60), (min(560, x + w), 220 + line * 60), ink, -1)
            x += w + 14
    scale = {"small": 4, "two": 6}.get(kind, 8)
    codes = [qr(t, scale, "h" if kind == "logo" else "m") for t in texts]
    x = W - 40
    for c in reversed(codes):
        c = c.copy()
        if dark and k % 2 == 0:
            c = 255 - c  # light modules on the dark card, a quiet zone of card colour
            c = np.where(c > 128, 235, paper).astype(np.uint8)
        h, w = c.shape
        x -= w
        y = (H - h) // 2 + 40
        if kind == "logo":
            s = int(w * 0.27)
            cy, cx = h // 2, w // 2
            c[cy - s // 2:cy + s // 2, cx - s // 2:cx + s // 2] = 255
            cv2.circle(c, (cx, cy), s // 2 - 6, 50, -1)
            cv2.putText(c, "M", (cx - s // 4, cy + s // 5), cv2.FONT_HERSHEY_SIMPLEX, s / 60, 255, 3)
        img[y:y + h, x:x + w] = c
        x -= 30
    return img, texts


def photograph(rnd, img, kind):
    """The card as a phone sees it on a desk: 1600x1200 JPEG bytes."""
    import cv2
    import numpy as np
    W, H = 1600, 1200
    desk = int(rnd.integers(60, 200))
    h, w = img.shape
    size = 0.45 if kind == "small" else float(rnd.uniform(0.7, 0.9))
    cw = W * size
    ch = cw * h / w
    cx, cy = W / 2 + rnd.uniform(-100, 100), H / 2 + rnd.uniform(-80, 80)
    angle = np.radians(rnd.uniform(-25, 25))
    corners = np.array([[-cw / 2, -ch / 2], [cw / 2, -ch / 2], [cw / 2, ch / 2], [-cw / 2, ch / 2]])
    rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    pts = corners @ rot.T + [cx, cy]
    # Perspective: one side of the card nearer the phone than the other.
    squeeze = rnd.uniform(0.0, 0.18)
    side = int(rnd.integers(0, 4))
    a, b = side, (side + 1) % 4
    mid = (pts[a] + pts[b]) / 2
    pts[a] += (mid - pts[a]) * squeeze
    pts[b] += (mid - pts[b]) * squeeze
    m = cv2.getPerspectiveTransform(np.float32([[0, 0], [w, 0], [w, h], [0, h]]), np.float32(pts))
    photo = cv2.warpPerspective(img, m, (W, H), flags=cv2.INTER_AREA, borderValue=desk).astype(float)
    photo = cv2.GaussianBlur(photo, (0, 0), float(rnd.uniform(0.6, 1.6)))
    yy, xx = np.mgrid[0:H, 0:W]
    light = np.linspace(rnd.uniform(0.7, 0.95), rnd.uniform(1.0, 1.15), W)[None, :] * np.ones((H, 1))
    if kind == "uneven":
        sx, sy = cx + rnd.uniform(-200, 200), cy + rnd.uniform(-150, 150)
        light = light * (0.55 + 0.9 * np.exp(-((xx - sx) ** 2 + (yy - sy) ** 2) / (2 * 260.0 ** 2)))
        # A shadow (of the phone) across part of the card.
        edge = cx + rnd.uniform(-150, 150)
        light = light * np.where(xx + 0.3 * (yy - cy) < edge, 0.6, 1.0)
        light = cv2.GaussianBlur(light, (0, 0), 12)
    photo = photo * light + rnd.normal(0, 5, photo.shape)
    ok, jpg = cv2.imencode(".jpg", np.clip(photo, 0, 255).astype(np.uint8), [cv2.IMWRITE_JPEG_QUALITY, int(rnd.integers(60, 91))])
    return jpg.tobytes()


def gen(a):
    import numpy as np
    os.makedirs(a.out, exist_ok=True)
    for k in range(a.n):
        kind = KINDS[k % len(KINDS)]
        rnd = np.random.default_rng([a.seed, k])
        img, texts = card(rnd, k, kind)
        open(os.path.join(a.out, f"card-{k:03d}.jpg"), "wb").write(photograph(rnd, img, kind))
        json.dump(dict(kind=kind, texts=texts, seed=a.seed), open(os.path.join(a.out, f"card-{k:03d}.json"), "w"), ensure_ascii=False)


def evaluate(a):
    import zxingcpp
    from PIL import Image

    def meishi(path):
        p = subprocess.run([a.meishi, "scan", "--raw", path], capture_output=True, timeout=60)
        return p.stdout.decode("utf-8", "replace").split("\n") if p.returncode == 0 else []

    def zbarimg(path):
        p = subprocess.run(["zbarimg", "-q", "--raw", "-Sdisable", "-Sqrcode.enable", path], capture_output=True, timeout=60,
                           env=dict(os.environ, LC_ALL="C.UTF-8"))
        return p.stdout.decode("utf-8", "replace").split("\n")

    def zxing(path):
        return [r.text for r in zxingcpp.read_barcodes(Image.open(path), formats=zxingcpp.BarcodeFormat.QRCode)]

    decoders = [("meishi", meishi), ("zxing-cpp", zxing), ("zbarimg", zbarimg)]
    per = {}
    for f in sorted(os.listdir(a.out)):
        if not f.endswith(".json"):
            continue
        meta = json.load(open(os.path.join(a.out, f)))
        path = os.path.join(a.out, f[:-5] + ".jpg")
        truth = meta["texts"]
        for name, dec in decoders:
            outs = dec(path)
            # zbarimg and scan --raw print one code a line: a code whose text has lines is found
            # when all its lines are there in order.
            joined = "\n".join(outs)
            found = sum(1 for t in truth if t in outs or t in joined)
            if name == "zxing-cpp":
                wrong = sum(1 for o in outs if o not in truth)
            else:
                rest = joined
                for t in truth:
                    rest = rest.replace(t, "")
                wrong = sum(1 for line in rest.split("\n") if line.strip())
            for key in (meta["kind"], "all"):
                c = per.setdefault(key, {}).setdefault(name, [0, 0, 0])
                c[0] += found
                c[1] += len(truth)
                c[2] += wrong
    print(f"{'kind':8}" + "".join(f"  {n:>16}" for n, _ in decoders))
    for key in KINDS + ["all"]:
        if key in per:
            print(f"{key:8}" + "".join(f"  {per[key][n][0]:>5}/{per[key][n][1]:<3} w{per[key][n][2]:<3}" for n, _ in decoders))
    print("(codes found / codes on the cards, w = outputs that are no code on the card)")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("out")
    g.add_argument("--n", type=int, default=60)
    g.add_argument("--seed", type=int, default=28)
    e = sub.add_parser("eval")
    e.add_argument("out")
    e.add_argument("meishi")
    a = p.parse_args()
    gen(a) if a.cmd == "gen" else evaluate(a)
    sys.exit(0)
