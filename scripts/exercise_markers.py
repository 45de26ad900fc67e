"""The exercise markers of the solution (common/exercise.hpp says what they mean), the stubs
that replace them in the handout, and the STUDENT blocks the grader takes from a submission. Used
by make_handout.py, check_handout.py and the grader (scripts/grader/assemble.py).

    // EXERCISE BEGIN [body] [unused(a, b)] [exercise=NAME]
    ...solution...
    // EXERCISE END

A region at file scope (kernels, helpers) is removed. A `body` region sits inside a function and
becomes `COURSE_NOT_IMPLEMENTED();`, after `(void)a;` for each parameter named in unused(...)
(the C++ files build with -Wall -Wextra). The exercise a region belongs to is its file's stem
(v1_naive, v4_graph, ...) unless exercise=NAME says otherwise (a header shared by two steps, the
CPU file that holds one exercise among reference code).

A region outside the sub-projects (common/: the warp and block scans, the one-sweep sort) names
its owners in order, `exercise=stream_compaction/v4_warp_shuffle,nbody/v6_warp_split,ndt_graph/-`:
in a handout it belongs to the first owner whose sub-project the handout holds. It is that
exercise's STUDENT block where that sub-project is assigned, solved where the sub-project is
only built on (an earlier assignment) or the owner is `-` (used, not taught), and withheld
(stubbed, no STUDENT block) where no owner is in the handout. A region inside a device function
says `device(EXPR)` (or `device()` for void): its stub records that it ran
(COURSE_DEVICE_NOT_IMPLEMENTED, common/exercise_device.cuh) and returns EXPR, and the version that
called it reports NOT IMPLEMENTED.

In the handout each region of the assignment is a STUDENT block: the student writes between
    // STUDENT BEGIN <exercise>: ...
    // STUDENT END <exercise>
and the grader takes exactly those lines, spliced into the instructor's own copy of the file.
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Callable, List, Optional, Sequence, Tuple

SOURCE_EXT = (".cu", ".cuh", ".cpp", ".hpp", ".h")
SUBPROJECTS = ("stream_compaction", "nbody", "ground_seg", "ndt_graph")
# What each sub-project builds on (links and calls): a handout of X holds these too, solved unless assigned.
DEPENDS = {"ground_seg": ("stream_compaction",)}


def closure(subprojects: list[str]) -> list[str]:
    """The sub-projects a handout of `subprojects` holds: them and what they build on, in course order."""
    want, todo = set(), list(subprojects)
    while todo:
        s = todo.pop()
        if s not in want:
            want.add(s)
            todo += DEPENDS.get(s, ())
    return [s for s in SUBPROJECTS if s in want]


_BEGIN = re.compile(r"^(\s*)// EXERCISE BEGIN\b(.*)$")
_END = re.compile(r"^\s*// EXERCISE END\s*$")
# In a handout: a block at column 0 is file scope, an indented one a function body.
_STUDENT_BEGIN_LINE = re.compile(r"^(\s*)// STUDENT BEGIN ([A-Za-z0-9_]+)\b")


_DEVICE = r"device\(((?:[^()]|\([^()]*\))*)\)"  # device(EXPR), EXPR with one level of parentheses


class MarkerError(Exception):
    pass


class Region:
    def __init__(
        self,
        path: str,
        owners: list[tuple[str, str | None]],
        body: bool,
        unused: list[str],
        indent: str,
        first: int,
        last: int,
        lines: list[str],
        device: str | None = None,
    ) -> None:
        self.path, self.owners, self.body, self.unused = path, owners, body, unused
        self.indent, self.first, self.last, self.lines = (
            indent,
            first,
            last,
            lines,
        )  # first/last: marker lines (0-based)
        self.device = device  # the stub's return expression in a device function ("" for void), else None
        self.resolve(SUBPROJECTS)

    def resolve(self, included: Sequence[str]) -> Region:
        """Picks the owner for a handout holding `included`: the first owner there, else (withheld) the first."""
        inc = [o for o in self.owners if o[0] in included]
        self.sub, self.exercise = (inc or self.owners)[0]
        self.in_handout = bool(inc)
        return self

    @property
    def key(self) -> str:
        return f"{self.sub}/{self.exercise}" if self.exercise else None

    def digest(self) -> str:
        return hashlib.sha256("\n".join(normalize(line) for line in self.lines).encode()).hexdigest()


def normalize(line: str) -> str:
    return " ".join(line.split())


def subproject_of(path: str) -> str | None:
    top = path.split("/", 1)[0]
    return top if top in SUBPROJECTS else None


def is_marker(line: str) -> bool:
    """True for an EXERCISE BEGIN or END line (not for one quoted in a comment)."""
    return bool(_BEGIN.match(line) or _END.match(line))


def role(region: Region, selected: list[str], included: list[str], wanted: Sequence[str] = ()) -> str:
    """What a handout holding `included` sub-projects, assigning `selected` (the exercises in `wanted`
    only, when given), does with a region: "assigned" (a STUDENT block), "solved" or "withheld"."""
    region.resolve(included)
    if not region.in_handout:
        return "withheld"
    if region.exercise is None or region.sub not in selected:
        return "solved"
    if wanted and region.key not in wanted and region.exercise not in wanted:
        return "solved"
    return "assigned"


def _owners(path: str, spec: str, stem: str, line_no: int) -> list[tuple[str, str | None]]:
    sub = subproject_of(path)
    if sub:
        if spec and "/" in spec:
            raise MarkerError(f"{path}:{line_no}: exercise={spec}: a sub-project's region names its exercise only")
        return [(sub, spec or stem)]
    if not spec:
        raise MarkerError(
            f"{path}:{line_no}: a region outside the sub-projects names its owners (exercise=SUBPROJECT/EXERCISE[,...])"
        )
    owners = []
    for item in spec.split(","):
        s, _, ex = item.partition("/")
        if s not in SUBPROJECTS or not ex:
            raise MarkerError(f"{path}:{line_no}: exercise={spec}: '{item}' is not SUBPROJECT/EXERCISE or SUBPROJECT/-")
        owners.append((s, None if ex == "-" else ex))
    return owners


# An open region while parse() reads on: (line index, indent, body, unused, owners, device)
_Open = Tuple[int, str, bool, List[str], List[Tuple[str, Optional[str]]], Optional[str]]


def _student_open(path: str, i: int, sb: re.Match, stem: str) -> _Open:
    """A handout's STUDENT block opened at line i (the handout as its own instructor tree: self-grading)."""
    name = sb.group(2)
    owners = _owners(path, name, stem, i + 1) if subproject_of(path) else [(x, name) for x in SUBPROJECTS]
    return (i, sb.group(1), len(sb.group(1)) > 0, [], owners, None)


