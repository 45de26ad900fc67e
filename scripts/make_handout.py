#!/usr/bin/env python3
"""Writes the student starter repository from this solution.

    scripts/make_handout.py OUT_DIR [--subproject stream_compaction,nbody] [--versions v1_naive,v4_graph] [--force]

Every region of the selected sub-projects marked `// EXERCISE BEGIN ... // EXERCISE END` (see
scripts/exercise_markers.py) is replaced by a stub that compiles and makes the version report
"NOT IMPLEMENTED" (never a pass). --versions limits the stubs to those exercises (an exercise is
named by its file's stem, e.g. v3_shared_mem, or by the marker's exercise=NAME); the others stay
solved. Sub-projects not selected stay solved (an assignment that builds on an earlier one).
Each selected sub-project's README becomes a student template: the problem, the inputs, the
questions with room for answers, how to run, and an empty results block that the student's own
`scripts/run_all.sh` fills. HANDOUT.json lists the exercises and a hash of each removed region;
scripts/check_handout.py verifies that no solution text is left.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exercise_markers as em  # noqa: E402
from grader.rubric import public_text as rubric_public_text  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Not in the handout: the course's own CI, the generated plots (the student's run draws them),
# scratch output, and the tools that know the solution.
EXCLUDE_PREFIX = (".ci/", "images/", "results/scratch/", "build/")
EXCLUDE_FILES = {"scripts/make_handout.py", "scripts/check_handout.py", "docs/handout_README.md",
                 "scripts/grader/classgen.py"}
KEEP_SECTIONS = re.compile(r"^(problem|the problem|inputs|questions|plots|how to run)\b", re.I)


def tracked_files(root):
    try:
        # tracked and untracked-but-not-ignored files that exist (a deletion not yet committed is gone)
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             check=True, capture_output=True).stdout
        return sorted({f for f in out.decode().split("\0") if f and os.path.isfile(os.path.join(root, f))})
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x not in (".git", "build")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return files


def all_regions(root, files):
    regions = []
    for f in files:
        if f.endswith(em.SOURCE_EXT) and em.subproject_of(f):
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                regions += em.parse(f, fh.read())
    return regions


def student_readme(text, subproject, exercises):
    """The template: title, a short task statement, the kept sections (questions become answer
    slots), and an empty generated-results block."""
    lines = text.split("\n")
    title = lines[0] if lines and lines[0].startswith("# ") else f"# {subproject}"
    sections, cur = [], None
    for line in lines[1:]:
        if line.startswith("## "):
            cur = [line]
            sections.append(cur)
        elif cur is not None:
            cur.append(line)
    out = [title, "",
           "**Starter code.** The versions below are yours to write; until then the driver and the tests report",
           "each of them as `NOT IMPLEMENTED` (never as a pass). The harness (reference, checks, timing, CSV,",
           "plots) is complete. Each exercise file starts with the idea of its step and a prediction to test;",
           "`docs/adding_a_version.md` shows how a version is checked, timed, plotted and graded.", "",
           "| exercise | files |", "|---|---|"]
    for name, info in sorted(exercises.items()):
        out.append(f"| `{info['name']}` | {', '.join('`' + f + '`' for f in info['files'])} |")
    out += ["", "Check one version: `build/release/" + subproject + "/" + subproject + " --version NAME --quick`;",
            "grade yourself: `python3 scripts/grade.py --subproject " + subproject + "`.", ""]
    have_results = False
    for sec in sections:
        heading = sec[0][3:].strip()
        body = "\n".join(sec)
        if "<!-- BEGIN GENERATED RESULTS -->" in body:
            have_results = True
            out += ["## Results", "", "<!-- BEGIN GENERATED RESULTS -->",
                    "_Filled in from your own run by `scripts/run_all.sh` (or `scripts/plot.py --readme`)._",
                    "<!-- END GENERATED RESULTS -->", ""]
            continue
        if not KEEP_SECTIONS.match(heading):
            continue
        if heading.lower().startswith("questions"):
            out.append(sec[0])
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
                out += ["", f"**Q{num}.** {q}", "", "> _Your answer (prediction, the measurement from your table, explanation):_"]
            out.append("")
            continue
        out += sec
    if not have_results:
        out += ["## Results", "", "<!-- BEGIN GENERATED RESULTS -->", "<!-- END GENERATED RESULTS -->", ""]
    return "\n".join(out).rstrip() + "\n"


def ignored_by_git(path):
    """True when path (inside ROOT) is a git-ignored location, so a handout there is never picked up as
    solution source; outside a git checkout only build/ and results/scratch/ count."""
    if path == ROOT:
        return False
    r = subprocess.run(["git", "-C", ROOT, "check-ignore", "-q", "--no-index", path],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode in (0, 1):
        return r.returncode == 0
    return any(os.path.commonpath([path, os.path.join(ROOT, d)]) == os.path.join(ROOT, d)
               for d in ("build", os.path.join("results", "scratch")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--subproject", default=",".join(em.SUBPROJECTS),
                    help="comma-separated sub-projects whose exercises are stubbed (default: all four)")
    ap.add_argument("--versions", default="", help="comma-separated exercises to stub (default: every one)")
    ap.add_argument("--force", action="store_true", help="replace OUT_DIR if it exists")
    a = ap.parse_args()

    subs = [s for s in a.subproject.split(",") if s]
    bad = [s for s in subs if s not in em.SUBPROJECTS]
    if bad:
        sys.exit(f"make_handout: --subproject: unknown {bad} (known: {', '.join(em.SUBPROJECTS)})")
    files = tracked_files(ROOT)
    try:
        regions = all_regions(ROOT, files)
    except em.MarkerError as e:
        sys.exit(f"make_handout: {e}")
    known = sorted({em.subproject_of(r.path) + "/" + r.exercise for r in regions if em.subproject_of(r.path) in subs})
    wanted = [v for v in a.versions.split(",") if v]
    bad = [v for v in wanted if v not in known and not any(k.endswith("/" + v) for k in known)]
    if bad:
        sys.exit(f"make_handout: --versions: no exercise named {bad} in {', '.join(subs)} (known: {', '.join(known)})")
    out = os.path.abspath(a.out_dir)
    if os.path.commonpath([out, ROOT]) == ROOT and not ignored_by_git(out):
        sys.exit(f"make_handout: {a.out_dir} is inside the solution and not ignored by git; write the handout "
                 "elsewhere, or under an ignored folder (build/, results/scratch/)")
    if out == ROOT:
        sys.exit("make_handout: OUT_DIR is the solution itself")
    if os.path.exists(out):
        if not a.force:
            sys.exit(f"make_handout: {a.out_dir} exists (use --force to replace it)")
        shutil.rmtree(out)

    def stubbed(region):
        sub = em.subproject_of(region.path)
        return sub in subs and (not wanted or region.exercise in wanted or f"{sub}/{region.exercise}" in wanted)

    exercises = {}
    for f in files:
        if f.startswith(EXCLUDE_PREFIX) or f in EXCLUDE_FILES:
            continue
        src = os.path.join(ROOT, f)
        dst = os.path.join(out, f)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if f.endswith(em.SOURCE_EXT) and em.subproject_of(f):
            with open(src, encoding="utf-8") as fh:
                text = fh.read()
            new, removed = em.stub_text(f, text, assigned=stubbed)
            for r in removed:
                e = exercises.setdefault(em.subproject_of(f) + "/" + r.exercise,
                                         {"subproject": em.subproject_of(f), "name": r.exercise, "files": [], "regions": []})
                if f not in e["files"]:
                    e["files"].append(f)
                e["regions"].append({"file": f, "lines": len(r.lines), "sha256": r.digest()})
            with open(dst, "w", encoding="utf-8") as fh:
                fh.write(new)
        elif f == "grading/rubric.toml":  # the instructor's hidden cases stay with the instructor
            with open(src, encoding="utf-8") as fh:
                text = rubric_public_text(fh.read())
            with open(dst, "w", encoding="utf-8") as fh:
                fh.write(text)
        else:
            shutil.copy2(src, dst)
    for sub in subs:
        readme = os.path.join(ROOT, sub, "README.md")
        if os.path.exists(readme):
            mine = {k: v for k, v in exercises.items() if v["subproject"] == sub}
            with open(readme, encoding="utf-8") as fh:
                text = student_readme(fh.read(), sub, mine)
            with open(os.path.join(out, sub, "README.md"), "w", encoding="utf-8") as fh:
                fh.write(text)
    with open(os.path.join(ROOT, "docs", "handout_README.md"), encoding="utf-8") as fh:
        top = fh.read()
    rows = "\n".join(f"| {v['subproject']} | `{v['name']}` | {', '.join('`' + x + '`' for x in v['files'])} |"
                     for k, v in sorted(exercises.items(), key=lambda kv: (kv[1]["subproject"], kv[0])))
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8") as fh:
        fh.write(top.replace("{{EXERCISES}}", "| sub-project | exercise | files |\n|---|---|---|\n" + rows))
    sha = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    with open(os.path.join(out, "HANDOUT.json"), "w", encoding="utf-8") as fh:
        json.dump({"from_solution": sha or "unknown", "subprojects": subs, "exercises": exercises}, fh, indent=1, sort_keys=True)
        fh.write("\n")
    n = sum(len(v["regions"]) for v in exercises.values())
    print(f"make_handout: {len(exercises)} exercises ({n} regions) in {', '.join(subs)} -> {a.out_dir}")
    for k, v in sorted(exercises.items(), key=lambda kv: (kv[1]["subproject"], kv[0])):
        print(f"  {v['subproject']:18s} {v['name']:24s} {', '.join(v['files'])}")


if __name__ == "__main__":
    main()
