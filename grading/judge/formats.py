"""What the grader writes. Per student: report.json (everything, typed), report.md (the feedback),
Gradescope's results.json (score, tests[], leaderboard) and a JUnit XML. A hidden case's
specifics are in a version's detail only where its rubric visibility is "visible" (score.py);
report.json keeps every case for the instructor. Per class: grades.csv
(one column per version) and gradebook.csv (one row per student, one column per sub-project and
the total: what an LMS imports)."""

from __future__ import annotations

import csv
import json
import os
import tempfile
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, Any

from .model import Status, to_json

if TYPE_CHECKING:
    from judge.model import StudentReport
    from judge.rubric import VersionRule

# grades.csv: these columns, then one per graded version (subproject/version).
GRADES_FIXED_COLUMNS = (
    "student",
    "points",
    "points_max",
    "device",
    "build_error",
    "edited_outside",
    "submission_commit",
    "rubric_sha256",
)


def atomic_write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".tmp-")
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    os.replace(tmp, path)


def write_all(report: StudentReport, out_dir: str, max_output: int = 4000) -> None:
    os.makedirs(out_dir, exist_ok=True)
    atomic_write(os.path.join(out_dir, "report.json"), json.dumps(to_json(report), indent=1) + "\n")
    atomic_write(os.path.join(out_dir, "report.md"), markdown(report))
    atomic_write(os.path.join(out_dir, "results.json"), json.dumps(gradescope(report, max_output), indent=1) + "\n")
    atomic_write(os.path.join(out_dir, "junit.xml"), junit(report))


