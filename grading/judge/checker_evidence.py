"""The out-of-process check: a graded run's outputs against the grader's own run of the reference
solution on the same input and seed.

Every driver checks every version in its own process, but that process is linked with the
student's code, which could patch the check, the verdict or the CSV it writes. So each checked
output is also written, as a record (common/include/common/evidence.hpp), to a pipe the grader
opened (`--evidence-fd`), and a case is correct only when its records match the records the
reference solution's run of the same case wrote, within the tolerance the reference's records
carry (a student's record cannot widen it). A student's process can still write any record it
likes, but a matching record needs the right output: the work it skipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

FORMAT = "E1"
MAX_RECORDS = 4096  # per run; the drivers write a handful a case
MAX_BYTES = 16 * 2**20  # what the grader keeps of a run's evidence


@dataclass
class Record:
    kind: str  # exact / close / bits
    fields: list[str]  # after the key

    def as_json(self) -> list[str]:
        return [self.kind, *self.fields]

    @staticmethod
    def from_json(v: list[str]) -> Record:
        return Record(v[0], list(v[1:]))


class EvidenceError(ValueError):
    """A run's evidence that is not well-formed."""


_ARITY = {"exact": 2, "close": 5, "bits": 3}


def parse(text: str) -> dict[str, Record]:
    """The records of one run, by "version<TAB>key". Raises EvidenceError for a malformed line,
    an unknown kind, a record written twice or too many records (the line is named)."""
    out: dict[str, Record] = {}
    for no, line in enumerate(text.split("\n"), 1):
        if not line:
            continue
        parts = line.split("\t")
        if len(parts) < 4 or parts[0] != FORMAT or parts[1] not in _ARITY or len(parts) != 4 + _ARITY[parts[1]]:
            raise EvidenceError(f"line {no} is not an evidence record")
        key = parts[2] + "\t" + parts[3]
        if key in out:
            raise EvidenceError(f"line {no}: a second record for {parts[2]} / {parts[3]}")
        out[key] = Record(parts[1], parts[4:])
        if len(out) > MAX_RECORDS:
            raise EvidenceError(f"more than {MAX_RECORDS} records")
    return out


def _floats(text: str, n: int) -> list[float]:
    vals = [float(x) for x in text.split(",")] if text else []
    if len(vals) != n:
        raise ValueError("count")
    return vals


def _bits(hexs: str, n: int) -> int:
    if len(hexs) != (n + 3) // 4:
        raise ValueError("length")
    return int(hexs, 16) if hexs else 0


def differs(got: Record, ref: Record) -> str:
    """Empty when `got` matches `ref` within the reference's tolerance; else why not."""
    if got.kind != ref.kind:
        return f"a {got.kind} record where the reference wrote a {ref.kind} record"
    try:
        if ref.kind == "exact":
            if got.fields != ref.fields:
                return f"its output ({got.fields[0]} bytes) differs from the reference's ({ref.fields[0]} bytes)"
            return ""
        if ref.kind == "close":
            atol, rtol, max_bad, n = float(ref.fields[0]), float(ref.fields[1]), int(ref.fields[2]), int(ref.fields[3])
            if int(got.fields[3]) != n:
                return f"{got.fields[3]} values where the reference has {n}"
            mine, theirs = _floats(got.fields[4], n), _floats(ref.fields[4], n)
            bad = [
                i
                for i, (g, r) in enumerate(zip(mine, theirs))
                if not (math.isfinite(g) and abs(g - r) <= atol + rtol * abs(r))
            ]
            if len(bad) > max_bad:
                i = bad[0]
                return (
                    f"{len(bad)} of {n} values out of tolerance (value {i}: {mine[i]:.9g}, "
                    f"the reference {theirs[i]:.9g}, atol {atol:.3g}, rtol {rtol:.3g})"
                )
            return ""
        max_bad, n = int(ref.fields[0]), int(ref.fields[1])
        if int(got.fields[1]) != n:
            return f"{got.fields[1]} labels where the reference has {n}"
        flips = bin(_bits(got.fields[2], n) ^ _bits(ref.fields[2], n)).count("1")
        if flips > max_bad:
            return f"{flips} of {n} labels differ (at most {max_bad} may)"
        return ""
    except (ValueError, IndexError):
        return "a record that is not well-formed"


def compare(got_text: str, overflow: bool, reference: dict[str, list[str]]) -> str:
    """Empty when every record of the reference's run has a matching record in this run's
    evidence; else the first reason it does not (for the case's detail)."""
    if not reference:
        return ""
    if overflow:
        return f"its evidence was more than {MAX_BYTES // 2**20} MiB (the grader's limit)"
    try:
        got = parse(got_text)
    except EvidenceError as e:
        return f"its evidence is not well-formed ({e})"
    for key, rec in reference.items():
        what = key.split("\t", 1)[1]
        mine = got.get(key)
        if mine is None:
            return f"no record of its output for {what} reached the grader"
        why = differs(mine, Record.from_json(rec))
        if why:
            return f"{what}: {why}"
    return ""


def mismatches(runs: list[tuple[str, bool]], reference: dict[str, list[str]]) -> dict[str, str]:
    """Every record of the reference's run this case's processes did not match, by what it is
    about (the key without the version), with why; "" for evidence that is unusable as a whole.
    A process whose evidence is unusable (over the limit, not well-formed) gives no record: the
    outputs only it checked fail as unrecorded, with its reason, and the other processes' stand."""
    if not reference:
        return {}
    got: dict[str, Record] = {}
    bad = []
    for text, overflow in runs:
        if overflow:
            bad.append(f"a process's evidence was more than {MAX_BYTES // 2**20} MiB (the grader's limit)")
            continue
        try:
            for k, r in parse(text).items():
                got.setdefault(k, r)
        except EvidenceError as e:
            bad.append(f"a process's evidence is not well-formed ({e})")
    if bad and len(bad) == len(runs):
        return {"": bad[0].replace("a process's evidence", "its evidence")}
    out = {}
    for key, rec in reference.items():
        what = key.split("\t", 1)[1]
        mine = got.get(key)
        missing = "no record of its output reached the grader" + (f" ({bad[0]})" if bad else "")
        why = missing if mine is None else differs(mine, Record.from_json(rec))
        if why:
            out[what] = why
    return out


def for_record_runs(runs: list[tuple[str, bool]], version: str) -> dict[str, list[str]]:
    """for_record over every process of a case (a resumed case's sizes are in several)."""
    out: dict[str, list[str]] = {}
    for text, overflow in runs:
        for k, v in for_record(text, overflow, version).items():
            out.setdefault(k, v)
    return out


def for_record(text: str, overflow: bool, version: str) -> dict[str, list[str]]:
    """The reference run's records of `version` as the reference record keeps them (the records
    of the harness's own runs, such as a CPU reference every version is checked against, are not
    what is graded). A malformed or overflowing reference evidence is the instructor build's error."""
    if overflow:
        raise EvidenceError(f"the reference's evidence is more than {MAX_BYTES // 2**20} MiB")
    return {k: r.as_json() for k, r in parse(text).items() if k.split("\t", 1)[0] == version}
