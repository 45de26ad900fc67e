#!/usr/bin/env python3
"""The handout, end to end, as CI and the GPU check run it:

1. make_handout.py writes the starter repository; check_handout.py finds no solution text in it
2. it configures, builds and passes its tests: nothing fails, and no per-version CTest case of a
   graded version passes (each is skipped: not implemented, or no GPU here)
3. grade.py gives it 0 points with no crash, timeout or harness error: every graded version is
   "not written" (or "not gradable" where this machine cannot run it)
4. one exercise is filled in from the solution (its files rewritten with that exercise's
   regions solved), the build is updated, and grade.py now finds exactly the versions that
   need only that exercise correct, with their points

  scripts/handout_selftest.py WORK_DIR [--subproject SUB[,SUB]] [--fill stream_compaction/cpu_compact_with_scan]
                                       [--expect compact_cpu_scan] [--reference REPORT.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import exercise_markers as em
from make_handout import ROOT

HERE = os.path.dirname(os.path.abspath(__file__))


def sh(cmd: list[str], cwd: str | None = None, log: str | None = None) -> None:
    print("$ " + " ".join(cmd), flush=True)
    if log:
        with open(log, "w") as fh:
            r = subprocess.run(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT)
    else:
        r = subprocess.run(cmd, cwd=cwd)
    if r.returncode != 0:
        if log:
            print(Path(log).read_text()[-4000:])
        sys.exit(f"handout_selftest: failed ({r.returncode}): {' '.join(cmd)}")


def grade(handout: str, out: str, extra: list[str]) -> dict[str, Any]:
    """The handout graded by its own grader (a student's self-check: the handout is its own instructor
    tree), as report.json's version rows with "subproject", "version", "status", "points"."""
    sh(
        [
            sys.executable,
            os.path.join(handout, "scripts", "grade.py"),
            "--checkout",
            handout,
            "--out",
            out,
            "--gpus",
            "all" if has_gpu() else "0",
        ]
        + extra
    )
    from judge import intake  # the report's folder: OUT/students/<the checkout's safe id>

    sid = intake.safe_id(os.path.basename(os.path.normpath(handout)))
    rep = json.loads(Path(os.path.join(out, "students", sid, "report.json")).read_text())
    rep["versions"] = rep["grades"]
    rep["not_gradable"] = [n for n in rep["notes"] if "not graded in this job" in n]
    return rep