def _exercise_open(path: str, i: int, m: re.Match, stem: str) -> _Open:
    """An EXERCISE BEGIN marker's region opened at line i, its arguments checked."""
    args = m.group(2)
    ex = re.search(r"exercise=([A-Za-z0-9_/,-]+)", args)
    un = re.search(r"unused\(([^)]*)\)", args)
    dev = re.search(_DEVICE, args)
    rest = re.sub(r"exercise=\S+|unused\([^)]*\)|" + _DEVICE, "", args).split()
    if any(w != "body" for w in rest):
        raise MarkerError(f"{path}:{i + 1}: unknown marker arguments {rest}")
    if dev and "body" not in rest:
        raise MarkerError(f"{path}:{i + 1}: device(...) is for a body region")
    return (
        i,
        m.group(1),
        "body" in rest,
        [u.strip() for u in un.group(1).split(",")] if un else [],
        _owners(path, ex.group(1) if ex else "", stem, i + 1),
        dev.group(1).strip() if dev else None,
    )


def parse(path: str, text: str, included: list[str] | None = None) -> list[Region]:
    """The regions of one file, in order, each resolved for a handout holding `included` (default: every
    sub-project). Raises MarkerError on a nested, unclosed or stray marker."""
    regions, open_at = [], None
    stem = os.path.splitext(os.path.basename(path))[0]
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = _BEGIN.match(line)
        sb = _STUDENT_BEGIN_LINE.match(line)
        if (sb or m) and open_at is not None:
            what = "STUDENT BEGIN" if sb else "EXERCISE BEGIN"
            raise MarkerError(f"{path}:{i + 1}: {what} inside the region opened at line {open_at[0] + 1}")
        if sb:
            open_at = _student_open(path, i, sb, stem)
        elif m:
            open_at = _exercise_open(path, i, m, stem)
        elif _END.match(line) or _STUDENT_END.match(line):
            if open_at is None:
                raise MarkerError(f"{path}:{i + 1}: EXERCISE END without a BEGIN")
            a, indent, body, unused, owners, device = open_at
            regions.append(Region(path, owners, body, unused, indent, a, i, lines[a + 1 : i], device))
            open_at = None
    if open_at is not None:
        raise MarkerError(f"{path}:{open_at[0] + 1}: EXERCISE BEGIN never closed")
    if included is not None:
        for r in regions:
            r.resolve(included)
    return regions


