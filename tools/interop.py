#!/usr/bin/env python3
"""Checks that QR images meishi writes decode to the expected text with other decoders.

usage: interop.py EXPECTED_TEXT_FILE IMAGE [EXPECTED_TEXT_FILE IMAGE ...]   (zxing-cpp, OpenCV, zbarimg)
       interop.py --vcard VCARD_TEXT_FILE          (parses with vobject)
Prints one line per decoder and image, and exits 1 when any decoder disagrees.
"""
import subprocess
import sys


def zxing(path):
    import zxingcpp
    from PIL import Image
    results = zxingcpp.read_barcodes(Image.open(path).convert("L"))
    return [r.text for r in results]


def opencv(path):
    """OpenCV's classic QRCodeDetector, then its ArUco-based one.

    The classic detector misses about one code in ten of any kind, ours or segno's (measured on
    20 fresh cards: 18/20 for both PNG and SVG renderings); the ArUco detector read 20/20.
    """
    import cv2
    img = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
    text, _, _ = cv2.QRCodeDetector().detectAndDecode(img)
    if not text:
        text, _, _ = cv2.QRCodeDetectorAruco().detectAndDecode(img)
    return [text] if text else []


def zbarimg(path):
    # QR only: zbarimg also tries 1-D symbologies and can read a false EAN-13 in a block-drawn picture.
    p = subprocess.run(["zbarimg", "--raw", "-q", "-Sdisable", "-Sqrcode.enable", "-Sbinary", path], capture_output=True)
    out = p.stdout.decode("utf-8")
    return [out[:-1] if out.endswith("\n") else out] if p.returncode == 0 else []


def main():
    if sys.argv[1] == "--vcard":
        import vobject
        card = vobject.readOne(open(sys.argv[2], encoding="utf-8").read())
        print("vobject: FN=%s, %d properties" % (card.fn.value, len(card.contents)))
        return 0
    failed = False
    args = sys.argv[1:]
    for expected_file, path in zip(args[0::2], args[1::2]):
        expected = open(expected_file, encoding="utf-8", newline="").read()
        expected = expected[:-1] if expected.endswith("\n") else expected  # scan --raw adds one newline
        for name, decoder in (("zxing-cpp", zxing), ("opencv", opencv), ("zbarimg", zbarimg)):  # noqa: E501
            try:
                got = decoder(path)
            except Exception as e:  # a decoder that is missing or crashes is a failure here
                got = ["error: %r" % e]
            # Trailing line ends are compared loosely: zbarimg and scan --raw add their own.
            ok = expected.rstrip("\r\n") in [g.rstrip("\r\n") for g in got]
            failed |= not ok
            print("%-9s %-4s %s" % (name, "ok" if ok else "FAIL", path if ok else "%s -> %r" % (path, got)[:300]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
