"""A submission's exercise regions, spliced into a clean copy of the instructor's tree.

The instructor's tree (the solution) is the harness: drivers, checkers, tests, CMake, common/ and
the rubric all come from it. From a submission the grader takes only the lines between the
STUDENT markers of the assignment's exercise files (scripts/exercise_markers.py); each block
replaces the solution's region it stands for. Everything else the student changed is ignored and
listed ("edited outside the exercises")."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import exercise_markers as em  # scripts/, on the path from the package's __init__  # noqa: E402

from . import checker_blocks, intake  # noqa: E402

if TYPE_CHECKING:
    from exercise_markers import Region, StudentRegion

# Files whose edits matter to grading (sources, build, scripts, the rubric); a student's README
# answers, results and plots are theirs to change.
CODE_EXT = (".cu", ".cuh", ".cpp", ".hpp", ".h", ".c", ".py", ".sh", ".toml", ".json", ".cmake", ".txt", ".in")
IGNORED_DIRS = {".git", "build", "grade", "__pycache__", ".cache", ".vscode", ".idea"}
IGNORED_PREFIX = ("results/", "images/", "data/")
SOURCE_DIRS = ("common", "stream_compaction", "nbody", "ground_seg", "ndt_graph", "grading")


@dataclass
class Assignment:
    """Which regions of the instructor's tree are the students' (HANDOUT.json's selection)."""

    root: str  # the instructor's tree (the solution)
    subprojects: list
    exercises: list  # ["stream_compaction/v1_naive", ...]; empty: every one of subprojects
    files: dict = field(default_factory=dict)  # exercise file -> its solution text

    @property
    def included(self) -> list[str]:
        return em.closure(self.subprojects)

    def assigned(self, path: str, region: Region) -> bool:
        return em.role(region, self.subprojects, self.included, self.exercises) == "assigned"

    def regions(self, path: str, text: str) -> list[Region]:
        """The file's regions, each resolved for this assignment's handout (its owner, for common/)."""
        return em.parse(path, text, self.included)

    def exercise_files(self) -> list[str]:
        return sorted(self.files)

    def handout_text(self, path: str) -> str:
        return em.stub_text(path, self.files[path], assigned=lambda r: self.assigned(path, r))[0]

    def digest(self) -> str:
        h = hashlib.sha256(json.dumps([self.subprojects, self.exercises]).encode())
        for f in self.exercise_files():
            h.update(f.encode() + b"\0" + self.files[f].encode() + b"\0")
        return h.hexdigest()


def tracked_files(root: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"], capture_output=True
    )
    if out.returncode == 0:
        return sorted(f for f in out.stdout.decode().split("\0") if f and os.path.isfile(os.path.join(root, f)))
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x not in IGNORED_DIRS]
        files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(files)


def load_assignment(
    root: str, subprojects: list[str], exercises: Sequence[str] = (), handout_manifest: str | None = None
) -> Assignment:
    """The assignment: from the instructor's HANDOUT.json when given (what was handed out), else
    every exercise of the sub-projects."""
    if handout_manifest:
        with open(handout_manifest, encoding="utf-8") as fh:
            man = json.load(fh)
        subprojects = man["subprojects"]
        exercises = sorted(man["exercises"])
    a = Assignment(root=os.path.abspath(root), subprojects=list(subprojects), exercises=list(exercises))
    for f in tracked_files(root):
        if (
            f.endswith(em.SOURCE_EXT)
            and not f.startswith("tests/")
            and (em.subproject_of(f) in a.subprojects or not em.subproject_of(f))
        ):
            text = Path(os.path.join(root, f)).read_text(encoding="utf-8")
            if "// EXERCISE BEGIN" in text and any(a.assigned(f, r) for r in a.regions(f, text)):
                a.files[f] = text
    return a


@dataclass
class Splice:
    files: dict  # exercise file -> the spliced text
    problems: list  # marker problems: the blocks of that file are graded as not written
    edited_outside: list  # files changed outside the exercises (ignored)
    added: list  # files the submission adds (ignored)
    deleted: list  # handout files the submission lacks (the instructor's are used)
    unread: dict = field(default_factory=dict)  # exercise file -> why its blocks were not taken
    refused: dict = field(default_factory=dict)  # exercise -> why a block of it was refused (checker_blocks)


def submitted_text(submission: str, f: str, cap: int = intake.FILE_CAP) -> tuple[str | None, str]:
    """(text, "") of the submission's exercise file f, or (None, why) when the grader does not read
    it: missing, a symlink (the file or a folder above it), a FIFO, socket or device, over the cap,
    not UTF-8 (intake.py)."""
    try:
        return intake.read_text(submission, f, cap), ""
    except intake.Refused as e:
        return None, (f"{f}: missing from the submission" if e.missing else str(e))


def student_blocks(assignment: Assignment, f: str, text: str) -> tuple[dict[str, list[StudentRegion]], str]:
    """({exercise: [blocks]}, "") of a submitted exercise file's text (submitted_text), or ({}, why)
    when its STUDENT markers differ from the handout's."""
    blocks = {}
    try:
        for b in em.parse_student(f, text):
            blocks.setdefault(b.exercise, []).append(b)
    except em.MarkerError as e:
        return {}, str(e)
    expected = {}
    for r in assignment.regions(f, assignment.files[f]):
        if assignment.assigned(f, r):
            expected[r.exercise] = expected.get(r.exercise, 0) + 1
    got = {k: len(v) for k, v in blocks.items()}
    if got != expected:
        return {}, (
            f"{f}: STUDENT blocks {dict(sorted(got.items()))}, the handout has "
            f"{dict(sorted(expected.items()))}: the markers were changed"
        )
    return blocks, ""


