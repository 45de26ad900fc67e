"""What the grader writes. Per student, in OUT/students/<id>/ (intake.safe_id: no student can name a
class file): report.json (everything, typed), report.md (the feedback), Gradescope's results.json
(score, tests[], leaderboard) and a JUnit XML. A hidden case's specifics are in a version's detail
only where its rubric visibility is "visible" (score.py), and a hidden case's arguments (its seed)
are in no file. Per class, in OUT/: grades.csv (one column per version), gradebook.csv (one row per
student, one column per sub-project and the total: what an LMS imports) and skipped.csv (the class
folder's entries that were not graded, and why).

Much of what a report shows is the student's: a detail is the driver's or the compiler's output, a
kernel or symbol name is the student's, a folder or file name too. Every such field is made safe
for the format's reader: control characters and ANSI escape sequences removed (newlines and tabs
kept where the format has room for them), the characters XML 1.0 forbids stripped, Markdown
escaped so that it cannot change the report's structure, and a CSV cell never read as a formula."""

from __future__ import annotations

import csv
import json
import os
import re
import tempfile
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, Any, Callable

from . import checker_profile
from .model import Status, TestResult, VersionGrade, to_json

if TYPE_CHECKING:
    from judge.model import StudentReport
    from judge.rubric import VersionRule

# grades.csv: these columns, then one per graded version (subproject/version).
GRADES_FIXED_COLUMNS = (
    "student",
    "id",  # the student's folder under OUT/students/ (intake.safe_id of the name)
    "points",
    "points_max",
    "device",
    "build_error",
    "edited_outside",
    "submission_commit",
    "rubric_sha256",
)


STUDENTS_DIR = "students"  # OUT/students/<id>/: a student's reports; class files sit in OUT/

# ESC [ ... final byte (CSI), ESC ] ... BEL or ESC \ (OSC), ESC P/X/^/_ ... ESC \ (strings), and any
# other two-byte escape; then the C0 and C1 controls, DEL, lone surrogates, the non-characters XML
# forbids, and the bidirectional overrides that reorder what a reader sees (Trojan Source)
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?|\x9b[0-?]*[ -/]*[@-~]?|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[@-_]?"
)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff\u202a-\u202e\u2066-\u2069]")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#!|~&$])")
_MD_LINE_START = re.compile(r"^(\s*)(\d*)([-+=>.)])")


def student_dir(out: str, student_id: str) -> str:
    """The folder of one student's reports: OUT/students/<id>."""
    return os.path.join(out, STUDENTS_DIR, student_id)


def clean(text: object, newlines: bool = True) -> str:
    """A student-controlled value as text any reader takes: no ANSI escape sequence, no control
    character (newlines and tabs kept when `newlines`, else made spaces), no character XML 1.0
    forbids, no bidirectional override."""
    s = _ANSI.sub("", str(text).replace("\r\n", "\n"))
    s = _CONTROL.sub("", s.replace("\r", "\n"))
    return s if newlines else s.replace("\n", " ").replace("\t", " ")


def md(text: object) -> str:
    """A student-controlled value inline in Markdown: clean(), on one line, with every character
    that starts Markdown or HTML syntax escaped (emphasis, code, links, images, raw HTML, entities,
    table cells, headings and list markers at the start of a line)."""
    s = _MD_SPECIAL.sub(r"\\\1", clean(text, newlines=False))

    # A list marker's punctuation is what gets the backslash: 580\. shows as "580." anywhere, where
    # a backslash before the digit would be shown as it is (\580.159.04).
    def escape(m: re.Match) -> str:
        marker_digits, mark = m.group(2), m.group(3)
        if not marker_digits and mark in ".)":
            return m.group(0)  # "." or ")" alone starts nothing
        return m.group(1) + marker_digits + "\\" + mark

    return _MD_LINE_START.sub(escape, s)


def md_code(text: object) -> str:
    """A student-controlled value as a Markdown code span (literal, whatever it holds): fenced by more
    backticks than any run inside it, on one line, with `|` escaped for a table cell."""
    s = clean(text, newlines=False).replace("|", "\\|")
    run = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (run + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip() else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def csv_cell(value: object) -> object:
    """A CSV cell a spreadsheet reads as text: clean(), on one line, and never a formula (a leading
    = + - @ or tab gets a leading apostrophe, as OWASP recommends); numbers stay numbers."""
    if isinstance(value, (int, float)):
        return value
    s = clean(value, newlines=False)
    return "'" + s if s[:1] in ("=", "+", "-", "@", "\t") else s


def shown_name(r: StudentReport) -> str:
    return clean(r.display_name or r.student, newlines=False)


def atomic_write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".tmp-")
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    os.replace(tmp, path)


