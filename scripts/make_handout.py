#!/usr/bin/env python3
"""Writes the student starter repository from this solution.

    scripts/make_handout.py OUT_DIR [--subproject stream_compaction,nbody] [--versions v1_naive,v4_graph] [--force]

The handout holds the selected sub-projects and what they build on (exercise_markers.DEPENDS:
ground_seg calls stream_compaction's scan), nothing else: the other sub-projects, their tests and
their results are left out. Every region of the selected sub-projects marked
`// EXERCISE BEGIN ... // EXERCISE END` (see scripts/exercise_markers.py) becomes a STUDENT block
with a stub that compiles and makes the version report "NOT IMPLEMENTED" (never a pass), and so do
the regions of common/ that an exercise teaches (the warp and block scans and reductions, the
one-sweep sort). A region of common/ whose owners are all left out is withheld (stubbed, no
STUDENT block); a sub-project that is only built on stays solved. --versions limits the stubs to
those exercises (an exercise is named by its file's stem, e.g. v3_shared_mem, or by the marker's
exercise=NAME); the others stay solved.
Each selected sub-project's README becomes the student's: the problem, the path through the
exercises (grading/path.toml: order, points from the rubric, effort, the prediction from the
exercise's file, hints), the questions with room for answers, how to submit, and a results block
that `scripts/run_all.sh --student` fills from the student's run next to the reference GPU's.
HANDOUT.json lists the exercises, the withheld regions and a hash of each removed region;
scripts/check_handout.py verifies that no solution text is left.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from typing import Any, Callable

import exercise_markers as em
import handout_path
from judge.rubric import public_text as rubric_public_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Not in the handout: the course's own CI, the generated plots (the student's run draws them),
# scratch output, the fuzzers, the grader's own tests, and the tools that know the solution.
EXCLUDE_PREFIX = (".ci/", "images/", "results/scratch/", "build/", "fuzz/", "tests/grader/")
EXCLUDE_FILES = {
    "scripts/make_handout.py",
    "scripts/check_handout.py",
    "scripts/handout_path.py",
    "docs/handout_README.md",
    "grading/path.toml",
    "grading/judge/classgen.py",
    # the multi-GPU sort partitions keys with the one-sweep sort's ranking (match/ballot per
    # warp): a solution, and no exercise of its own (check_handout's signatures found it)
    "stream_compaction/src/multi_gpu_sort.cu",
    "stream_compaction/app/multi_gpu_sort.cpp",
    # --graph-study builds v4's graph itself (its launches, the flag copy, the launch loop): the
    # v4_graph_batch exercise restated; the handout builds graph_builds_missing.cpp instead
    "ndt_graph/src/graph_builds.cu",
}
# The sections of the one README outline (problem, versions, results, plots, questions, ...) a
# student's README keeps.
KEEP_SECTIONS = re.compile(r"^(problem|questions|plots)$", re.I)


def tracked_files(root: str) -> list[str]:
    try:
        # tracked and untracked-but-not-ignored files that exist (a deletion not yet committed is gone)
        out = subprocess.run(
            ["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            check=True,
            capture_output=True,
        ).stdout
        return sorted({f for f in out.decode().split("\0") if f and os.path.isfile(os.path.join(root, f))})
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x not in (".git", "build")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return files


def has_markers(root: str, f: str) -> bool:
    if not f.endswith(em.SOURCE_EXT) or f.startswith("tests/"):
        return False
    with open(os.path.join(root, f), encoding="utf-8") as fh:
        return "// EXERCISE BEGIN" in fh.read()


def all_regions(root: str, files: list[str], included: list[str] | None = None) -> list[em.Region]:
    regions = []
    for f in files:
        if has_markers(root, f):
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                regions += em.parse(f, fh.read(), included)
    return regions


def left_out(f: str, absent: list[str]) -> bool:
    """True for a file of a sub-project the handout does not hold: its folder, its tests, its
    results and templates (named after it)."""
    parts = f.split("/")
    if parts[0] in absent:
        return True
    if parts[0] == "tests" and len(parts) > 1 and parts[1] in absent:
        return True
    if parts[0] in ("results", "docs"):
        # the instructor's checks and grades of the solution stay with the instructor
        if parts[0] == "results" and parts[-1].startswith(("grade_solution", "gpu_check", "grading_check")):
            return True
        return any(p.startswith(a) for p in parts[1:] for a in absent)
    return False


def rubric_for(text: str, subprojects: list[str]) -> str:
    """The rubric's public text with only the tables of `subprojects` (and [grading])."""
    text = rubric_public_text(text)
    out, keep = [], True
    for line in text.split("\n"):
        m = re.match(r"^\[\[?([A-Za-z_]+)", line)
        if m:
            keep = m.group(1) == "grading" or m.group(1) in subprojects
        if keep:
            out.append(line)
    return "\n".join(out)


