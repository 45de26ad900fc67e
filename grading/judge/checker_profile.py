"""The profile attached to each graded GPU version: the driver's `--profile` rows (Nsight Compute's
view of the version's own kernels, common/profile.hpp), from a run of the student's build in the
sandbox on the grading GPU. Informational only: it never moves a point.

The rows are the student's process's output, so the file is read as hostile input: a regular file
only (never through a link), at most MAX_BYTES, UTF-8 without NUL bytes, the driver's columns; each
number finite and in its range (else left out), each name (a stall reason, a kernel) letters, digits
and '_' only, each text cut short. Whatever is wrong becomes the reason shown in place of the
profile, never an exception. formats.py escapes what is shown, as it does every student field."""

from __future__ import annotations

import csv
import io
import math
import os
import re
import shutil
import stat
from typing import Any

import course_csv

from .model import Status

MAX_BYTES = 256 * 1024  # the profile of a sub-project's versions is a few KiB
MAX_DETAIL = 300
_NAME = re.compile(r"^[A-Za-z0-9_]{1,80}$")
# the numbers a profile row holds (metric name -> its key here, its unit, its plausible range)
NUMBERS = {
    "kernels": ("kernels", "", 0.0, 1e6),
    "duration": ("duration_ms", "ms", 0.0, 1e9),
    "achieved_occupancy": ("achieved_occupancy", "%", 0.0, 100.0),
    "theoretical_occupancy": ("theoretical_occupancy", "%", 0.0, 100.0),
    "registers": ("registers", "", 0.0, 1024.0),
    "spill_instructions": ("spill_instructions", "", 0.0, 1e18),
    "shared_memory": ("shared_memory", "B", 0.0, 1e9),
}
COLUMNS = ("kind", "version", "status", "detail", "metric", "pct_of_ceiling", "metrics")
# a starter body (the driver's not_implemented) in the grader's own word for it
STATUS_WORDS = {"pass": "profiled", "skipped": "skipped", "fail": "failed", "not_implemented": Status.UNWRITTEN.value}


def ncu_path(env: dict[str, str]) -> str:
    """The ncu the profile runs: $COURSE_NCU of the grader's environment, else ncu on its PATH ("" for none)."""
    given = env.get("COURSE_NCU", "") or shutil.which("ncu", path=env.get("PATH")) or ""
    # the real program, absolute: a link to it (~/bin/ncu) would show nothing in the sandbox, where
    # only the folders ncu_folders names are, and a relative PATH entry means nothing there
    real = os.path.realpath(given) if given else ""
    return real if real and os.path.isfile(real) and os.access(real, os.X_OK) else ""


def ncu_folders(ncu: str) -> list[str]:
    """What the sandbox must show of an ncu installation (`ncu`: the real program, ncu_path): its
    folder (a standalone Nsight Compute keeps its libraries beside it) and, for the toolkit's bin/ncu
    wrapper, the toolkit's nsight-compute-* folders where they really are (links followed) and
    /opt/nvidia/nsight-compute, the wrapper's other place to look (a container's toolkit keeps it
    there). Never the folder above a bin/ as a whole: for ~/bin/ncu that would be the grader's home."""
    real = os.path.dirname(os.path.realpath(ncu))
    out = [real]
    if os.path.basename(real) == "bin":
        root = os.path.dirname(real)
        try:
            entries = os.listdir(root)
        except OSError:
            entries = []
        out += [os.path.realpath(os.path.join(root, e)) for e in entries if e.startswith("nsight-compute")]
    if os.path.isdir("/opt/nvidia/nsight-compute"):
        out.append("/opt/nvidia/nsight-compute")
    return sorted({d for d in out if os.path.isdir(d)})


def _number(text: object, lo: float, hi: float) -> float | None:
    try:
        v = float(str(text))
    except ValueError:
        return None
    return v if math.isfinite(v) and lo <= v <= hi else None


def _row(r: dict[str, Any]) -> dict[str, Any]:
    """One profile row as the report keeps it: status, detail, and for a profiled version its numbers."""
    try:
        status = course_csv.status_of(r).value
    except course_csv.CsvError:
        return {"status": "failed", "detail": "its row's status is not one the driver writes"}
    out: dict[str, Any] = {"status": STATUS_WORDS[status], "detail": str(r.get("detail") or "")[:MAX_DETAIL]}
    if status != "pass":
        return out
    m = course_csv.parse_metrics(str(r.get("metrics") or "")[:MAX_BYTES])
    for name, (key, _, lo, hi) in NUMBERS.items():
        v = _number(m.get(name), lo, hi)
        if v is not None:
            out[key] = v
    for key, column, hi in (("dram_gbs", "metric", 1e6), ("dram_pct_of_copy", "pct_of_ceiling", 1e4)):
        v = _number(r.get(column), 0.0, hi)
        if v is not None:
            out[key] = v
    stalls = [
        (k[len("stall.") :], v)
        for k, raw in m.items()
        if k.startswith("stall.") and _NAME.match(k[len("stall.") :]) and (v := _number(raw, 0.0, 1e6)) is not None
    ]
    out["stalls"] = sorted(stalls, key=lambda kv: -kv[1])[:2]
    heavy = next(
        (
            (k[len("heaviest.") :], v)
            for k, raw in m.items()
            if k.startswith("heaviest.")
            and _NAME.match(k[len("heaviest.") :])
            and (v := _number(raw, 0.0, 100.0)) is not None
        ),
        None,
    )
    if heavy:
        out["heaviest"] = list(heavy)
    return out