def write_all(report: StudentReport, out_dir: str, max_output: int = 4000) -> None:
    os.makedirs(out_dir, exist_ok=True)
    atomic_write(os.path.join(out_dir, "report.json"), json.dumps(report_json(report), indent=1) + "\n")
    atomic_write(os.path.join(out_dir, "report.md"), markdown(report))
    atomic_write(os.path.join(out_dir, "results.json"), json.dumps(gradescope(report, max_output), indent=1) + "\n")
    atomic_write(os.path.join(out_dir, "junit.xml"), junit(report))


def report_json(r: StudentReport) -> dict[str, Any]:
    """report.json: everything, typed (the Slurm merge reads it back), but nothing of a hidden case
    whose visibility is not "visible" beyond its name and status: not its arguments (its seed), not
    its detail (the failing input). The instructor finds them in the run's log (OUT/.grader/work/)."""
    d = to_json(r)
    for g in d["grades"]:
        for c in g.get("cases", []):
            if c.get("hidden") and c.get("visibility") != "visible":
                c["command"] = " ".join(c.get("command", "").split(" ")[:3]) + " (a hidden case's arguments)"
                c["detail"] = "(a hidden case's detail)" if c.get("detail") else ""
                for k, t in enumerate(c.get("tests", []), 1):  # a test's name is its size and parameters
                    t["name"], t["what"] = f"test {k}", ""
                    t["detail"] = "(a hidden case's detail)" if t.get("detail") else ""
    return d


def _truncate(text: str, n: int) -> str:
    text = clean(text, newlines=False)
    return text if len(text) <= n else text[: n - 3] + "..."


def shown_tests(g: VersionGrade) -> list[tuple[str, TestResult, float, float]]:
    """A version's tests as its reports show them: (name, test, points, max points). A test of a
    hidden case shows its case's name only (its size and parameters are the case's secret); each
    test's share of the correctness points is its weight's, earned where it passed and the
    version earned points at all."""
    tests = [(c, t) for c in g.cases for t in c.tests]
    total = sum(t.weight for _, t in tests)
    earned = sum(t.weight for _, t in tests if t.status is Status.CORRECT)
    out = []
    for k, (c, t) in enumerate(tests, 1):
        top = round(g.points_correct_max * t.weight / total, 2) if total else 0.0
        # the version's correctness points (after a memcheck deduction, if any) over its passed tests
        share = g.points_correct * t.weight / earned if earned else 0.0
        got = round(share, 2) if t.status is Status.CORRECT and g.points_correct > 0 else 0.0
        if c.hidden and c.visibility != "visible":
            name = f"hidden case '{c.name}', test {k}"
        else:
            name = (f"{c.name}: " if c.hidden else "") + t.name + (f" ({t.what})" if t.what else "")
        out.append((name, t, got, top))
    return out


def _md_grades(r: StudentReport) -> list[str]:
    L = [
        "| sub-project | version | status | detail | time (ms) | x reference | points |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for g in r.grades:
        ms = f"{g.ms:.4g}" if g.ms else ""
        ratio = f"{g.ratio_to_reference:.2f}x" if g.ratio_to_reference else md(_truncate(g.speed_note, 50))
        detail = md(_truncate(g.detail, 160))
        L.append(
            f"| {clean(g.subproject, False)} | {md_code(g.version)} | {g.status.value} | {detail} | "
            f"{ms} | {ratio} | {g.points:g} / {g.points_max:g} |"
        )
    failing = [(g, name, t) for g in r.grades for name, t, _, _ in shown_tests(g) if t.status is not Status.CORRECT]
    if failing:
        L += ["", "## Cases that failed", ""]
        for g, name, t in failing[:60]:
            why = t.status.value if name.startswith("hidden case") else f"{t.status.value}: {_truncate(t.detail, 300)}"
            why = why.rstrip(": ")
            L.append(f"- {md_code(g.version)} {md(name)}: {md(why)}")
        if len(failing) > 60:
            L.append(f"- ... and {len(failing) - 60} more")
    leaks = [g for g in r.grades if g.memcheck]
    if leaks:
        L += ["", "## Memory errors (compute-sanitizer memcheck, one small size)", ""]
        L += [f"- {md_code(g.version)}: {md(_truncate(g.memcheck, 400))}" for g in leaks]
    L += _md_profiles(r)
    bad = [(g, k) for g in r.grades for c in g.cases for k in c.kernels if not k.allowed]
    if bad or any(g.static_findings for g in r.grades):
        L += ["", "## Work that is not the version's own", ""]
        for g, k in bad:
            L.append(f"- {md_code(g.version)} ran {md_code(k.name)} x{k.launches}: {md(k.owner)} ({md(k.defined_in)})")
        for g in r.grades:
            for f in g.static_findings:
                L.append(f"- {md_code(g.version)}: {md(f)}")
    return L


def _md_number(p: dict[str, Any], key: str, digits: int) -> str:
    v = p.get(key)
    if not isinstance(v, (int, float)):
        return ""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.{digits}f}"


