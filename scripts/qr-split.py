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
  scripts/qr-split.py time MEISHI [--runs N]     per-image median wall time, one process per image,
                                                 meishi and zbarimg interleaved image by image
                                                 (N runs each, default 5), per set and half, with
                                                 the load average before and after
  scripts/qr-split.py instructions MEISHI [--half tune|held]
                                                 per-image median instructions (valgrind
                                                 callgrind) of meishi scan --raw and zbarimg: a
                                                 figure the machine's load does not move (under
                                                 valgrind the scanner's 100 ms processor-time
                                                 budget runs out sooner, so an image the later
                                                 passes would read counts less than it costs)

eval also prints each upstream group apart (zxing-java's qrcode-1 … qrcode-6 folders, whose
upstream tests name their kind: 4 is t-shirts, 5 hard exposure and self-shadowing, 6 small
finders under rotation).
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
    groups = {}
    for path, s in d["sets"].items():
        name = path.rstrip("/").split("/")[-1]
        setname, half = name.rsplit("-", 1)
        for item in s["detail"]:
            g = f"{setname} {group(setname, os.path.join(out, name), item['id'])}"
            for dec, r in item.items():
                if isinstance(r, dict):
                    c = groups.setdefault(g, {}).setdefault(half, {}).setdefault(short(dec), [0, 0, 0])
                    c[0] += r["v"] == "ok" or r["v"] == "decoded"
                    c[1] += r["v"] == "wrong"
                    c[2] += 1
    print("per upstream group (images read / images, w = wrong; unlabelled: images with an output):")
    for g in sorted(groups):
        for half, by in sorted(groups[g].items(), reverse=True):
            print(f"  {g + ' ' + half:32}" + "".join(f"  {k} {c[0]:>3}/{c[2]:<3} w{c[1]:<2}" for k, c in by.items()))
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
        t[1].append(used(ZBARIMG + [image]))
    every = ([], [])
    for key, (m, z) in per.items():
        every[0].extend(m); every[1].extend(z)
        print(f"{key:26} cpu ms per image, median: meishi {statistics.median(m):6.1f}  zbarimg {statistics.median(z):6.1f}")
    print(f"{'every image':26} cpu ms per image, median: meishi {statistics.median(every[0]):6.1f}  zbarimg {statistics.median(every[1]):6.1f}")


ZBARIMG = ["zbarimg", "-q", "--raw", "-Sdisable", "-Sqrcode.enable"]


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def wall(meishi, runs):
    """Per-image median wall time of one process per image, meishi and zbarimg run one after the
    other for each image and run, so a change in the machine's load falls on both alike."""
    import statistics
    import time

    def once(argv):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, LC_ALL="C.UTF-8"))
        return (time.perf_counter() - t0) * 1000

    print(f"load average before: {loadavg()}  ({os.cpu_count()} cores; {runs} runs of each per image, interleaved)")
    per, slow = {}, []
    for name, half, path, stem, f in split():
        image = os.path.join(path, f)
        m, z = [], []
        for _ in range(runs):
            m.append(once([meishi, "scan", "--raw", image]))
            z.append(once(ZBARIMG + [image]))
        mm, zz = statistics.median(m), statistics.median(z)
        for key in (f"{name}-{half}", f"every image {half}", "every image"):
            t = per.setdefault(key, ([], []))
            t[0].append(mm); t[1].append(zz)
        slow.append((mm, zz, f"{name}/{f}"))
    for key, (m, z) in sorted(per.items(), key=lambda kv: (kv[0].startswith("every"), kv[0])):
        print(f"{key:26} wall ms per image, median: meishi {statistics.median(m):6.1f}  zbarimg {statistics.median(z):6.1f}"
              f"  ratio {statistics.median(m) / statistics.median(z):4.2f}   (p90 meishi {sorted(m)[int(0.9 * (len(m) - 1))]:.0f}, zbarimg {sorted(z)[int(0.9 * (len(z) - 1))]:.0f})")
    print("slowest for meishi: " + ", ".join(f"{n} {m:.0f} ms (zbarimg {z:.0f})" for m, z, n in sorted(slow, reverse=True)[:6]))
    print(f"load average after: {loadavg()}")


def instructions(meishi, halves):
    """Per-image median instruction count under callgrind (on a copy of meishi without debug
    information, which valgrind would otherwise spend seconds reading)."""
    import statistics
    import tempfile

    def count(argv):
        p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + argv,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ, LC_ALL="C.UTF-8"))
        refs = [l for l in p.stderr.decode("utf-8", "replace").splitlines() if "refs:" in l or "Collected :" in l]
        return int(refs[-1].split()[-1].replace(",", "")) if refs else None

    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "meishi")
        subprocess.run(["strip", "--strip-debug", "-o", plain, meishi], check=True)
        per = {}
        for name, half, path, stem, f in split():
            if half not in halves:
                continue
            image = os.path.join(path, f)
            m, z = count([plain, "scan", "--raw", image]), count(ZBARIMG + [image])
            if m is None or z is None:
                continue
            for key in (f"{name}-{half}", f"every image {half}"):
                t = per.setdefault(key, ([], []))
                t[0].append(m); t[1].append(z)
    for key, (m, z) in sorted(per.items(), key=lambda kv: (kv[0].startswith("every"), kv[0])):
        print(f"{key:26} instructions per image, median: meishi {statistics.median(m) / 1e6:7.1f} M  zbarimg "
              f"{statistics.median(z) / 1e6:7.1f} M  ratio {statistics.median(m) / statistics.median(z):4.2f}  ({len(m)} images)")


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "list"
    if cmd == "list":
        for name, half, path, stem, f in split():
            print(name, half, os.path.relpath(os.path.join(path, f), ROOT))
    elif cmd == "link":
        print("\n".join(link(sys.argv[2])))
    elif cmd == "cpu":
        cpu(os.path.abspath(sys.argv[2]))
    elif cmd == "time":
        args = sys.argv[2:]
        runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 5
        wall(os.path.abspath(args[0]), runs)
    elif cmd == "instructions":
        args = sys.argv[2:]
        halves = [args[args.index("--half") + 1]] if "--half" in args else ["tune", "held"]
        instructions(os.path.abspath(args[0]), halves)
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