STUDENT_BEGIN = "// STUDENT BEGIN"
STUDENT_END = "// STUDENT END"
_STUDENT_BEGIN = re.compile(r"^\s*// STUDENT BEGIN ([A-Za-z0-9_]+)\b")
_STUDENT_END = re.compile(r"^\s*// STUDENT END ([A-Za-z0-9_]+)\s*$")


def stub_tag(path: str) -> str:
    """The identifier of a file's device-stub flag (COURSE_DEVICE_STUB_FILE)."""
    return re.sub(r"\W", "_", os.path.basename(path))


def starter_body(r: Region) -> list[str]:
    """The lines a stubbed region becomes (without markers): nothing at file scope; in a function,
    COURSE_NOT_IMPLEMENTED(), or in a device function the device stub and its return."""
    if not r.body:
        return []
    casts = "".join(f"(void){u}; " for u in r.unused if u)
    if r.device is not None:
        ret = f" return {r.device};" if r.device else ""
        return [f"{r.indent}{casts}COURSE_DEVICE_NOT_IMPLEMENTED({stub_tag(r.path)});{ret}"]
    return [f"{r.indent}{casts}COURSE_NOT_IMPLEMENTED();"]


def stub_lines(r: Region) -> list[str]:
    """What a student finds in place of region r: the starter body, between STUDENT markers."""
    hint = "write this body" if r.body else "write the kernels and helpers of this step here"
    return student_block(r, starter_body(r), hint)


def withheld_lines(r: Region) -> list[str]:
    """A region of a sub-project this handout does not hold: stubbed, not the student's to write."""
    note = f"{r.indent}// withheld from this handout: {r.key or r.sub} (not part of this assignment)"
    return [note] + starter_body(r)


def student_block(r: Region, inner: list[str], hint: str = "your code") -> list[str]:
    return (
        [f"{r.indent}{STUDENT_BEGIN} {r.exercise}: {hint} (only the lines between BEGIN and END are graded)"]
        + list(inner)
        + [f"{r.indent}{STUDENT_END} {r.exercise}"]
    )