def kept_sections(text: str, subproject: str) -> tuple[str, dict[str, list[list[str]]]]:
    """(title, {section name lower-cased: [its lines, heading first]}) of the sections a handout keeps."""
    lines = text.split("\n")
    title = lines[0] if lines and lines[0].startswith("# ") else f"# {subproject}"
    sections, cur = [], None
    for line in lines[1:]:
        if line.startswith("## "):
            cur = [line]
            sections.append(cur)
        elif cur is not None:
            cur.append(line)
    kept = {}
    for sec in sections:
        m = KEEP_SECTIONS.match(sec[0][3:].strip())
        if m:
            kept.setdefault(m.group(1).lower(), []).append(sec)
    return title, kept


def answer_slots(sec: list[str]) -> list[str]:
    """A Questions section with an answer slot under each numbered question."""
    out = [sec[0]]
    questions, prose = [], []
    for line in sec[1:]:
        m = re.match(r"^(\d+)\.\s+(.*)$", line)
        if m:
            questions.append([m.group(1), m.group(2)])
        elif questions and line.startswith("   ") and line.strip():
            questions[-1][1] += " " + line.strip()
        elif not questions and line.strip():
            prose.append(line)
    out += [""] + prose
    for num, q in questions:
        out += [
            "",
            f"**Q{num}.** {q}",
            "",
            "> _Your answer (prediction, the measurement from your table, explanation):_",
        ]
    out.append("")
    return out


def student_readme(text: str, subproject: str, exercises: dict[str, dict[str, Any]], path: handout_path.Path) -> str:
    """The student's README: title, the task, the path through the exercises (points, effort,
    prediction, hints), the kept sections (questions become answer slots), how to submit, and the
    results block that `scripts/run_all.sh --student` fills from the student's own run."""
    title, kept = kept_sections(text, subproject)
    out = [
        title,
        "",
        "**Starter code.** The versions below are yours to write; until then the driver and the tests report",
        "each of them as `NOT IMPLEMENTED` (never as a pass), and `scripts/run_tests.sh` ends with how many are",
        "not implemented yet. The harness (reference, checks, timing, CSV, plots) is complete. Each exercise",
        "file starts with the idea of its step and a prediction to test.",
        "",
    ]
    for sec in kept.get("problem", []):
        out += sec
    out += [path.render(subproject, exercises), ""]
    out += [
        "## Working on a step",
        "",
        "```",
        f"build/release/{subproject}/{subproject} --list                    # the versions, their ideas and needs",
        f"build/release/{subproject}/{subproject} --version NAME --quick    # check one version at small sizes",
        f"ctest --test-dir build/release -L {subproject} --output-on-failure   # its tests",
        f"compute-sanitizer --tool memcheck build/release/{subproject}/{subproject} --version NAME --quick",
        f"compute-sanitizer --tool racecheck build/release/{subproject}/{subproject} --version NAME --quick",
        "```",
        "",
        "When a size fails, make it small: the driver's `--n` takes a list (`--n 1,2,31,33,1000`), and the",
        "smallest failing size is the one to debug. Copy a tile back to the host and print it next to the",
        "reference's values: one wrong element usually points at the index arithmetic.",
        "",
    ]
    for sec in kept.get("questions", []):
        out += answer_slots(sec)
    out += [
        "## Your results",
        "",
        "`scripts/run_all.sh --student` runs every version on this GPU, draws the plots into",
        f"`images/{subproject}/` and writes the tables below: your ladder (each step's idea, predicted and",
        "measured time, or its verdict), your versions, then your times next to the committed reference",
        "run of the closest GPU (`results/<gpu>/`), and last the profile of each of your GPU versions",
        f"(`{subproject} --profile`: Nsight Compute's view of its kernels, where `ncu` can read the GPU's",
        "counters; each row says why where it cannot). Commit them with your code.",
        "",
        "<!-- BEGIN GENERATED LADDER -->",
        "_Not run yet: `scripts/run_all.sh --student` fills this block._",
        "<!-- END GENERATED LADDER -->",
        "",
        "<!-- BEGIN GENERATED RESULTS -->",
        "_Not run yet: `scripts/run_all.sh --student` fills this block._",
        "<!-- END GENERATED RESULTS -->",
        "",
        "<!-- BEGIN GENERATED PROFILE -->",
        "_Not run yet: `scripts/run_all.sh --student` fills this block._",
        "<!-- END GENERATED PROFILE -->",
        "",
    ]
    for sec in kept.get("plots", []):
        out += sec
    out += [
        "## Submitting",
        "",
        "1. `scripts/run_tests.sh` (its last line counts passed, failed and not implemented) and",
        "   `scripts/run_all.sh --student` (your results and plots above).",
        f"2. `python3 scripts/grade.py --subproject {subproject}` grades your tree as the course's grader",
        "   does (`grade/students/<folder>/report.md`): correctness is the real verdict; the speed points it",
        "   shows compare your tree with itself, the course's grader compares with the reference solution on its GPU.",
        "   Every size a version is checked at is a case with its own share of the points (an empty input,",
        "   one element or an input of zeros: half a share; the rubric's named cases add edge inputs such as",
        "   all zeros and none zero): a crash or a wrong answer at one size costs that case, and the report",
        "   lists each failing case with its size, its input and the first difference.",
        "3. Commit, and hand in what your course asks for: a branch (`git push origin HEAD:submission`),",
        "   a tag (`git tag submission && git push origin submission`) or a zip of the repository",
        "   (`git archive -o submission.zip HEAD`). Only the lines between `STUDENT BEGIN` and",
        "   `STUDENT END` are graded; changes elsewhere (the harness, the checker) are not taken.",
        "",
    ]
    return "\n".join(out).rstrip() + "\n"