def _md_profiles(r: StudentReport) -> list[str]:
    """The profile of each graded GPU version (checker_profile): a table, for information."""
    shown = [g for g in r.grades if g.profile]
    if not shown:
        return []
    L = [
        "",
        "## Profile of each version (Nsight Compute on the grading GPU, for information: no points)",
        "",
        "| version | kernels | time (ms) | DRAM GB/s | % of copy | occupancy % (achieved / theoretical) | registers "
        "| spills | shared B / block | largest stalls (cycles per issue) | heaviest kernel |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for g in shown:
        p = g.profile
        if p.get("status") != "profiled":
            why = md(_truncate(f"{p.get('status', '')}: {p.get('detail', '')}", 300))
            L.append(f"| {md_code(g.version)} | {why} |" + " |" * 9)
            continue
        occ = f"{_md_number(p, 'achieved_occupancy', 1)} / {_md_number(p, 'theoretical_occupancy', 1)}"
        stalls = ", ".join(f"{md(reason)} {value:.2f}" for reason, value in p.get("stalls", []))
        heavy = p.get("heaviest")
        heavy_text = f"{md_code(heavy[0])} {heavy[1]:.0f}%" if heavy else ""
        L.append(
            f"| {md_code(g.version)} | {_md_number(p, 'kernels', 0)} | {_md_number(p, 'duration_ms', 4)} | "
            f"{_md_number(p, 'dram_gbs', 1)} | {_md_number(p, 'dram_pct_of_copy', 1)} | {occ} | "
            f"{_md_number(p, 'registers', 0)} | {_md_number(p, 'spill_instructions', 0)} | "
            f"{_md_number(p, 'shared_memory', 0)} | {stalls} | {heavy_text} |"
        )
    return L


def markdown(r: StudentReport) -> str:
    """report.md: every student-controlled field escaped (md, md_code): it cannot add a heading, a
    table row, a link, raw HTML or a terminal escape to the report."""
    p = r.provenance
    L = [
        f"# Grade report: {md(shown_name(r))}",
        "",
        f"**{r.points:g} / {r.points_max:g} points** on {md(p.device)}.",
        "",
    ]
    if r.build_error:
        L += [f"**Does not build** in the instructor's tree: {md_code(_truncate(r.build_error, 400))}", ""]
    if r.edited_outside:
        L += [
            "Edited outside the exercises (ignored; the instructor's files were used): "
            + ", ".join(md_code(f) for f in r.edited_outside),
            "",
        ]
    for n in r.notes:
        L += [f"- {md(n)}"]
    if r.notes:
        L.append("")
    L += _md_grades(r)
    L += [
        "",
        "## Reproducing this grade",
        "",
        f"- submission: {md_code(p.submission_commit)} ({md(p.submission_time)})",
        f"- instructor tree: {md_code(p.instructor_commit)}, rubric sha256 {md_code(p.rubric_sha256[:16])}",
        f"- device: {md(p.device)}, driver {md(p.driver_version or 'n/a')}, CUDA toolkit {md(p.toolkit or 'n/a')}",
        f"- graded {md(p.graded_at)} on {md(p.host)}; build {r.build_seconds:g} s, runs {r.run_seconds:g} s",
        "",
    ]
    return "\n".join(L)


def gradescope(r: StudentReport, max_output: int = 4000) -> dict[str, Any]:
    """Gradescope's results.json: one test per graded version (its points, its status, the failing
    case as output), hidden cases by their visibility, and the speed ranking as the leaderboard."""
    tests = [t for i, g in enumerate(r.grades, 1) for t in _gs_version(i, g, max_output)]
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
        "output": "\n".join(clean(h, newlines=False) for h in head)[:max_output],
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "leaderboard": board,
    }


