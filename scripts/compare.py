#!/usr/bin/env python3
"""Prints a run's table next to the committed reference run of the closest GPU.

    scripts/compare.py results/scratch/stream_compaction.csv [--reference-dir results] [--all]

The reference is results/<gpu>/<same file name>: the one of the same GPU when committed, else the
GPU whose measured copy bandwidth (the meta row) is nearest to this run's. Rows are matched on
(kind, version, n, params); the table shows both medians, their ratio (reference / yours: above 1
your version is faster) and your row's status. --all shows every matched kind, not only the
versions' headline rows.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import course_csv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(path: str) -> list[dict[str, str]]:
    return course_csv.read_raw(path)


def meta_of(rows: list[dict[str, str]]) -> tuple[str, dict[str, float]]:
    m = course_csv.meta_row(rows) or {}
    return m.get("device", ""), {k: v for k, v in course_csv.parse_metrics(m.get("metrics", "")).items() if v == v}


def closest_reference(csv_path: str, ref_dir: str) -> tuple[str, str]:
    rows = read(csv_path)
    name = os.path.basename(csv_path)
    sub = next((r.get("subproject") for r in rows if r.get("subproject")), "")
    if sub and not any(os.path.isfile(os.path.join(ref_dir, d, name)) for d in os.listdir(ref_dir)):
        name = sub + ".csv"  # a run saved under another name: the sub-project's reference run
    device, m = meta_of(rows)
    cands = []
    for d in sorted(os.listdir(ref_dir)):
        p = os.path.join(ref_dir, d, name)
        if d in ("scratch", "student") or not os.path.isfile(p) or os.path.abspath(p) == os.path.abspath(csv_path):
            continue
        rdev, rm = meta_of(read(p))
        if rdev and rdev == device:
            return p, "the same GPU"
        bw, rbw = m.get("copy_bandwidth"), rm.get("copy_bandwidth")
        dist = abs(math.log(bw / rbw)) if bw and rbw else float("inf")
        cands.append((dist, p, rdev, rbw))
    if not cands:
        return None, ""
    dist, p, rdev, rbw = min(cands)
    why = (
        f"the nearest copy bandwidth ({rbw:,.0f} GB/s vs yours {m['copy_bandwidth']:,.0f})"
        if dist != float("inf")
        else "the only reference (this run measured no copy bandwidth)"
    )
    return p, f"{rdev}: {why}"


def matched(
    csv_path: str, ref_path: str, all_kinds: bool = False
) -> list[tuple[dict[str, str], dict[str, str], float | None, float | None]]:
    """[(row, ref_row or None, yours_ms, ref_ms)] for the run's rows (headline rows unless all_kinds)."""
    ref = {(r["kind"], r["version"], r["n"], r["params"]): r for r in read(ref_path) if r.get("kind") != "meta"}
    out = []
    for r in read(csv_path):
        if r.get("kind") == "meta" or (not all_kinds and r.get("kind") != "version"):
            continue
        other = ref.get((r["kind"], r["version"], r["n"], r["params"]))
        yours = float(r["median_ms"]) if r.get("median_ms") else None
        theirs = float(other["median_ms"]) if other and other.get("median_ms") else None
        out.append((r, other, yours, theirs))
    return out


def markdown(csv_path: str, ref_dir: str, all_kinds: bool = False) -> str:
    """The comparison as a Markdown table (the student's README), or a line saying there is none."""
    ref_path, why = closest_reference(csv_path, ref_dir)
    if not ref_path:
        return f"_No committed reference run has {os.path.basename(csv_path)} to compare with._"
    device, _ = meta_of(read(csv_path))
    lines = [
        f"Your run ({device or 'no GPU'}) next to `{os.path.relpath(ref_path, ROOT)}` ({why}); "
        "ref / yours above 1: your version is faster.",
        "",
        "| version | n | params | yours (ms) | reference (ms) | ref / yours | status |",
        "|---|---|---|---|---|---|---|",
    ]
    for r, _, yours, theirs in matched(csv_path, ref_path, all_kinds):
        ratio = f"{theirs / yours:.2f}" if yours and theirs else "-"
        lines.append(
            f"| `{r['version']}` | {r['n']} | {r['params'] or '-'} | {f'{yours:.4g}' if yours else '-'} | "
            f"{f'{theirs:.4g}' if theirs else '-'} | {ratio} | {course_csv.status_text(r)[:60]} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--reference-dir", default=os.path.join(ROOT, "results"))
    ap.add_argument("--all", action="store_true")
    a = ap.parse_args()
    if not os.path.isfile(a.csv):
        print(f"compare: {a.csv}: no such file", file=sys.stderr)
        return 2
    try:
        ref_path, why = closest_reference(a.csv, a.reference_dir)
    except course_csv.CsvError as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2
    device, _ = meta_of(read(a.csv))
    if not ref_path:
        print(f"compare: no committed reference run has {os.path.basename(a.csv)} (looked in {a.reference_dir})")
        return 0
    print(f"{a.csv} ({device or 'no GPU'}) next to {os.path.relpath(ref_path, ROOT)} ({why})\n")
    hdr = f"{'version':28s} {'n':>10s} {'params':46s} {'yours ms':>10s} {'ref ms':>10s} {'ref/yours':>9s}  status"
    print(hdr)
    print("-" * len(hdr))
    rows = matched(a.csv, ref_path, a.all)
    for r, _, yours, theirs in rows:
        ratio = f"{theirs / yours:9.2f}" if yours and theirs else f"{'-':>9s}"
        print(
            f"{r['version'][:28]:28s} {r['n']:>10s} {r['params'][:46]:46s} "
            f"{(f'{yours:.4g}' if yours else '-'):>10s} {(f'{theirs:.4g}' if theirs else '-'):>10s} {ratio}  "
            f"{course_csv.status_text(r)[:60]}"
        )
    if not rows:
        print("(no rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