def ignored_by_git(path: str) -> bool:
    """True when path (inside ROOT) is a git-ignored location, so a handout there is never picked up as
    solution source; outside a git checkout (a copy, an unpacked zip) the folders .gitignore names
    for outputs count: build/, results/scratch/ and grade/ (grade.py's default --out)."""
    if path == ROOT:
        return False
    r = subprocess.run(
        ["git", "-C", ROOT, "check-ignore", "-q", "--no-index", path],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if r.returncode in (0, 1):
        return r.returncode == 0
    return any(
        os.path.commonpath([path, os.path.join(ROOT, d)]) == os.path.join(ROOT, d)
        for d in ("build", os.path.join("results", "scratch"), "grade")
    )


def prepare_out_dir(out_dir: str, force: bool) -> str:
    """The handout's folder, absolute and empty: never the solution or an unignored folder inside it."""
    out = os.path.abspath(out_dir)
    if os.path.commonpath([out, ROOT]) == ROOT and not ignored_by_git(out):
        sys.exit(
            f"make_handout: {out_dir} is inside the solution and not ignored by git; write the handout "
            "elsewhere, or under an ignored folder (build/, results/scratch/, grade/)"
        )
    if out == ROOT:
        sys.exit("make_handout: OUT_DIR is the solution itself")
    if os.path.exists(out):
        if not force:
            sys.exit(f"make_handout: {out_dir} exists (use --force to replace it)")
        shutil.rmtree(out)
    return out


def write_tree(
    files: list[str], out: str, absent: list[str], subs: list[str], role: Callable[[em.Region], str]
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Copies the handout's files into out, stubbing the marked regions by their role; returns the
    manifest's (exercises, withheld) books."""
    exercises, withheld = {}, {}
    for f in files:
        if f.startswith(EXCLUDE_PREFIX) or f in EXCLUDE_FILES or left_out(f, absent):
            continue
        src = os.path.join(ROOT, f)
        dst = os.path.join(out, f)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if has_markers(ROOT, f):
            with open(src, encoding="utf-8") as fh:
                text = fh.read()
            new, removed = em.stub_text(
                f, text, assigned=lambda r: role(r) == "assigned", withheld=lambda r: role(r) == "withheld"
            )
            for r in removed:
                kind = role(r)
                book = exercises if kind == "assigned" else withheld
                key = r.key or f"{r.sub}/-"
                e = book.setdefault(key, {"subproject": r.sub, "name": r.exercise or "-", "files": [], "regions": []})
                if f not in e["files"]:
                    e["files"].append(f)
                e["regions"].append({"file": f, "lines": len(r.lines), "sha256": r.digest()})
            with open(dst, "w", encoding="utf-8") as fh:
                fh.write(new)
        elif f == "grading/rubric.toml":  # the instructor's hidden cases stay with the instructor
            with open(src, encoding="utf-8") as fh:
                text = rubric_for(fh.read(), subs)
            with open(dst, "w", encoding="utf-8") as fh:
                fh.write(text)
        else:
            shutil.copy2(src, dst)
    return exercises, withheld


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument(
        "--subproject",
        default=",".join(em.SUBPROJECTS),
        help="comma-separated sub-projects whose exercises are stubbed (default: all four)",
    )
    ap.add_argument("--versions", default="", help="comma-separated exercises to stub (default: every one)")
    ap.add_argument("--force", action="store_true", help="replace OUT_DIR if it exists")
    a = ap.parse_args()

    subs = [s for s in a.subproject.split(",") if s]
    bad = [s for s in subs if s not in em.SUBPROJECTS]
    if bad or not subs:
        sys.exit(f"make_handout: --subproject: unknown {bad or 'empty'} (known: {', '.join(em.SUBPROJECTS)})")
    included = em.closure(subs)
    absent = [s for s in em.SUBPROJECTS if s not in included]
    files = tracked_files(ROOT)
    try:
        regions = all_regions(ROOT, files, included)
    except em.MarkerError as e:
        sys.exit(f"make_handout: {e}")
    known = sorted({r.key for r in regions if r.key and r.sub in subs})
    wanted = [v for v in a.versions.split(",") if v]
    bad = [v for v in wanted if v not in known and not any(k.endswith("/" + v) for k in known)]
    if bad:
        sys.exit(f"make_handout: --versions: no exercise named {bad} in {', '.join(subs)} (known: {', '.join(known)})")
    out = prepare_out_dir(a.out_dir, a.force)

    def role(region: em.Region) -> str:
        return em.role(region, subs, included, wanted)

    exercises, withheld = write_tree(files, out, absent, subs, role)
    path = handout_path.Path.load(ROOT)
    for sub in subs:
        readme = os.path.join(ROOT, sub, "README.md")
        if os.path.exists(readme):
            mine = {k: v for k, v in exercises.items() if v["subproject"] == sub}
            with open(readme, encoding="utf-8") as fh:
                text = student_readme(fh.read(), sub, mine, path)
            with open(os.path.join(out, sub, "README.md"), "w", encoding="utf-8") as fh:
                fh.write(text)
    with open(os.path.join(ROOT, "docs", "handout_README.md"), encoding="utf-8") as fh:
        top = fh.read()
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as fh:
        fh.write(handout_path.top_readme(top, subs, included, exercises, path))
    sha = subprocess.run(
        ["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    with open(os.path.join(out, "HANDOUT.json"), "w", encoding="utf-8") as fh:
        json.dump(
            {
                "from_solution": sha or "unknown",
                "subprojects": subs,
                "included": included,
                "exercises": exercises,
                "withheld": withheld,
            },
            fh,
            indent=1,
            sort_keys=True,
        )
        fh.write("\n")
    n = sum(len(v["regions"]) for v in exercises.values())
    print(f"make_handout: {len(exercises)} exercises ({n} regions) in {', '.join(subs)} -> {a.out_dir}")
    if absent:
        print(
            f"  left out: {', '.join(absent)}"
            + (
                f"; solved, built on: {', '.join(x for x in included if x not in subs)}"
                if len(included) > len(subs)
                else ""
            )
        )
    for _, v in sorted(exercises.items(), key=lambda kv: (kv[1]["subproject"], kv[0])):
        print(f"  {v['subproject']:18s} {v['name']:24s} {', '.join(v['files'])}")
    for k, v in sorted(withheld.items()):
        print(f"  withheld           {k:24s} {', '.join(v['files'])}")


if __name__ == "__main__":
    main()