def _gs_version(i: int, g: VersionGrade, max_output: int) -> list[dict[str, Any]]:
    """A version's Gradescope tests: one per case of it (its share of the correctness points, the
    version's status and detail on the first), then its speed; one for the version where nothing ran."""
    tests: list[dict[str, Any]] = []
    out = f"{g.status.value}: {g.detail}"
    if g.ms:
        out += f"\ntime {g.ms:.4g} ms" + (
            f", {g.ratio_to_reference:.2f}x the reference" if g.ratio_to_reference else ""
        )
    if g.speed_note:
        out += f"\n{g.speed_note}"
    if g.memcheck:
        out += f"\nmemcheck: {g.memcheck}"
    if g.profile:
        out += f"\nprofile (Nsight Compute, for information): {checker_profile.line(g.profile)}"
    key = clean(f"{g.subproject}/{g.version}", newlines=False)
    tags = [clean(g.subproject, newlines=False), g.status.value]
    shown = shown_tests(g)
    if not shown:  # nothing ran (does not build, refused): the version is one test
        tests.append(_gs_test(key, f"{i}", g.points, g.points_max, g.status is Status.CORRECT, out, tags, max_output))
        return tests
    # one test per case of the version (its share of the correctness points), then its speed
    for k, (name, t, got, top) in enumerate(shown, 1):
        ok = t.status is Status.CORRECT and g.points_correct > 0
        text = (
            t.status.value
            if name.startswith("hidden case")
            else f"{t.status.value}" + (f": {t.detail}" if t.detail else "")
        )
        if k == 1:
            text = out + "\n" + text
        tests.append(_gs_test(f"{key} {clean(name, False)}", f"{i}.{k}", got, top, ok, text, tags, max_output))
    if g.points_speed_max:
        speed = f"speed: {g.ratio_to_reference:.2f}x the reference" if g.ratio_to_reference else g.speed_note
        tests.append(
            _gs_test(
                f"{key} speed",
                f"{i}.{len(shown) + 1}",
                g.points_speed,
                g.points_speed_max,
                g.points_speed >= g.points_speed_max,
                speed or "no time",
                tags,
                max_output,
            )
        )
    return tests


def _gs_test(
    name: str, number: str, score: float, top: float, ok: bool, output: str, tags: list[str], max_output: int
) -> dict[str, Any]:
    return {
        "name": name,
        "number": number,
        "score": score,
        "max_score": top,
        "status": "passed" if ok else "failed",
        "output": clean(output)[:max_output],
        "visibility": "visible",
        "tags": tags,
    }


def junit(r: StudentReport) -> str:
    """JUnit XML, well-formed whatever the fields hold: every text and attribute clean() (no
    character XML 1.0 forbids, no escape sequence), then escaped by ElementTree."""
    suite = ET.Element(
        "testsuite",
        name=clean(f"grade.{r.student}", newlines=False),
        tests=str(len(r.grades)),
        failures=str(sum(g.status not in (Status.CORRECT, Status.NOT_GRADABLE) for g in r.grades)),
        skipped=str(sum(g.status is Status.NOT_GRADABLE for g in r.grades)),
        time=f"{r.build_seconds + r.run_seconds:.1f}",
    )
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="student", value=shown_name(r))
    for k, v in to_json(r.provenance).items():
        ET.SubElement(props, "property", name=k, value=clean(v, newlines=False))
    count = failures = skipped = 0
    for g in r.grades:
        shown = shown_tests(g) if g.status not in (Status.NOT_GRADABLE, Status.NOT_OWN_WORK, Status.REFUSED) else []
        # a version is one testcase where nothing of it ran or it is not the student's work, else one per case
        for name, t, got, top in shown or [("", None, g.points, g.points_max)]:
            tc = ET.SubElement(
                suite,
                "testcase",
                classname=clean(f"{g.subproject}.{g.version}", newlines=False),
                name=clean(name or g.version, newlines=False),
                time=f"{sum(c.seconds for c in g.cases) / max(1, len(shown)):.2f}",
            )
            count += 1
            status, detail = (g.status, g.detail) if t is None else (t.status, t.detail)
            if name.startswith("hidden case"):
                detail = ""
            if status is Status.NOT_GRADABLE:
                skipped += 1
                ET.SubElement(tc, "skipped", message=clean(detail[:500], newlines=False))
            elif status is not Status.CORRECT or (t is not None and got < top):
                failures += 1
                message = clean(f"{status.value}: {detail}"[:500], newlines=False)
                ET.SubElement(tc, "failure", message=message, type=status.value)
            ET.SubElement(tc, "system-out").text = f"points {got:g} / {top:g}"
    suite.set("tests", str(count))
    suite.set("failures", str(failures))
    suite.set("skipped", str(skipped))
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
            "student": shown_name(r),
            "id": r.student,
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
        book = {"Student": shown_name(r)}
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
    w.writerows({k: csv_cell(v) for k, v in row.items()} for row in rows)
    atomic_write(path, buf.getvalue())


def skipped_file(out_dir: str, skipped: list, progress: Callable[[str], None] = print) -> None:
    """skipped.csv: every entry of the class folder that was not graded, and why (intake.Skipped);
    each is printed too. Written even when empty: a class whose every entry was graded says so."""
    for s in skipped:
        progress(f"[grade] skipped {clean(s.name, newlines=False)!r}: {s.why}")
    write_csv(
        os.path.join(out_dir, "skipped.csv"), [{"entry": s.name, "reason": s.why} for s in skipped], ["entry", "reason"]
    )
