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

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import exercise_markers as em
import handout_path
from make_handout import ROOT, tracked_files


def handout_sources(out: str) -> Iterator[tuple[str, str]]:
    for d, dirs, names in os.walk(out):
        dirs[:] = [x for x in dirs if x not in ("build", ".git")]
        for n in names:
            if n.endswith(em.SOURCE_EXT):
                path = os.path.join(d, n)
                yield (
                    os.path.relpath(path, out).replace(os.sep, "/"),
                    Path(path).read_text(encoding="utf-8", errors="replace"),
                )


def outside_student_blocks(text: str) -> list[tuple[int, str]]:
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


def solution_leaks(subs: list[str], included: list[str], assigned: set[str]) -> dict[str, str]:
    """{shingle: where} of the solution text of every assigned or withheld region that appears nowhere
    outside such regions in the solution tree (the text a handout must not hold)."""
    wanted = sorted(assigned)
    allowed, secret = set(), {}
    for f in tracked_files(ROOT):
        if not f.endswith(em.SOURCE_EXT) or f.startswith("tests/"):
            continue
        text = Path(os.path.join(ROOT, f)).read_text(encoding="utf-8")
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
    return {h: where for h, where in secret.items() if h not in allowed}


def idea_signatures(subs: list[str], assigned: set[str]) -> dict[str, str]:
    """{regex: exercise} of the assigned exercises' ideas (grading/path.toml)."""
    path = handout_path.Path.load(ROOT)
    signatures = {}
    for sub in subs:
        for st in path.steps.get(sub, []):
            if f"{sub}/{st['exercise']}" in assigned:
                for sig in st.get("signature", []):
                    signatures[sig] = f"{sub}/{st['exercise']}"
    return signatures


def file_problems(
    rel: str, text: str, absent: list[str], leaks: dict[str, str], signatures: dict[str, str]
) -> list[str]:
    """What is wrong with one handout source: a left-out sub-project's file, a marker, solution text,
    an assigned idea outside a STUDENT block."""
    problems = []
    top = rel.split("/")
    if top[0] in absent or (rel.startswith("tests/") and top[1] in absent):
        owner = top[0] if top[0] in absent else top[1]
        problems.append(f"{rel}: a file of {owner}, which this handout does not hold")
    if any(em.is_marker(line) for line in text.split("\n")):
        problems.append(f"{rel}: an EXERCISE marker is left")
    for h in em.shingles(text.split("\n")) & leaks.keys():
        problems.append(f"{rel}: holds solution text of {leaks[h]}")
    if rel.startswith("tests/"):
        return problems  # the tests call the primitives they test; they implement nothing
    for i, line in outside_student_blocks(text):
        code = line.split("//", 1)[0]
        for sig, ex in signatures.items():
            if re.search(sig, code):
                problems.append(f"{rel}:{i}: '{sig}' outside a STUDENT block: the idea of {ex} is left solved")
    return problems


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    try:
        manifest = json.loads(Path(os.path.join(out, "HANDOUT.json")).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        sys.exit(f"check_handout: {out}/HANDOUT.json: {e}")
    subs = manifest["subprojects"]
    included = manifest.get("included") or em.closure(subs)
    assigned = set(manifest["exercises"])
    leaks = solution_leaks(subs, included, assigned)
    signatures = idea_signatures(subs, assigned)
    absent = [s for s in em.SUBPROJECTS if s not in included]
    problems = []
    n_files = 0
    for rel, text in handout_sources(out):
        n_files += 1
        problems += file_problems(rel, text, absent, leaks, signatures)
    for key, info in manifest["exercises"].items():
        stub = f"{em.STUDENT_BEGIN} {info['name']}:"
        if not any(stub in Path(os.path.join(out, f)).read_text(encoding="utf-8") for f in info["files"]):
            problems.append(f"{key}: no stub in {', '.join(info['files'])}")
    n_regions = sum(len(v["regions"]) for v in manifest["exercises"].values())
    n_withheld = sum(len(v["regions"]) for v in manifest.get("withheld", {}).values())
    if problems:
        print(f"check_handout: {len(problems)} problems in {out}:")
        for p in sorted(set(problems)):
            print("  " + p)
        return 1
    print(
        f"check_handout: {', '.join(subs)}: {len(assigned)} exercises ({n_regions} regions) stubbed, "
        f"{n_withheld} regions withheld, {len(leaks)} solution shingles and {len(signatures)} idea signatures "
        f"searched in {n_files} source files: no solution text, no idea left solved, no marker left"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
