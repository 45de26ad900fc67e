#!/usr/bin/env python3
"""Prints a run's table next to the committed reference run of the closest GPU.

    scripts/compare.py results/scratch/stream_compaction.csv [--reference-dir results] [--all]

The reference is results/<gpu>/<same file name>: the one of the same GPU when committed, else the
GPU whose measured copy bandwidth (the meta row) is nearest to this run's. Rows are matched on
(kind, version, n, params); the table shows both medians, their ratio (reference / yours: above 1
your version is faster) and your row's status. --all shows every matched kind, not only the
versions' headline rows.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import course_csv  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(path):
    return course_csv.read_raw(path)


def meta_of(rows):
    m = course_csv.meta_row(rows) or {}
    return m.get("device", ""), {k: v for k, v in course_csv.parse_metrics(m.get("metrics", "")).items() if v == v}


def closest_reference(csv_path, ref_dir):
    rows = read(csv_path)
    name = os.path.basename(csv_path)
    sub = next((r.get("subproject") for r in rows if r.get("subproject")), "")
    if sub and not any(os.path.isfile(os.path.join(ref_dir, d, name)) for d in os.listdir(ref_dir)):
        name = sub + ".csv"  # a run saved under another name: the sub-project's reference run
    device, m = meta_of(rows)
    cands = []
    for d in sorted(os.listdir(ref_dir)):
        p = os.path.join(ref_dir, d, name)
        if d == "scratch" or not os.path.isfile(p) or os.path.abspath(p) == os.path.abspath(csv_path):
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
    why = (f"the nearest copy bandwidth ({rbw:,.0f} GB/s vs yours {m['copy_bandwidth']:,.0f})" if dist != float("inf")
           else "the only reference (this run measured no copy bandwidth)")
    return p, f"{rdev}: {why}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--reference-dir", default=os.path.join(ROOT, "results"))
    ap.add_argument("--all", action="store_true")
    a = ap.parse_args()
    if not os.path.isfile(a.csv):
        print(f"compare: {a.csv}: no such file", file=sys.stderr)
        return 2
    ref_path, why = closest_reference(a.csv, a.reference_dir)
    mine = read(a.csv)
    device, _ = meta_of(mine)
    if not ref_path:
        print(f"compare: no committed reference run has {os.path.basename(a.csv)} (looked in {a.reference_dir})")
        return 0
    ref = {(r["kind"], r["version"], r["n"], r["params"]): r for r in read(ref_path) if r.get("kind") != "meta"}
    print(f"{a.csv} ({device or 'no GPU'}) next to {os.path.relpath(ref_path, ROOT)} ({why})\n")
    hdr = f"{'version':28s} {'n':>10s} {'params':46s} {'yours ms':>10s} {'ref ms':>10s} {'ref/yours':>9s}  status"
    print(hdr)
    print("-" * len(hdr))
    shown = 0
    for r in mine:
        if r.get("kind") == "meta" or (not a.all and r.get("kind") != "version"):
            continue
        key = (r["kind"], r["version"], r["n"], r["params"])
        other = ref.get(key)
        yours = float(r["median_ms"]) if r.get("median_ms") else None
        theirs = float(other["median_ms"]) if other and other.get("median_ms") else None
        ratio = f"{theirs / yours:9.2f}" if yours and theirs else f"{'-':>9s}"
        print(f"{r['version'][:28]:28s} {r['n']:>10s} {r['params'][:46]:46s} "
              f"{(f'{yours:.4g}' if yours else '-'):>10s} {(f'{theirs:.4g}' if theirs else '-'):>10s} {ratio}  "
              f"{(r.get('passed') or '')[:60]}")
        shown += 1
    if not shown:
        print("(no rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
