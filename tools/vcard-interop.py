#!/usr/bin/env python3
"""Reads a vCard file with Python vobject and prints what it holds as JSON, for the tests.

usage: vcard-interop.py FILE.vcf
Prints {"cards": [{"fn": ..., "email": [...], "tel": [...], "url": [...], "note": [...], "title": [...],
"org": [...], "uid": ..., "x-meishi-did": ..., "properties": N}]}; exits 1 when vobject cannot parse the file,
cannot serialise a card it read, or splits an ORG unit at an unescaped comma.
"""
import json
import sys


def values(card, name):
    return [p.value for p in card.contents.get(name, [])]


def main():
    import vobject
    text = open(sys.argv[1], encoding="utf-8", newline="").read()
    cards = []
    for card in vobject.readComponents(text, validate=True):
        org = []
        for o in values(card, "org"):
            # vobject gives ORG as a list of units; a unit that is a list again was split at a
            # bare comma (written unescaped): vobject cannot write it back, and the name is lost.
            if isinstance(o, list) and any(isinstance(u, list) for u in o):
                print("ORG of %r split at an unescaped comma: %r" % (card.fn.value, o), file=sys.stderr)
                return 1
            org.append(", ".join(o) if isinstance(o, list) else o)
        card.serialize()  # what vobject reads it can write again (a split ORG raises here)
        cards.append({
            "fn": card.fn.value,
            "email": values(card, "email"),
            "tel": values(card, "tel"),
            "url": values(card, "url"),
            "note": values(card, "note"),
            "title": values(card, "title"),
            "org": org,
            "uid": card.uid.value if "uid" in card.contents else None,
            "x-meishi-did": card.contents["x-meishi-did"][0].value if "x-meishi-did" in card.contents else None,
            "properties": sum(len(v) for v in card.contents.values()),
        })
    json.dump({"cards": cards}, sys.stdout, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
