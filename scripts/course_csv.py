"""The one reader of the drivers' CSV (the columns are documented in the top README): used by the
plots, compare.py and the grader, so a column is parsed in one place. It also holds the
sub-project list every script shares."""

from __future__ import annotations

import csv
import enum
import math
import os
from typing import Any, Dict, Sequence

Row = Dict[str, Any]

# The sub-projects, in the course's order (the top README's layout, the rubric's tables).
SUBPROJECTS = ("stream_compaction", "nbody", "ground_seg", "ndt_graph")

FLOAT_COLUMNS = (
    "median_ms",
    "min_ms",
    "max_ms",
    "noise",
    "metric",
    "pct_of_ceiling",
    "speedup_vs_cpu",
    "speedup_vs_prev",
    "speedup_vs_library",
    "predicted_ms",
)
# Columns a reader relies on; a CSV without them is refused with its name and the reason.
REQUIRED_COLUMNS = ("subproject", "kind", "version", "n", "params", "median_ms", "metrics", "status", "detail")


class CsvError(ValueError):
    """A file that is not a driver's CSV (missing columns, an unknown status word)."""


class Status(enum.Enum):
    """A row's verdict, as common/status.hpp writes it in the `status` column."""

    PASS = "pass"
    FAIL = "fail"
    SKIPPED = "skipped"
    NOT_IMPLEMENTED = "not_implemented"


_CONSOLE = {
    Status.PASS: "PASS",
    Status.FAIL: "FAIL",
    Status.SKIPPED: "skipped",
    Status.NOT_IMPLEMENTED: "NOT IMPLEMENTED",
}


def status_of(row: Row) -> Status:
    """The row's Status (raw rows hold the word, typed rows the enum); CsvError for an unknown word."""
    value = row.get("status")
    if isinstance(value, Status):
        return value
    try:
        return Status(value or "")
    except ValueError:
        raise CsvError(f"unknown status '{str(value)[:40]}' (pass, fail, skipped or not_implemented)") from None


def status_text(row: Row) -> str:
    """The console's form: "PASS", "FAIL: <detail>", "skipped: <detail>", "NOT IMPLEMENTED: <detail>"."""
    st = status_of(row)
    return _CONSOLE[st] if st is Status.PASS else f"{_CONSOLE[st]}: {row.get('detail') or ''}"


def is_pass(row: Row) -> bool:
    return status_of(row) is Status.PASS


def _read_with(path: str, required: Sequence[str]) -> tuple[list[Row], list[str], list[str]]:
    """(rows as strings, the header's columns, the required columns it lacks)."""
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
        columns = list(reader.fieldnames or [])
    return rows, columns, [c for c in required if c not in columns]


def read_raw(path: str) -> list[Row]:
    """The rows as strings, exactly as written. CsvError names the file when a column is missing."""
    rows, columns, missing = _read_with(path, REQUIRED_COLUMNS)
    if missing:
        why = " (written before the status/detail columns: run the driver again)" if "passed" in columns else ""
        raise CsvError(f"{path}: not a driver's CSV: no column {', '.join(missing)}{why}")
    return rows


def read_journal(path: str) -> tuple[list[Row], bool]:
    """A driver's --csv output, or its .partial journal when the run ended before the final CSV:
    (rows, from_journal). ([], False) when neither exists."""
    for p in (path, path + ".partial"):
        if os.path.exists(p):
            return read_raw(p), p.endswith(".partial")
    return [], False


def parse_params(text: str | None) -> dict[str, str]:
    """ "shape=128x4 min8 op=scan" -> {shape: "128x4 min8", op: "scan"}: a token without '='
    continues the previous value."""
    out: dict[str, str] = {}
    key = None
    for tok in (text or "").split():
        if "=" in tok:
            key, val = tok.split("=", 1)
            out[key] = val
        elif key:
            out[key] += " " + tok
    return out


def parse_metrics(text: str | None) -> dict[str, float]:
    """The metrics column, "name[unit]=value;...", as {name: value} (the units are for readers)."""
    out: dict[str, float] = {}
    for item in filter(None, (text or "").split(";")):
        name, bracket, rest = item.partition("[")
        _, closed, value = rest.partition("]=")
        if not bracket or not closed:  # not an item (e.g. "x]=[y": its "]=" before its "["): left out
            continue
        try:
            out[name] = float(value) if value else math.nan
        except ValueError:
            out[name] = math.nan
    return out


def typed(rows: list[Row]) -> list[Row]:
    """The rows with n as int, the numeric columns as floats (nan when empty), status as a Status,
    params_d (the params as a dict) and m (the metrics as a dict)."""
    for r in rows:
        r["n"] = int(r["n"] or 0)
        r["params_d"] = parse_params(r.get("params", ""))
        for k in FLOAT_COLUMNS:
            try:
                r[k] = float(r[k]) if r.get(k) not in (None, "") else math.nan
            except ValueError:
                r[k] = math.nan
        r["m"] = parse_metrics(r.get("metrics", ""))
        r["status"] = status_of(r)
    return rows


def read_rows(path: str) -> list[Row]:
    return typed(read_raw(path))


# The registry a driver writes with --list --csv (common/registry.hpp): one row per version.
REGISTRY_COLUMNS = ("kind", "id", "version", "file", "idea", "role", "runs_on", "needs")


def read_registry(path: str) -> list[Row]:
    """A driver's registry (--list --csv), in registry order; CsvError names the file when it is
    not one."""
    rows, _, missing = _read_with(path, REGISTRY_COLUMNS)
    if missing:
        raise CsvError(f"{path}: not a registry (--list --csv): no column {', '.join(missing)}")
    other = next((r.get("kind") for r in rows if r.get("kind") != "registry"), None)
    if other is not None:
        raise CsvError(f"{path}: not a registry (--list --csv): a row of kind '{other}'")
    return rows


def read_kind(path: str, kind: str, columns: tuple[str, ...]) -> list[Row]:
    """A course CSV of one kind (ndt_graph's --trace-csv "trace", ndt_pcl_diff's "pcl_diff"): its
    rows, each with `columns`; CsvError names the file and what is wrong."""
    rows, _, missing = _read_with(path, ("kind", *columns))
    if missing:
        raise CsvError(f"{path}: not a {kind} CSV: no column {', '.join(missing)}")
    other = next((r.get("kind") for r in rows if r.get("kind") != kind), None)
    if other is not None:
        raise CsvError(f"{path}: not a {kind} CSV: a row of kind '{other}'")
    return rows


def meta_row(rows: list[Row]) -> Row | None:
    return next((r for r in rows if r.get("kind") == "meta"), None)


def meta(rows: list[Row]) -> dict[str, float]:
    """The run's metadata record's named values (measured ceilings, plot parameters), {} if none."""
    m = meta_row(rows)
    if not m:
        return {}
    return m["m"] if isinstance(m.get("m"), dict) else parse_metrics(m.get("metrics", ""))
