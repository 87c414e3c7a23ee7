#!/usr/bin/env python3
"""The real-photo QR sets split once into a tuning half and a held-back half (issue 28).

The scanner is tuned on `tune` only; a change is kept when `held` improves or holds too, so the
held-back figures say what the scanner does on photos it has not seen.

Sets: the zxing-java and jsqr photos and the zxing-cpp samples in ../shared/corpus/qr, and the
zxing-cpp samples in fixtures/external (the same files as two of zxing-cpp-extra's: an image
whose bytes were listed already is left out, so no photo lands in both halves).
Split: per set and per upstream group (zxing-java's qrcode-1 … qrcode-6 folders, jsqr's labelled
and unlabelled photos), the images sorted by name are shuffled with random.Random(SEED + group)
and dealt alternately, tune first. Fixed by SEED: rerunning gives the same halves.

  scripts/qr-split.py list                       set, half and path of every image
  scripts/qr-split.py link OUT                   OUT/<set>-<half>/ with links to the images and labels
  scripts/qr-split.py eval MEISHI OUT [--half tune|held] [--sets a,b]
                                                 meishi scan --raw, zxing-cpp and zbarimg on each
                                                 set and half (qrkit eval; .venv's python):
                                                 codes found, wrong, per-image median ms
  scripts/qr-split.py cpu MEISHI                 per-image median processor time of meishi scan
                                                 --raw and zbarimg, per set and half
"""
import hashlib
import importlib.util
import json
import os
import random
import subprocess
import sys

SEED = 28
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = os.path.join(ROOT, "..", "shared", "corpus", "qr")
SETS = [
    ("zxing-java", os.path.join(CORPUS, "zxing-java"), None),
    ("jsqr", os.path.join(CORPUS, "jsqr"), None),
    ("zxing-cpp-extra", os.path.join(CORPUS, "zxing-cpp-extra"), None),
    ("zxing-cpp-fixtures", os.path.join(ROOT, "fixtures", "external"), "zxing-cpp-"),
]
IMAGE = (".png", ".jpg", ".jpeg")


def group(name, path, stem):
    """The upstream group an image belongs to: halves are dealt within each."""
    if name == "zxing-java":
        return stem.split("_")[0]
    if name == "jsqr":
        return "labelled" if os.path.exists(os.path.join(path, stem + ".txt")) or os.path.exists(
            os.path.join(path, stem + ".bin")) else "unlabelled"
    return "all"


def split():
    """[(set, half, directory, stem, file)] over every set present, in a fixed order."""
    seen, out = set(), []
    for name, path, prefix in SETS:
        if not os.path.isdir(path):
            continue
        files = sorted(f for f in os.listdir(path) if f.lower().endswith(IMAGE) and (prefix is None or f.startswith(prefix)))
        groups = {}
        for f in files:
            digest = hashlib.sha256(open(os.path.join(path, f), "rb").read()).hexdigest()
            if digest in seen:
                continue
            seen.add(digest)
            stem = os.path.splitext(f)[0]
            groups.setdefault(group(name, path, stem), []).append((stem, f))
        for g in sorted(groups):
            items = groups[g]
            random.Random(f"{SEED}/{name}/{g}").shuffle(items)
            for k, (stem, f) in enumerate(items):
                out.append((name, "tune" if k % 2 == 0 else "held", path, stem, f))
    return out


def link(out):
    """Fresh OUT/<set>-<half>/ folders of symlinks (image, .txt, .bin, .meta.json); their paths."""
    dirs = {}
    for name, half, path, stem, f in split():
        d = os.path.join(out, f"{name}-{half}")
        if d not in dirs:
            os.makedirs(d, exist_ok=True)
            for old in os.listdir(d):
                os.unlink(os.path.join(d, old))
            dirs[d] = True
        # fixtures/external names its labels after the image's own stem.
        for ext in (os.path.splitext(f)[1], ".txt", ".bin", ".meta.json"):
            src = os.path.join(path, stem + ext)
            if os.path.exists(src):
                os.symlink(os.path.abspath(src), os.path.join(d, stem + ext))
    return sorted(dirs)