def markdown(r: StudentReport) -> str:
    p = r.provenance
    L = [f"# Grade report: {r.student}", "", f"**{r.points:g} / {r.points_max:g} points** on {p.device}.", ""]
    if r.build_error:
        L += [f"**Does not build** in the instructor's tree: `{r.build_error}`", ""]
    if r.edited_outside:
        L += [
            "Edited outside the exercises (ignored; the instructor's files were used): "
            + ", ".join(f"`{f}`" for f in r.edited_outside),
            "",
        ]
    for n in r.notes:
        L += [f"- {n}"]
    if r.notes:
        L.append("")
    L += [
        "| sub-project | version | status | detail | time (ms) | x reference | points |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for g in r.grades:
        detail = g.detail.replace("|", "/").replace("\n", " ")
        detail = detail if len(detail) <= 160 else detail[:157] + "..."
        ms = f"{g.ms:.4g}" if g.ms else ""
        ratio = f"{g.ratio_to_reference:.2f}x" if g.ratio_to_reference else g.speed_note[:50]
        L.append(
            f"| {g.subproject} | `{g.version}` | {g.status.value} | {detail} | {ms} | {ratio} | "
            f"{g.points:g} / {g.points_max:g} |"
        )
    bad = [(g, k) for g in r.grades for c in g.cases for k in c.kernels if not k.allowed]
    if bad or any(g.static_findings for g in r.grades):
        L += ["", "## Work that is not the version's own", ""]
        for g, k in bad:
            L.append(f"- `{g.version}` ran `{k.name}` x{k.launches}: {k.owner} ({k.defined_in})")
        for g in r.grades:
            for f in g.static_findings:
                L.append(f"- `{g.version}`: {f}")
    L += [
        "",
        "## Reproducing this grade",
        "",
        f"- submission: `{p.submission_commit}` ({p.submission_time})",
        f"- instructor tree: `{p.instructor_commit}`, rubric sha256 `{p.rubric_sha256[:16]}`",
        f"- device: {p.device}, driver {p.driver_version or 'n/a'}, CUDA toolkit {p.toolkit or 'n/a'}",
        f"- graded {p.graded_at} on {p.host}; build {r.build_seconds:g} s, runs {r.run_seconds:g} s",
        "",
    ]
    return "\n".join(L)


def gradescope(r: StudentReport, max_output: int = 4000) -> dict[str, Any]:
    """Gradescope's results.json: one test per graded version (its points, its status, the failing
    case as output), hidden cases by their visibility, and the speed ranking as the leaderboard."""
    tests = []
    for i, g in enumerate(r.grades, 1):
        out = f"{g.status.value}: {g.detail}"
        if g.ms:
            out += f"\ntime {g.ms:.4g} ms" + (
                f", {g.ratio_to_reference:.2f}x the reference" if g.ratio_to_reference else ""
            )
        if g.speed_note:
            out += f"\n{g.speed_note}"
        tests.append(
            {
                "name": f"{g.subproject}/{g.version}",
                "number": str(i),
                "score": g.points,
                "max_score": g.points_max,
                "status": "passed" if g.status is Status.CORRECT else "failed",
                "output": out[:max_output],
                "visibility": "visible",
                "tags": [g.subproject, g.status.value],
            }
        )
    head = [f"{r.points:g} / {r.points_max:g} points on {r.provenance.device}"]
    if r.build_error:
        head.append(f"does not build: {r.build_error}")
    if r.edited_outside:
        head.append("edited outside the exercises (ignored): " + ", ".join(r.edited_outside))
    head += r.notes
    speed = [g for g in r.grades if g.ratio_to_reference]
    board = [{"name": "points", "value": r.points, "order": "desc"}]
    if speed:
        gm = 1.0
        for g in speed:
            gm *= g.ratio_to_reference
        board.append(
            {"name": "speed vs reference (geomean)", "value": round(gm ** (1 / len(speed)), 3), "order": "desc"}
        )
    return {
        "score": r.points,
        "execution_time": int(round(r.build_seconds + r.run_seconds)),
        "output": "\n".join(head)[:max_output],
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "leaderboard": board,
    }


def junit(r: StudentReport) -> str:
    suite = ET.Element(
        "testsuite",
        name=f"grade.{r.student}",
        tests=str(len(r.grades)),
        failures=str(sum(g.status not in (Status.CORRECT, Status.NOT_GRADABLE) for g in r.grades)),
        skipped=str(sum(g.status is Status.NOT_GRADABLE for g in r.grades)),
        time=f"{r.build_seconds + r.run_seconds:.1f}",
    )
    props = ET.SubElement(suite, "properties")
    for k, v in to_json(r.provenance).items():
        ET.SubElement(props, "property", name=k, value=str(v))
    for g in r.grades:
        tc = ET.SubElement(
            suite, "testcase", classname=g.subproject, name=g.version, time=f"{sum(c.seconds for c in g.cases):.2f}"
        )
        if g.status is Status.NOT_GRADABLE:
            ET.SubElement(tc, "skipped", message=g.detail[:500])
        elif g.status is not Status.CORRECT:
            ET.SubElement(tc, "failure", message=f"{g.status.value}: {g.detail}"[:500], type=g.status.value)
        ET.SubElement(tc, "system-out").text = f"points {g.points:g} / {g.points_max:g}"
    return ET.tostring(suite, encoding="unicode") + "\n"


def class_files(reports: list[StudentReport], out_dir: str, rules: list[VersionRule]) -> None:
    """grades.csv (per version: status and points) and gradebook.csv (per sub-project and total)."""
    subs = []
    for rule in rules:
        if rule.subproject not in subs:
            subs.append(rule.subproject)
    keys = [rule.key for rule in rules]
    grades_rows, book_rows = [], []
    for r in sorted(reports, key=lambda x: x.student):
        row = {
            "student": r.student,
            "points": r.points,
            "points_max": r.points_max,
            "device": r.provenance.device,
            "build_error": r.build_error,
            "edited_outside": " ".join(r.edited_outside),
            "submission_commit": r.provenance.submission_commit,
            "rubric_sha256": r.provenance.rubric_sha256,
        }
        by_key = {g.key: g for g in r.grades}
        for k in keys:
            g = by_key.get(k)
            row[k] = f"{g.status.value}:{g.points:g}" if g else ""
        grades_rows.append(row)
        per = r.by_subproject()
        book = {"Student": r.student}
        # a student the grader failed on is left ungraded (empty cells), not given a 0
        ungraded = bool(r.grades) and all(g.status is Status.HARNESS_ERROR for g in r.grades)
        for s in subs:
            book[s] = "" if ungraded else f"{per.get(s, (0.0, 0.0))[0]:g}"
        book["Total"] = "" if ungraded else f"{r.points:g}"
        book_rows.append(book)
    maxima = {}
    for rule_key in keys:
        sub = rule_key.split("/")[0]
        maxima[sub] = maxima.get(sub, 0.0) + next(
            (g.points_max for r in reports for g in r.grades if g.key == rule_key), 0.0
        )
    write_csv(
        os.path.join(out_dir, "grades.csv"),
        grades_rows,
        list(GRADES_FIXED_COLUMNS) + keys,
    )
    points_possible = {
        "Student": "Points Possible",
        **{s: f"{maxima.get(s, 0.0):g}" for s in subs},
        "Total": f"{sum(maxima.values()):g}",
    }
    write_csv(os.path.join(out_dir, "gradebook.csv"), [points_possible] + book_rows, ["Student"] + subs + ["Total"])


def write_csv(path: str, rows: list[dict[str, str | float | int]], cols: list[str]) -> None:
    import io

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    atomic_write(path, buf.getvalue())