def has_gpu() -> bool:
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
    except OSError:
        return False


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("work")
    ap.add_argument("--subproject", default=",".join(em.SUBPROJECTS), help="the handout's assignment (make_handout.py)")
    ap.add_argument("--fill", default="stream_compaction/cpu_compact_with_scan")
    ap.add_argument(
        "--expect",
        default="stream_compaction/compact_cpu_scan",
        help="the graded versions that must become correct once --fill is written (comma-separated)",
    )
    ap.add_argument("--reference", help="(unused: the grader times its reference itself)")
    ap.add_argument("--jobs", default=str(os.cpu_count() or 2))
    a = ap.parse_args()
    a.work = os.path.abspath(a.work)  # ctest and the builds run inside the handout: no relative paths
    handout = os.path.join(a.work, "handout")
    os.makedirs(a.work, exist_ok=True)
    extra = []

    sh([sys.executable, os.path.join(HERE, "make_handout.py"), handout, "--force", "--subproject", a.subproject])
    sh([sys.executable, os.path.join(HERE, "check_handout.py"), handout])
    # as scripts/run_tests.sh: the GPU's own architecture, or without a GPU the ci preset's one
    preset = os.environ.get("PRESET") or ("release" if has_gpu() else "ci")
    sh(["cmake", "--preset", preset], cwd=handout, log=os.path.join(a.work, "configure.log"))
    sh(["cmake", "--build", "--preset", preset, "-j", a.jobs], cwd=handout, log=os.path.join(a.work, "build.log"))
    junit = os.path.join(a.work, "junit.xml")
    with open(os.path.join(a.work, "ctest.log"), "w") as log:
        r = subprocess.run(
            ["ctest", "--preset", preset, "-j", a.jobs, "--output-junit", junit],
            cwd=handout,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    failed = [n for n, c in cases.items() if c.get("status") == "fail" or c.find("failure") is not None]
    if r.returncode != 0 or failed:
        print(Path(os.path.join(a.work, "ctest.log")).read_text()[-3000:])
        sys.exit(f"handout_selftest: the handout's tests failed: {failed}")
    rubric_versions = []
    from judge import rubric as rubric_mod

    subs = a.subproject.split(",")
    rubric_versions = [
        f"{r.subproject}.{r.version}"
        for r in rubric_mod.load(os.path.join(ROOT, "grading", "rubric.toml")).versions
        if r.subproject in subs
    ]
    sh([sys.executable, os.path.join(HERE, "test_summary.py"), junit])
    passed = [v for v in rubric_versions if v in cases and cases[v].get("status") == "run"]
    if passed:
        sys.exit(f"handout_selftest: per-version cases of unwritten versions passed: {passed}")
    print(
        f"handout_selftest: {len(cases)} tests, 0 failed; the {len(rubric_versions)} graded versions' cases "
        f"are all skipped, none passed"
    )

    g0 = grade(handout, os.path.join(a.work, "grade_handout"), extra)
    bad = [
        f"{v['subproject']}/{v['version']}: {v['status']}"
        for v in g0["versions"]
        if v["status"] not in ("not written", "not gradable")
    ]
    if g0["points"] != 0 or bad:
        sys.exit(f"handout_selftest: the handout scored {g0['points']} points; unexpected statuses: {bad}")
    n_ni = sum(v["status"] == "not written" for v in g0["versions"])
    print(
        f"handout_selftest: the handout scores 0 / {g0['points_max']:g}: {n_ni} not written, "
        f"{len(g0['not_gradable'])} not gradable here"
    )

    # fill one exercise from the solution
    sub, name = a.fill.split("/")
    info = json.loads(Path(os.path.join(handout, "HANDOUT.json")).read_text())["exercises"].get(a.fill)
    if not info:
        sys.exit(f"handout_selftest: --fill {a.fill}: not an exercise of the handout")
    man = json.loads(Path(os.path.join(handout, "HANDOUT.json")).read_text())
    subs_, included = man["subprojects"], man.get("included") or em.closure(man["subprojects"])
    for f in info["files"]:
        text = Path(os.path.join(ROOT, f)).read_text(encoding="utf-8")
        new, _ = em.stub_text(
            f,
            text,
            keep=lambda reg: reg.key == a.fill,
            assigned=lambda reg: em.role(reg, subs_, included) == "assigned",
            withheld=lambda reg: em.role(reg, subs_, included) == "withheld",
        )
        with open(os.path.join(handout, f), "w", encoding="utf-8") as fh:
            fh.write(new)
    sh(
        ["cmake", "--build", "--preset", preset, "-j", a.jobs],
        cwd=handout,
        log=os.path.join(a.work, "build_filled.log"),
    )
    g1 = grade(handout, os.path.join(a.work, "grade_filled"), extra)
    expect = set(a.expect.split(","))
    correct = {f"{v['subproject']}/{v['version']}" for v in g1["versions"] if v["status"] == "correct"}
    before = {f"{v['subproject']}/{v['version']}": v["status"] for v in g0["versions"]}
    changed = {
        k for k, v in ((f"{v['subproject']}/{v['version']}", v["status"]) for v in g1["versions"]) if v != before.get(k)
    }
    earned = {f"{v['subproject']}/{v['version']}": v["points"] for v in g1["versions"] if v["points"] > 0}
    if correct != expect or changed != expect or set(earned) != expect:
        sys.exit(
            f"handout_selftest: after filling {a.fill}: correct {sorted(correct)}, changed {sorted(changed)}, "
            f"earning {earned}; expected exactly {sorted(expect)}"
        )
    print(
        f"handout_selftest: filling {a.fill} makes exactly {', '.join(sorted(expect))} correct: "
        f"{g1['points']:g} / {g1['points_max']:g} points"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
