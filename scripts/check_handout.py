#!/usr/bin/env python3
"""Checks a handout written by make_handout.py against this solution. Exit 1 with the findings.

  - no solution text: every 3 consecutive non-trivial lines of every region the handout stubs
    (its exercises, and the withheld regions of sub-projects it does not hold), in the
    sub-projects and in common/, are searched for in all of the handout's sources, except lines the
    solution also has outside its exercise regions;
  - no idea left solved: the signatures of each assigned exercise's idea (grading/path.toml: the
    warp shuffles of v4, the acquire loads of a look-back, the ballots of the one-sweep ranking) are
    searched for in the handout's sources outside the STUDENT blocks, so a solution that sits
    unmarked anywhere (a helper in common/) is found;
  - no marker left, every exercise of HANDOUT.json stubbed in its files, and no file of a sub-project
    the handout does not hold.

    scripts/check_handout.py HANDOUT_DIR
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exercise_markers as em  # noqa: E402
import handout_path  # noqa: E402
from make_handout import ROOT, tracked_files  # noqa: E402


def handout_sources(out):
    for d, dirs, names in os.walk(out):
        dirs[:] = [x for x in dirs if x not in ("build", ".git")]
        for n in names:
            if n.endswith(em.SOURCE_EXT):
                path = os.path.join(d, n)
                yield os.path.relpath(path, out).replace(os.sep, "/"), open(path, encoding="utf-8", errors="replace").read()


def outside_student_blocks(text):
    """The lines of a handout file that are not inside a STUDENT block, with their line numbers."""
    out, inside = [], False
    for i, line in enumerate(text.split("\n"), 1):
        if em.STUDENT_BEGIN in line:
            inside = True
        elif em.STUDENT_END in line:
            inside = False
        elif not inside:
            out.append((i, line))
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    try:
        manifest = json.load(open(os.path.join(out, "HANDOUT.json"), encoding="utf-8"))
    except (OSError, ValueError) as e:
        sys.exit(f"check_handout: {out}/HANDOUT.json: {e}")
    subs = manifest["subprojects"]
    included = manifest.get("included") or em.closure(subs)
    assigned = set(manifest["exercises"])
    wanted = sorted(assigned)
    problems = []
    allowed, secret = set(), {}
    for f in tracked_files(ROOT):
        if not f.endswith(em.SOURCE_EXT) or f.startswith("tests/"):
            continue
        text = open(os.path.join(ROOT, f), encoding="utf-8").read()
        regions = em.parse(f, text, included) if "// EXERCISE BEGIN" in text else []
        inside = set()
        for r in regions:
            inside.update(range(r.first, r.last + 1))
            kind = em.role(r, subs, included, wanted)
            if kind in ("assigned", "withheld"):
                for h in em.shingles(r.lines):
                    secret[h] = f"{f}:{r.first + 2} ({r.key or r.sub + '/-'}, {kind})"
        lines = text.split("\n")
        allowed |= em.shingles([ln for i, ln in enumerate(lines) if i not in inside])
    leaks = {h: where for h, where in secret.items() if h not in allowed}
    path = handout_path.Path.load(ROOT)
    signatures = {}
    for sub in subs:
        for st in path.steps.get(sub, []):
            if f"{sub}/{st['exercise']}" in assigned:
                for sig in st.get("signature", []):
                    signatures[sig] = f"{sub}/{st['exercise']}"
    absent = [s for s in em.SUBPROJECTS if s not in included]
    n_files = 0
    for rel, text in handout_sources(out):
        n_files += 1
        if rel.split("/")[0] in absent or (rel.startswith("tests/") and rel.split("/")[1] in absent):
            problems.append(f"{rel}: a file of {rel.split('/')[0] if rel.split('/')[0] in absent else rel.split('/')[1]}, "
                            "which this handout does not hold")
        if any(em.is_marker(line) for line in text.split("\n")):
            problems.append(f"{rel}: an EXERCISE marker is left")
        for h in em.shingles(text.split("\n")) & leaks.keys():
            problems.append(f"{rel}: holds solution text of {leaks[h]}")
        if rel.startswith("tests/"):
            continue  # the tests call the primitives they test; they implement nothing
        for i, line in outside_student_blocks(text):
            code = line.split("//", 1)[0]
            for sig, ex in signatures.items():
                if re.search(sig, code):
                    problems.append(f"{rel}:{i}: '{sig}' outside a STUDENT block: the idea of {ex} is left solved")
    for key, info in manifest["exercises"].items():
        name = info["name"]
        found = any(f"{em.STUDENT_BEGIN} {name}:" in open(os.path.join(out, f), encoding="utf-8").read() for f in info["files"])
        if not found:
            problems.append(f"{key}: no stub in {', '.join(info['files'])}")
    n_regions = sum(len(v["regions"]) for v in manifest["exercises"].values())
    n_withheld = sum(len(v["regions"]) for v in manifest.get("withheld", {}).values())
    if problems:
        print(f"check_handout: {len(problems)} problems in {out}:")
        for p in sorted(set(problems)):
            print("  " + p)
        return 1
    print(f"check_handout: {', '.join(subs)}: {len(assigned)} exercises ({n_regions} regions) stubbed, "
          f"{n_withheld} regions withheld, {len(leaks)} solution shingles and {len(signatures)} idea signatures "
          f"searched in {n_files} source files: no solution text, no idea left solved, no marker left")
    return 0


if __name__ == "__main__":
    sys.exit(main())
