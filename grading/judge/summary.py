"""A class's grades and the grading job's throughput as Markdown (for the GPU check's log and the
README): python3 -m judge.summary GRADE_OUT"""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

from .formats import GRADES_FIXED_COLUMNS, md


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.exit(__doc__)
    out = argv[0]
    with open(os.path.join(out, "grades.csv"), encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    timing = json.loads(Path(os.path.join(out, "timing.json")).read_text(encoding="utf-8"))
    fixed = GRADES_FIXED_COLUMNS
    print("| student | points | statuses | edited outside | build |")
    print("|---|---:|---|---|---|")
    for r in rows:
        counts = {}
        for k, v in r.items():
            if k not in fixed and v:
                st = v.rsplit(":", 1)[0]
                counts[st] = counts.get(st, 0) + 1
        sts = ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda x: -x[1]))
        print(
            f"| {md(r['student'])} | {float(r['points']):g} / {float(r['points_max']):g} | {sts} | "
            f"{md(r['edited_outside'] or '')} | {md(r['build_error'][:80] or 'ok')} |"
        )
    print()
    print(
        f"{timing['students']} students on {timing['gpus']} GPU(s) in {timing['seconds']} s (reference "
        f"{timing['reference_seconds']} s): {timing['seconds_per_student_per_gpu']} s per student per GPU, "
        f"{timing['students_per_hour']} students/hour; mean build {timing['build_seconds_mean']} s, "
        f"mean runs {timing['run_seconds_mean']} s"
    )
    by = timing.get("runs_by_subproject") or {}
    if by:
        print(
            "runs a student, by sub-project: "
            + ", ".join(f"{sp} {v['seconds_mean']} s in {v['cases_mean']:g} processes" for sp, v in by.items())
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