def evaluate(meishi, out, halves, only):
    dirs = [d for d in link(out) if d.rsplit("-", 1)[1] in halves and (not only or d.rsplit("-", 1)[0].split("/")[-1] in only)]
    py = os.path.join(ROOT, ".venv", "bin", "python")
    qrkit = os.path.join(ROOT, "..", "shared", "tools", "qrkit.py")
    result = os.path.join(out, "scan.json")
    subprocess.run([py, qrkit, "eval", "--decoder", f"cmd:{meishi} scan --raw {{path}}", "--decoders", "zxingcpp,zbarimg",
                    "--sets", *dirs, "--json", result], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    spec = importlib.util.spec_from_file_location("bench_qr", os.path.join(HERE, "bench-qr.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    d = json.load(open(result))
    bench.rejudge(d, dirs)
    json.dump(d, open(result, "w"), ensure_ascii=False, indent=1)
    short = lambda k: "meishi" if k.startswith("cmd") else k
    print(f"{'set-half':26} {'labelled':>8}" + "".join(f"  {n:>22}" for n in ("meishi found/wrong/ms", "zxing-cpp", "zbarimg")))
    totals = {}
    for path, s in d["sets"].items():
        name = path.rstrip("/").split("/")[-1]
        half = name.rsplit("-", 1)[1]
        cells = []
        labelled = 0
        for dec, c in s["summary"].items():
            labelled = c["labeled"]
            t = totals.setdefault((half, short(dec)), [0, 0, 0, 0])
            t[0] += c["ok"]; t[1] += c["wrong"]; t[2] += c["labeled"]; t[3] += c["decoded"]
            extra = f" +{c['decoded']}u" if c["decoded"] or c["none"] else ""
            cells.append(f"{c['ok']:>4} w{c['wrong']:<3}{extra:>5} {c['time_median_ms']:5.0f}")
        print(f"{name:26} {labelled:>8}" + "".join(f"  {x:>22}" for x in cells))
    for half in halves:
        print(f"{'TOTAL ' + half:26} " + "  ".join(
            f"{k} {t[0]}/{t[2]} w{t[1]} (+{t[3]} unlabelled decoded)" for (h, k), t in totals.items() if h == half))
    print("(found = labelled images whose code was read; w = wrong output; u = unlabelled images with an output;"
          " ms = per-image median, meishi and zbarimg one process per image, zxing-cpp in process)")


def cpu(meishi):
    """Per-image median processor time (user + system, one process per image) of meishi scan --raw
    and zbarimg, per set and half: less moved by a busy machine than wall time."""
    import resource
    import statistics

    def used(argv):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, LC_ALL="C.UTF-8"))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000

    per = {}
    for name, half, path, stem, f in split():
        image = os.path.join(path, f)
        t = per.setdefault(f"{name}-{half}", ([], []))
        t[0].append(used([meishi, "scan", "--raw", image]))
        t[1].append(used(["zbarimg", "-q", "--raw", "-Sdisable", "-Sqrcode.enable", image]))
    every = ([], [])
    for key, (m, z) in per.items():
        every[0].extend(m); every[1].extend(z)
        print(f"{key:26} cpu ms per image, median: meishi {statistics.median(m):6.1f}  zbarimg {statistics.median(z):6.1f}")
    print(f"{'every image':26} cpu ms per image, median: meishi {statistics.median(every[0]):6.1f}  zbarimg {statistics.median(every[1]):6.1f}")


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "list"
    if cmd == "list":
        for name, half, path, stem, f in split():
            print(name, half, os.path.relpath(os.path.join(path, f), ROOT))
    elif cmd == "link":
        print("\n".join(link(sys.argv[2])))
    elif cmd == "cpu":
        cpu(os.path.abspath(sys.argv[2]))
    elif cmd == "eval":
        args = sys.argv[2:]
        halves, only = ["tune", "held"], None
        if "--half" in args:
            i = args.index("--half"); halves = [args[i + 1]]; del args[i:i + 2]
        if "--sets" in args:
            i = args.index("--sets"); only = args[i + 1].split(","); del args[i:i + 2]
        evaluate(os.path.abspath(args[0]), os.path.abspath(args[1]), halves, only)
    else:
        sys.exit(__doc__)
