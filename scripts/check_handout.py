#!/usr/bin/env python3
"""Checks a handout written by make_handout.py against this solution: no solution text left (every
3 consecutive non-trivial lines of a removed region are searched for in the handout's sources,
except lines the solution also has outside its exercise regions), no marker left, and every
exercise listed in HANDOUT.json stubbed in its files. Exit 1 with the findings otherwise.

    scripts/check_handout.py HANDOUT_DIR
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exercise_markers as em  # noqa: E402
from make_handout import ROOT, tracked_files  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    manifest = json.load(open(os.path.join(out, "HANDOUT.json"), encoding="utf-8"))
    stubbed = {k for k in manifest["exercises"]}
    problems = []
    allowed, secret = set(), {}
    for f in tracked_files(ROOT):
        if not f.endswith(em.SOURCE_EXT):
            continue
        text = open(os.path.join(ROOT, f), encoding="utf-8").read()
        regions = em.parse(f, text) if em.subproject_of(f) else []
        inside = set()
        for r in regions:
            inside.update(range(r.first, r.last + 1))
            if f"{em.subproject_of(f)}/{r.exercise}" in stubbed:
                for h in em.shingles(r.lines):
                    secret[h] = f"{f}:{r.first + 2} ({r.exercise})"
        lines = text.split("\n")
        allowed |= em.shingles([l for i, l in enumerate(lines) if i not in inside])
    leaks = {h: where for h, where in secret.items() if h not in allowed}
    for d, _, names in os.walk(out):
        if os.sep + "build" in d[len(out):] or "/.git" in d:
            continue
        for n in names:
            if not n.endswith(em.SOURCE_EXT):
                continue
            path = os.path.join(d, n)
            rel = os.path.relpath(path, out)
            text = open(path, encoding="utf-8", errors="replace").read()
            if "EXERCISE BEGIN" in text and em.subproject_of(rel):
                problems.append(f"{rel}: an EXERCISE marker is left")
            for h in em.shingles(text.split("\n")) & leaks.keys():
                problems.append(f"{rel}: holds solution text of {leaks[h]}")
    for key, info in manifest["exercises"].items():
        name = info["name"]
        found = any(f"{em.STUDENT_BEGIN} {name}:" in open(os.path.join(out, f), encoding="utf-8").read() for f in info["files"])
        if not found:
            problems.append(f"{key}: no stub in {', '.join(info['files'])}")
    n_regions = sum(len(v["regions"]) for v in manifest["exercises"].values())
    if problems:
        print(f"check_handout: {len(problems)} problems in {out}:")
        for p in sorted(set(problems)):
            print("  " + p)
        return 1
    print(f"check_handout: {len(stubbed)} exercises, {n_regions} regions stubbed, {len(leaks)} solution shingles "
          f"searched: no solution text, no marker left")
    return 0


if __name__ == "__main__":
    sys.exit(main())
