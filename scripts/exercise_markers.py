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

In the handout each region of the assignment is a STUDENT block: the student writes between
    // STUDENT BEGIN <exercise>: ...
    // STUDENT END <exercise>
and the grader takes exactly those lines, spliced into the instructor's own copy of the file.
"""
import hashlib
import os
import re

SOURCE_EXT = (".cu", ".cuh", ".cpp", ".hpp", ".h")
SUBPROJECTS = ("stream_compaction", "nbody", "ground_seg", "ndt_graph")
_BEGIN = re.compile(r"^(\s*)// EXERCISE BEGIN\b(.*)$")
_END = re.compile(r"^\s*// EXERCISE END\s*$")
# In a handout: a block at column 0 is file scope, an indented one a function body.
_STUDENT_BEGIN_LINE = re.compile(r"^(\s*)// STUDENT BEGIN ([A-Za-z0-9_]+)\b")


class MarkerError(Exception):
    pass


class Region:
    def __init__(self, path, exercise, body, unused, indent, first, last, lines):
        self.path, self.exercise, self.body, self.unused = path, exercise, body, unused
        self.indent, self.first, self.last, self.lines = indent, first, last, lines  # first/last: marker lines (0-based)

    def digest(self):
        return hashlib.sha256("\n".join(normalize(l) for l in self.lines).encode()).hexdigest()


def normalize(line):
    return " ".join(line.split())


def subproject_of(path):
    top = path.split("/", 1)[0]
    return top if top in SUBPROJECTS else None


def parse(path, text):
    """The regions of one file, in order. Raises MarkerError on a nested, unclosed or stray marker."""
    regions, open_at = [], None
    stem = os.path.splitext(os.path.basename(path))[0]
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = _BEGIN.match(line)
        sb = _STUDENT_BEGIN_LINE.match(line)
        if sb:  # a handout's STUDENT block (the handout as its own instructor tree: self-grading)
            if open_at is not None:
                raise MarkerError(f"{path}:{i + 1}: STUDENT BEGIN inside the region opened at line {open_at[0] + 1}")
            open_at = (i, sb.group(1), len(sb.group(1)) > 0, [], sb.group(2))
            continue
        if _STUDENT_END.match(line):
            line = "// EXERCISE END"
        if m:
            if open_at is not None:
                raise MarkerError(f"{path}:{i + 1}: EXERCISE BEGIN inside the region opened at line {open_at[0] + 1}")
            args = m.group(2)
            ex = re.search(r"exercise=([A-Za-z0-9_]+)", args)
            un = re.search(r"unused\(([^)]*)\)", args)
            rest = re.sub(r"exercise=\S+|unused\([^)]*\)", "", args).split()
            if any(w != "body" for w in rest):
                raise MarkerError(f"{path}:{i + 1}: unknown marker arguments {rest}")
            open_at = (i, m.group(1), "body" in rest, [u.strip() for u in un.group(1).split(",")] if un else [],
                       ex.group(1) if ex else stem)
        elif _END.match(line):
            if open_at is None:
                raise MarkerError(f"{path}:{i + 1}: EXERCISE END without a BEGIN")
            a, indent, body, unused, exercise = open_at
            regions.append(Region(path, exercise, body, unused, indent, a, i, lines[a + 1:i]))
            open_at = None
    if open_at is not None:
        raise MarkerError(f"{path}:{open_at[0] + 1}: EXERCISE BEGIN never closed")
    return regions


STUDENT_BEGIN = "// STUDENT BEGIN"
STUDENT_END = "// STUDENT END"
_STUDENT_BEGIN = re.compile(r"^\s*// STUDENT BEGIN ([A-Za-z0-9_]+)\b")
_STUDENT_END = re.compile(r"^\s*// STUDENT END ([A-Za-z0-9_]+)\s*$")


def stub_lines(r):
    """What a student finds in place of region r: the starter body, between STUDENT markers."""
    if r.body:
        casts = "".join(f"(void){u}; " for u in r.unused if u)
        inner = [f"{r.indent}{casts}COURSE_NOT_IMPLEMENTED();"]
        hint = "write this body"
    else:
        inner = []
        hint = "write the kernels and helpers of this step here"
    return student_block(r, inner, hint)


def student_block(r, inner, hint="your code"):
    return ([f"{r.indent}{STUDENT_BEGIN} {r.exercise}: {hint} (only the lines between BEGIN and END are graded)"]
            + list(inner) + [f"{r.indent}{STUDENT_END} {r.exercise}"])


def rewrite(path, text, replace):
    """The file with each region replaced by replace(region) (a list of lines; None keeps the
    solution's lines without markers); (new_text, replaced_regions). The include of
    common/exercise.hpp is added where a starter body (COURSE_NOT_IMPLEMENTED) needs it."""
    regions = parse(path, text)
    lines = text.split("\n")
    out, replaced, at = [], [], 0
    for r in regions:
        out.extend(lines[at:r.first])
        new = replace(r)
        if new is None:
            out.extend(r.lines)
        else:
            replaced.append(r)
            out.extend(new)
        at = r.last + 1
    out.extend(lines[at:])
    new_text = "\n".join(out)
    if "COURSE_NOT_IMPLEMENTED" in new_text and '#include "common/exercise.hpp"' not in new_text:
        new_lines = new_text.split("\n")
        last_include = max((i for i, l in enumerate(new_lines) if l.startswith("#include")), default=-1)
        new_lines.insert(last_include + 1, '#include "common/exercise.hpp"')
        new_text = "\n".join(new_lines)
    return new_text, replaced


def stub_text(path, text, keep=lambda region: False, assigned=lambda region: True):
    """The handout's text of a solution file: each assigned region becomes a STUDENT block, holding
    the starter body, or the solution where keep(region) (an exercise filled in, for the self-tests);
    regions not assigned stay solved, without markers. (new_text, stubbed_regions)."""
    def replace(r):
        if not assigned(r):
            return None
        return student_block(r, r.lines, "your code") if keep(r) else stub_lines(r)

    new, replaced = rewrite(path, text, replace)
    return new, [r for r in replaced if not keep(r)]


class StudentRegion:
    def __init__(self, exercise, first, last, lines):
        self.exercise, self.first, self.last, self.lines = exercise, first, last, lines


def parse_student(path, text):
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
            blocks.append(StudentRegion(open_at[1], open_at[0], i, lines[open_at[0] + 1:i]))
            open_at = None
        elif STUDENT_BEGIN in line or STUDENT_END in line:
            raise MarkerError(f"{path}:{i + 1}: a STUDENT marker that is not on a line of its own")
    if open_at is not None:
        raise MarkerError(f"{path}:{open_at[0] + 1}: STUDENT BEGIN never closed")
    return blocks


def shingles(lines, k=3):
    """Hashes of every k consecutive non-trivial normalized lines (comments and braces dropped)."""
    sig = [normalize(l) for l in lines]
    sig = [l for l in sig if len(l) > 12 and not l.startswith("//")]
    return {hashlib.sha256("\n".join(sig[i:i + k]).encode()).hexdigest() for i in range(max(0, len(sig) - k + 1))}
