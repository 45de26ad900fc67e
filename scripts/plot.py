#!/usr/bin/env python3
"""Plots and README tables from the drivers' CSV files (CSV only: version names, ideas and
ceilings all come from the rows, never from this script). One module per sub-project under
scripts/plots/ (plots(rows, tune_rows, out, args) and tables(rows, tune_rows)), shared helpers
in scripts/plots/common.py; the sub-project is read from the CSV.

usage: plot.py --csv results/<gpu>/stream_compaction.csv [--tune-csv ...] --out images/stream_compaction
               [--readme stream_compaction/README.md [--compare results]] [--trace-csv ...] [--topdown-dir ...]
"""

import argparse
import importlib
import os
import sys
from types import ModuleType

from course_csv import SUBPROJECTS, CsvError, Row, read_registry
from plots.common import ladder_table, read_rows, update_readme


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True, help="driver CSV")
    ap.add_argument("--tune-csv", help="the tune mode's CSV (stream_compaction_tune, nbody --mode tune)")
    ap.add_argument("--out", required=True, help="folder for the PNG files")
    ap.add_argument("--readme", help="README whose generated-results section is rewritten")
    ap.add_argument(
        "--compare",
        metavar="RESULTS_DIR",
        help="with --readme: add the run next to the closest committed reference run in RESULTS_DIR "
        "(a student's README: scripts/run_all.sh --student)",
    )
    ap.add_argument("--registry", help="the driver's registry (--list --csv): with --readme, the README's ladder table")
    ap.add_argument("--trace-csv", help="ndt_graph per-iteration trace CSV (convergence plots)")
    ap.add_argument("--topdown-dir", help="ground_seg --topdown-dir folder (top-down views of the two rules)")
    return ap.parse_args()


def read_inputs(a: argparse.Namespace) -> tuple[list[Row], list[Row], list[Row]]:
    """(rows, tune rows, registry), or exit naming the file and what is wrong with it."""
    for p in filter(None, [a.csv, a.tune_csv]):
        if not os.path.isfile(p):
            sys.exit(f"plot.py: no CSV at '{p}'")
    try:
        rows = read_rows(a.csv)
        tune_rows = read_rows(a.tune_csv) if a.tune_csv else []
        registry = read_registry(a.registry) if a.registry else []
    except (CsvError, OSError) as e:
        sys.exit(f"plot.py: {e}")
    if not rows:
        sys.exit(f"plot.py: '{a.csv}' has no rows")
    if rows[0]["subproject"] not in SUBPROJECTS:
        sys.exit(f"plot.py: '{a.csv}' is from sub-project '{rows[0]['subproject']}', which has no plot module")
    return rows, tune_rows, registry


def write_readme(
    a: argparse.Namespace, module: ModuleType, rows: list[Row], tune_rows: list[Row], registry: list[Row]
) -> None:
    """The README's generated blocks: the results tables (next to the reference with --compare), the ladder."""
    text = module.tables(rows, tune_rows)
    if a.compare:
        import compare

        text += "\n\n### Next to the reference\n\n" + compare.markdown(a.csv, a.compare)
    update_readme(a.readme, text)
    if registry:
        update_readme(a.readme, ladder_table(registry, rows), "LADDER")
    print(f"plot.py: tables written into {a.readme}")


def main() -> None:
    a = parse_args()
    rows, tune_rows, registry = read_inputs(a)
    module = importlib.import_module(f"plots.{rows[0]['subproject']}")
    if a.readme:
        write_readme(a, module, rows, tune_rows, registry)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        sys.exit(
            "plot.py: matplotlib is missing, so no plots were drawn. Install it with\n"
            "    python3 -m pip install -r requirements.txt\n"
            f"then run: python3 scripts/plot.py --csv {a.csv} --out {a.out}"
        )
    written = module.plots(rows, tune_rows, a.out, a)
    for p in written:
        print(f"plot.py: wrote {p}")
    if not written:
        print(f"plot.py: {a.csv} has no timed rows (skipped or failed versions only): no plots drawn")


if __name__ == "__main__":
    main()