def rewrite(path: str, text: str, replace: Callable[[Region], list[str] | None]) -> tuple[str, list[Region]]:
    """The file with each region replaced by replace(region) (a list of lines; None keeps the
    solution's lines without markers); (new_text, replaced_regions). The include of
    common/exercise.hpp is added where a starter body (COURSE_NOT_IMPLEMENTED) needs it."""
    regions = parse(path, text)
    lines = text.split("\n")
    out, replaced, at, inserted = [], [], 0, set()
    for r in regions:
        out.extend(lines[at : r.first])
        new = replace(r)
        if new is None:
            out.extend(r.lines)
        else:
            replaced.append(r)
            inserted.update(range(len(out), len(out) + len(new)))
            out.extend(new)
        at = r.last + 1
    out.extend(lines[at:])
    new_text = "\n".join(out)
    # The starter bodies' include goes after the file's own last #include, never into a replaced
    # region (a submission's block may hold an #include of its own, under an #if 0 even).
    last_include = max(
        (i for i, line in enumerate(out) if line.startswith("#include") and i not in inserted), default=-1
    )
    device = "COURSE_DEVICE_NOT_IMPLEMENTED(" in new_text
    if device and "COURSE_DEVICE_STUB_FILE(" not in new_text:
        out[last_include + 1 : last_include + 1] = [
            '#include "common/exercise_device.cuh"',
            f"COURSE_DEVICE_STUB_FILE({stub_tag(path)})  // the device stubs below say when a version calls them",
        ]
        new_text = "\n".join(out)
    elif "COURSE_NOT_IMPLEMENTED" in new_text and '#include "common/exercise.hpp"' not in new_text:
        out.insert(last_include + 1, '#include "common/exercise.hpp"')
        new_text = "\n".join(out)
    return new_text, replaced


def stub_text(
    path: str,
    text: str,
    keep: Callable[[Region], bool] = lambda region: False,
    assigned: Callable[[Region], bool] = lambda region: True,
    withheld: Callable[[Region], bool] = lambda region: False,
) -> tuple[str, list[Region]]:
    """The handout's text of a solution file: each assigned region becomes a STUDENT block, holding
    the starter body, or the solution where keep(region) (an exercise filled in, for the self-tests);
    withheld regions are stubbed without a STUDENT block; the others stay solved, without markers.
    (new_text, stubbed_regions): the assigned and withheld regions whose solution was removed."""

    def replace(r: Region) -> list[str] | None:
        if withheld(r):
            return withheld_lines(r)
        if not assigned(r):
            return None
        return student_block(r, r.lines, "your code") if keep(r) else stub_lines(r)

    new, replaced = rewrite(path, text, replace)
    return new, [r for r in replaced if not keep(r)]


class StudentRegion:
    def __init__(self, exercise: str, first: int, last: int, lines: list[str]) -> None:
        self.exercise, self.first, self.last, self.lines = exercise, first, last, lines


def parse_student(path: str, text: str) -> list[StudentRegion]:
    """The STUDENT blocks of a submitted file, in order. Raises MarkerError on a nested, unclosed,
    stray or mismatched marker."""
    blocks, open_at = [], None
    lines = text.split("\n")
    for i, line in enumerate(lines):
        b, e = _STUDENT_BEGIN.match(line), _STUDENT_END.match(line)
        if b:
            if open_at is not None:
                raise MarkerError(f"{path}:{i + 1}: STUDENT BEGIN inside the block opened at line {open_at[0] + 1}")
            open_at = (i, b.group(1))
        elif e:
            if open_at is None:
                raise MarkerError(f"{path}:{i + 1}: STUDENT END without a BEGIN")
            if e.group(1) != open_at[1]:
                raise MarkerError(f"{path}:{i + 1}: STUDENT END {e.group(1)} closes STUDENT BEGIN {open_at[1]}")
            blocks.append(StudentRegion(open_at[1], open_at[0], i, lines[open_at[0] + 1 : i]))
            open_at = None
        elif STUDENT_BEGIN in line or STUDENT_END in line:
            raise MarkerError(f"{path}:{i + 1}: a STUDENT marker that is not on a line of its own")
    if open_at is not None:
        raise MarkerError(f"{path}:{open_at[0] + 1}: STUDENT BEGIN never closed")
    return blocks


def shingles(lines: list[str], k: int = 3) -> set[str]:
    """Hashes of every k consecutive non-trivial normalized lines (comments and braces dropped)."""
    sig = [normalize(line) for line in lines]
    sig = [line for line in sig if len(line) > 12 and not line.startswith("//")]
    return {hashlib.sha256("\n".join(sig[i : i + k]).encode()).hexdigest() for i in range(max(0, len(sig) - k + 1))}