def _text(path: str) -> tuple[str | None, str]:
    """(the file's text, "") or (None, why it is not read)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None, "it wrote no CSV"
    if not stat.S_ISREG(st.st_mode):
        return None, "its CSV is not a regular file (not read)"
    if st.st_size > MAX_BYTES:
        return None, f"its CSV is {st.st_size} bytes, over the {MAX_BYTES} the grader reads"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        return None, f"its CSV cannot be read ({e.strerror})"
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        return None, f"its CSV is over the {MAX_BYTES} bytes the grader reads"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "its CSV is not UTF-8 text"
    if "\x00" in text:
        return None, "its CSV holds NUL bytes"
    return text, ""


def read(path: str, versions: list[str]) -> tuple[dict[str, dict[str, Any]], str]:
    """The profile rows of `versions` in the driver's CSV at `path` (or its .partial journal, when the
    run was stopped before the end): ({version: profile}, "") or ({}, why none could be read).
    A version's first row counts; rows of other versions and kinds are left out."""
    for p in (path, path + ".partial"):
        if not os.path.lexists(p):
            continue
        text, why = _text(p)
        if text is None:
            return {}, why
        try:
            reader = csv.DictReader(io.StringIO(text, newline=""))
            rows = list(reader)
            columns = reader.fieldnames or []
        except csv.Error as e:
            return {}, f"its CSV is not CSV ({str(e)[:100]})"
        missing = [c for c in COLUMNS if c not in columns]
        if missing:
            return {}, f"its CSV has no column {', '.join(missing)}"
        out: dict[str, dict[str, Any]] = {}
        for r in rows:
            if r.get("kind") == "profile" and r.get("version") in versions and r["version"] not in out:
                try:
                    out[r["version"]] = _row(r)
                except Exception as e:  # noqa: BLE001 - a row no reader foresaw: its reason, never a crash
                    why_not = f"its row could not be read ({type(e).__name__})"
                    out[r["version"]] = {"status": "failed", "detail": why_not}
        return out, "" if out else "its CSV has no profile row of these versions"
    return {}, "it wrote no CSV"


def _fmt(v: float, digits: int) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.{digits}f}"


def line(p: dict[str, Any]) -> str:
    """A profile in one line of plain text (the Gradescope output): its numbers, or its verdict."""
    if p.get("status") != "profiled":
        return f"{p.get('status', '?')}: {p.get('detail', '')}".rstrip(": ")
    parts = []
    if "kernels" in p and "duration_ms" in p:
        parts.append(f"{p['kernels']:.0f} kernels, {_fmt(p['duration_ms'], 4)} ms")
    if "dram_gbs" in p:
        share = f" ({_fmt(p['dram_pct_of_copy'], 1)}% of the copy bandwidth)" if "dram_pct_of_copy" in p else ""
        parts.append(f"DRAM {_fmt(p['dram_gbs'], 1)} GB/s{share}")
    if "achieved_occupancy" in p:
        theo = f" of {_fmt(p['theoretical_occupancy'], 1)}%" if "theoretical_occupancy" in p else ""
        parts.append(f"occupancy {_fmt(p['achieved_occupancy'], 1)}%{theo}")
    for key, unit in (("registers", "registers/thread"), ("spill_instructions", "spill instructions")):
        if key in p:
            parts.append(f"{p[key]:.0f} {unit}")
    if "shared_memory" in p:
        parts.append(f"{_fmt(p['shared_memory'], 0)} B shared/block")
    if p.get("stalls"):
        parts.append("stalls " + ", ".join(f"{r} {_fmt(v, 2)}" for r, v in p["stalls"]) + " cycles/issue")
    if p.get("heaviest"):
        parts.append(f"heaviest kernel {p['heaviest'][0]} ({_fmt(p['heaviest'][1], 0)}%)")
    return "; ".join(parts) or "profiled (no numbers in its row)"


def shared_reason(profiles: list[dict[str, Any]]) -> str:
    """The one reason every version was not profiled (ncu may not read the counters, no ncu), said
    once for the student instead of under every version; "" when the versions differ or some were."""
    said = {(p.get("status"), p.get("detail")) for p in profiles}
    if len(said) != 1 or not profiles:
        return ""
    status, detail = said.pop()
    return "" if status == "profiled" else f"{status}: {detail}"