def splice(
    assignment: Assignment,
    submission: str,
    handout_files: tuple[str, list[str]] | None = None,
    stubbed: frozenset[str] = frozenset(),
    file_cap: int = intake.FILE_CAP,
    macros: checker_blocks.HarnessMacros | None = None,
) -> Splice:
    """The assignment's exercise files with the submission's STUDENT blocks in place of the solution's
    regions. handout_files (relative paths of what the handout holds) lists the files compared for
    edits outside the exercises. Exercises in `stubbed` ("sub/name") keep the handout's starter body (their
    code did not compile). The submission's files are read once each, as intake.py reads them
    (regular files only, up to file_cap bytes). Every block is checked first (checker_blocks): an
    exercise with a block that would change what follows it is refused (out.refused) and keeps the
    starter body in every file; the others are spliced with their macros scoped to them. `macros`
    (the harness's, from the instructor's build) lets the check judge harness macros a block uses."""
    out = Splice(files={}, problems=[], edited_outside=[], added=[], deleted=[])
    submitted = {}
    for f in assignment.exercise_files():
        text, problem = submitted_text(submission, f, file_cap)
        found, problem = student_blocks(assignment, f, text) if text is not None else ({}, problem)
        if problem:
            out.problems.append(problem + "; its exercises are graded as not written")
            out.unread[f] = problem
            found = {}
        submitted[f] = (text, problem, found)
    guard = checker_blocks.Guard(assignment.root, macros)
    out.refused = guard.check_files(assignment, {f: v[2] for f, v in submitted.items()}, stubbed)
    for f in assignment.exercise_files():
        solution = assignment.files[f]
        text, problem, found = submitted[f]
        queues = {k: list(v) for k, v in found.items()}

        def replace(r: Region, queues: dict[str, list[StudentRegion]] = queues, f: str = f) -> list[str] | None:
            if not assignment.assigned(f, r):
                return None
            if r.exercise in queues and queues[r.exercise]:
                b = queues[r.exercise].pop(0)
                if r.key in stubbed or r.key in out.refused:
                    return em.stub_lines(r)[1:-1]
                return guard.lines(f, b)
            return em.stub_lines(r)[1:-1]

        out.files[f] = checker_blocks.fix_lines(em.rewrite(f, solution, replace)[0])
        if not problem and text is not None and outside_text(f, text) != outside_text(f, assignment.handout_text(f)):
            out.edited_outside.append(f)
    if handout_files is not None:
        compare_tree(assignment, submission, handout_files, out)
    return out


STARTER_INCLUDES = ('#include "common/exercise.hpp"', '#include "common/exercise_device.cuh"')


def outside_text(path: str, text: str) -> str:
    """The text of a handout-shaped file without the inside of its STUDENT blocks."""
    lines, keep, inside = text.split("\n"), [], False
    for line in lines:
        if em.STUDENT_BEGIN in line:
            keep.append(line.strip().split(":")[0])  # the hint after the exercise name is free text
            inside = True
        elif em.STUDENT_END in line:
            keep.append(line.strip())
            inside = False
        elif not inside and line.strip() not in STARTER_INCLUDES and not line.startswith("COURSE_DEVICE_STUB_FILE("):
            keep.append(line.rstrip())  # the lines the starter bodies need are the handout's, not the student's
    while keep and not keep[-1]:
        keep.pop()
    return "\n".join(keep)


def compare_tree(
    assignment: Assignment, submission: str, handout_root_files: tuple[str, list[str]], out: Splice
) -> None:
    """The handout's code files the submission changed, lacks or adds. Walked by lstat (a symlink is
    listed as a change, never followed; a FIFO or device is never opened), compared by size first
    and then chunk by chunk (intake.walk, intake.same_content)."""
    handout_root, files = handout_root_files
    tree = intake.walk(submission, prune=tuple(IGNORED_DIRS), prune_top=("results", "images"))
    have = set(tree.files) | set(tree.others)
    for f in sorted(files):
        if f in assignment.files or not f.endswith(CODE_EXT) or f.startswith(IGNORED_PREFIX):
            continue
        if f in tree.others:
            out.edited_outside.append(f)  # a symlink, FIFO, ... where the handout has a file
        elif f not in have:
            out.deleted.append(f)
        elif not intake.same_content(submission, f, os.path.join(handout_root, f)):
            out.edited_outside.append(f)
    for f in sorted(have - set(files)):
        if f.endswith(CODE_EXT) and not f.startswith(IGNORED_PREFIX):
            out.added.append(f)
    out.edited_outside.sort()
    if tree.truncated:
        out.problems.append(
            f"the submission holds more than {intake.WALK_MAX_ENTRIES} entries or folders deeper than "
            f"{intake.WALK_MAX_DEPTH}: the rest were not compared with the handout"
        )


def clean_tree(assignment: Assignment, spliced: dict, dest: str) -> None:
    """dest: plain copies of the instructor's source folders (never hard links: nothing written in
    dest can reach the instructor's files) with the spliced exercise files written in place of theirs."""
    if os.path.exists(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    for d in SOURCE_DIRS:
        src = os.path.join(assignment.root, d)
        if os.path.isdir(src):
            shutil.copytree(
                src, os.path.join(dest, d), copy_function=shutil.copy2, ignore=shutil.ignore_patterns("__pycache__")
            )
    for f in ("CMakeLists.txt", "CMakePresets.json"):
        if os.path.exists(os.path.join(assignment.root, f)):
            shutil.copy2(os.path.join(assignment.root, f), os.path.join(dest, f))
    for f, text in spliced.items():
        p = os.path.join(dest, f)
        if os.path.lexists(p):
            os.unlink(p)
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(text)
