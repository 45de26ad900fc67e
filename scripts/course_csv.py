"""The one reader of the drivers' CSV (the columns are documented in the top README): used by the
plots, compare.py and the grader, so a column is parsed in one place."""
import csv
import math
import os

FLOAT_COLUMNS = ("median_ms", "min_ms", "max_ms", "noise", "metric", "pct_of_ceiling", "speedup_vs_cpu",
                 "speedup_vs_prev", "speedup_vs_library", "predicted_ms")


def read_raw(path):
    """The rows as strings, exactly as written."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def read_journal(path):
    """A driver's --csv output, or its .partial journal when the run ended before the final CSV:
    (rows, from_journal). ([], False) when neither exists."""
    for p in (path, path + ".partial"):
        if os.path.exists(p):
            return read_raw(p), p.endswith(".partial")
    return [], False


def parse_params(text):
    """"shape=128x4 min8 op=scan" -> {shape: "128x4 min8", op: "scan"}: a token without '='
    continues the previous value."""
    out, key = {}, None
    for tok in (text or "").split():
        if "=" in tok:
            key, val = tok.split("=", 1)
            out[key] = val
        elif key:
            out[key] += " " + tok
    return out


def parse_metrics(text):
    """The metrics column, "name[unit]=value;...", as {name: value} (the units are for readers)."""
    out = {}
    for item in filter(None, (text or "").split(";")):
        if "[" not in item or "]=" not in item:
            continue
        name, rest = item.split("[", 1)
        _, value = rest.split("]=", 1)
        try:
            out[name] = float(value) if value else math.nan
        except ValueError:
            out[name] = math.nan
    return out


def typed(rows):
    """The rows with n as int, the numeric columns as floats (nan when empty), params_d and m."""
    for r in rows:
        r["n"] = int(r["n"] or 0)
        r["params_d"] = parse_params(r.get("params", ""))
        for k in FLOAT_COLUMNS:
            try:
                r[k] = float(r[k]) if r.get(k) not in (None, "") else math.nan
            except ValueError:
                r[k] = math.nan
        r["m"] = parse_metrics(r.get("metrics", ""))
    return rows


def read_rows(path):
    return typed(read_raw(path))


def meta_row(rows):
    return next((r for r in rows if r.get("kind") == "meta"), None)


def meta(rows):
    """The run's metadata record's named values (measured ceilings, plot parameters), {} if none."""
    m = meta_row(rows)
    return (m.get("m") if isinstance(m.get("m"), dict) else parse_metrics(m.get("metrics", ""))) if m else {}
