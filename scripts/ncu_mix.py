#!/usr/bin/env python3
"""Dynamic instruction mix of the nbody force kernels, from ncu's raw CSV.

usage: scripts/ncu_mix.py --n 65536 ncu_v1.csv ncu_v2.csv ...   (one step of n bodies per file)

The files come from
  ncu --metrics $(scripts/ncu_mix.py --metrics) --csv --page raw --launch-count 2 \
      --kernel-name regex:'^(naive|tiled|rsqrt|tuned|warp_split|multi_body)_kernel' \
      build/release/nbody/nbody --mode step --n 65536 --reps 1 --version v8

Every count is per interaction (divided by n^2) and per thread: what the issue ceiling (one
instruction per FP32 lane per clock) divides. Unlike the static SASS mix (sass_mix.py), which
counts every instruction of a kernel once, these are weighted by how often each executed: the
prologue, the epilogue and the remainder loops all but vanish, and the loop control of the
unrolled inner loop is spread over its interactions. The nbody registry's
instructions_per_interaction are the `total` column at n = 2^16 on an H200.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

METRICS = {
    "total": "smsp__thread_inst_executed.sum",
    "FFMA": "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "FADD": "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "FMUL": "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "MUFU": "smsp__inst_executed_pipe_xu.sum",  # warp instructions: x 32 threads
    "LDS": "smsp__inst_executed_op_shared_ld.sum",  # warp instructions: x 32 threads
    "issue %": "smsp__issue_active.avg.pct_of_peak_sustained_active",
}
PER_WARP = {"MUFU", "LDS"}


def rows_of(path: str) -> list[dict[str, str]]:
    lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise SystemExit(f"{path}: no ncu raw table (did ncu profile any kernel?)")
    table = list(csv.reader(lines[start:]))
    header = table[0]
    return [dict(zip(header, r)) for r in table[2:]]  # table[1] holds the units


def main() -> int | None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--n", type=float, help="bodies per step")
    ap.add_argument("--metrics", action="store_true", help="print the ncu --metrics list and exit")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    if a.metrics:
        print(",".join(METRICS.values()))
        return
    if not a.n or not a.files:
        ap.error("--n and at least one file are needed")
    pairs = a.n * a.n
    cols = [c for c in METRICS if c not in ("total", "issue %")]
    print(f"{'kernel':<32} " + " ".join(f"{c:>6}" for c in cols) + f" {'other':>6} {'total':>6} {'issue %':>8}")
    seen = set()
    for path in a.files:
        for r in rows_of(path):
            name = r["Kernel Name"].split("(")[0].replace("void ", "").split("::")[-1]
            if "sum_chunks" in name or name in seen:
                continue
            seen.add(name)
            v = {c: float(r[m].replace(",", "")) for c, m in METRICS.items()}
            per = {c: v[c] * (32 if c in PER_WARP else 1) / pairs for c in METRICS if c != "issue %"}
            other = per["total"] - sum(per[c] for c in cols)
            print(
                f"{name:<32} "
                + " ".join(f"{per[c]:6.2f}" for c in cols)
                + f" {other:6.2f} {per['total']:6.2f} {v['issue %']:8.1f}"
            )


if __name__ == "__main__":
    sys.exit(main())
