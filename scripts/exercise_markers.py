"""The exercise markers of the solution (common/exercise.hpp says what they mean) and the stubs
that replace them in the handout. Used by make_handout.py and check_handout.py.

    // EXERCISE BEGIN [body] [unused(a, b)] [exercise=NAME]
    ...solution...
    // EXERCISE END

A region at file scope (kernels, helpers) is removed. A `body` region sits inside a function and
becomes `COURSE_NOT_IMPLEMENTED();`, after `(void)a;` for each parameter named in unused(...)
(the C++ files build with -Wall -Wextra). The exercise a region belongs to is its file's stem
(v1_naive, v4_graph, ...) unless exercise=NAME says otherwise (a header shared by two steps, the
CPU file that holds one exercise among reference code).
"""
import hashlib
import os
import re

SOURCE_EXT = (".cu", ".cuh", ".cpp", ".hpp", ".h")
SUBPROJECTS = ("stream_compaction", "nbody", "ground_seg", "ndt_graph")
_BEGIN = re.compile(r"^(\s*)// EXERCISE BEGIN\b(.*)$")
_END = re.compile(r"^\s*// EXERCISE END\s*$")


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


def stub_text(path, text, keep=lambda region: False):
    """The file with every region not kept replaced by its stub; (new_text, stubbed_regions)."""
    regions = parse(path, text)
    lines = text.split("\n")
    out, stubbed, at = [], [], 0
    for r in regions:
        out.extend(lines[at:r.first])
        if keep(r):  # left as the solution, without its markers
            out.extend(r.lines)
        else:
            stubbed.append(r)
            if r.body:
                casts = "".join(f"(void){u}; " for u in r.unused if u)
                out.append(f"{r.indent}{casts}COURSE_NOT_IMPLEMENTED();  // EXERCISE {r.exercise}: write this body")
            else:
                out.append(f"{r.indent}// EXERCISE {r.exercise}: write the kernels and helpers of this step here")
        at = r.last + 1
    out.extend(lines[at:])
    new = "\n".join(out)
    if any(r.body for r in stubbed) and '#include "common/exercise.hpp"' not in new:
        new_lines = new.split("\n")
        last_include = max((i for i, l in enumerate(new_lines) if l.startswith("#include")), default=-1)
        new_lines.insert(last_include + 1, '#include "common/exercise.hpp"')
        new = "\n".join(new_lines)
    return new, stubbed


def shingles(lines, k=3):
    """Hashes of every k consecutive non-trivial normalized lines (comments and braces dropped)."""
    sig = [normalize(l) for l in lines]
    sig = [l for l in sig if len(l) > 12 and not l.startswith("//")]
    return {hashlib.sha256("\n".join(sig[i:i + k]).encode()).hexdigest() for i in range(max(0, len(sig) - k + 1))}
