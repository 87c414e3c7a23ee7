#!/usr/bin/env python3
"""Helpers for `make bench` (QR part): payloads for qrkit's generator, 12-megapixel photos, the report."""
import json
import os
import statistics
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


def photo(out, text, code=True):
    """A 4000x3000 JPEG: textured, unevenly lit background with a rotated QR code in it (or none)."""
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
    qr_image = Image.open(buf).convert("RGB").rotate(11, expand=True, fillcolor=(235, 235, 235))
    if code:
        img.paste(qr_image, (1400, 900))
    img = img.filter(ImageFilter.GaussianBlur(1.2))
    img.save(out, "JPEG", quality=88)


REAL_PHOTOS = ("zxing-java", "jsqr")


def norm(t):
    return "\n".join(l.rstrip() for l in t.replace("\r\n", "\n").split("\n")).rstrip()


def rejudge(d, set_paths):
    """scan --raw prints every code on its own line; qrkit's cmd: decoder judges all of stdout as
    one text: an image holding the labelled code among others is a success (counts in `d` fixed)."""
    set_dirs = {os.path.basename(p.rstrip("/")): p for p in set_paths}
    for path, s in d["sets"].items():
        for item in s["detail"]:
            for dec, r in item.items():
                if not isinstance(r, dict) or not dec.startswith("cmd") or r.get("v") != "wrong":
                    continue
                lp = os.path.join(set_dirs.get(path, path), item["id"] + ".txt")
                label = open(lp, encoding="utf-8", newline="").read() if os.path.exists(lp) else None
                out, lab = norm((r.get("out") or [""])[0]), norm(label or "")
                if label is not None and (out.startswith(lab + "\n") or out.endswith("\n" + lab) or ("\n" + lab + "\n") in out):
                    c = s["summary"][dec]
                    c["wrong"] -= 1
                    c["ok"] += 1
                    r["v"] = "ok"
                    if item.get("category"):
                        c["by_category"][item["category"]]["ok"] += 1
                        c["by_category"][item["category"]]["wrong"] -= 1


def report(scan_json, set_paths):
    """Per set, per category, real photos apart, and per-image time against zbarimg."""
    d = json.load(open(scan_json))
    rejudge(d, set_paths)
    short = lambda name: "meishi" if name.startswith("cmd") else name
    tot, real, times, cats = {}, {}, {}, {}
    for path, s in d["sets"].items():
        name = path.rstrip("/").split("/")[-1]
        for item in s["detail"]:
            for dec, r in item.items():
                if isinstance(r, dict):
                    times.setdefault(short(dec), []).append(r["ms"])
        line = f"{name:16}"
        for dec, c in s["summary"].items():
            k = short(dec)
            for acc in [tot] + ([real] if name in REAL_PHOTOS else []):
                t = acc.setdefault(k, dict(ok=0, labeled=0, wrong=0, fp=0))
                for f in t:
                    t[f] += c[f]
            rate = f"{c['ok']}/{c['labeled']}" if c["labeled"] else f"fp {c['fp']}/{c['n']}"
            line += f"  {k} {rate} w{c['wrong']} {c['time_median_ms']:.0f}ms"
            for cat, cc in (c.get("by_category") or {}).items():
                cats.setdefault(name, {}).setdefault(cat, {})[k] = f"{cc['ok']}/{cc['n']}"
        print(line)
    for name, per in cats.items():
        print(f"by category, {name}:")
        for cat, by in sorted(per.items()):
            print(f"  {cat:18}" + "".join(f"  {k} {v:>6}" for k, v in by.items()))
    for label, acc in (("TOTAL", tot), ("REAL PHOTOS (" + ", ".join(REAL_PHOTOS) + ")", real)):
        print(label)
        for k, t in acc.items():
            rate = t["ok"] / t["labeled"] if t["labeled"] else 0
            print(f"  {k:9} decoded {t['ok']}/{t['labeled']} ({rate:.1%}), wrong {t['wrong']}, false positives {t['fp']}")
    med = {k: statistics.median(v) for k, v in times.items()}
    print("per-image median over every image: " + ", ".join(f"{k} {v:.0f} ms" for k, v in med.items())
          + " (zxing-cpp in process, the others one process per image)")
    if "meishi" in med and "zbarimg" in med:
        print(f"ratio meishi / zbarimg per-image median  {med['meishi'] / med['zbarimg']:.2f}   (target: <= 1)")


def inprocess(lines, scan_json):
    """Per-image time of `meishi-bench scan` (decode + scan, no process start-up), per set, beside
    the per-process medians of the same images."""
    rows = [json.loads(l) for l in open(lines) if l.strip()]
    d = json.load(open(scan_json))
    per = {}
    for r in rows:
        per.setdefault(os.path.basename(os.path.dirname(r["path"])), []).append(r["ms"])
    print("in process (meishi-bench scan: decode + scan, no start-up), per-image median:")
    for path, s in d["sets"].items():
        name = path.rstrip("/").split("/")[-1]
        if name in per:
            procs = "  ".join(f"{'meishi' if k.startswith('cmd') else k} {c['time_median_ms']:.0f}ms" for k, c in s["summary"].items())
            print(f"  {name:16}  meishi in process {statistics.median(per[name]):5.1f} ms   (per process: {procs})")
    print(f"  every image       meishi in process {statistics.median([r['ms'] for r in rows]):5.1f} ms, p95 "
          f"{sorted(r['ms'] for r in rows)[int(0.95 * (len(rows) - 1))]:.0f} ms")


if __name__ == "__main__":
    if sys.argv[1] == "payloads":
        payloads(sys.argv[2], open(sys.argv[3]).read().strip("\n"), open(sys.argv[4]).read())
    elif sys.argv[1] == "photo":
        photo(sys.argv[2], open(sys.argv[3]).read().strip("\n"), code="--no-code" not in sys.argv)
    elif sys.argv[1] == "report":
        report(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "inprocess":
        inprocess(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "median-ms":
        print("%.1f" % statistics.median(json.loads(l)["ms"] for l in sys.stdin if l.strip()))
