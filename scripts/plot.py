#!/usr/bin/env python3
"""Plots and README tables from the drivers' CSV files (CSV only: version names, ideas and
ceilings all come from the rows, never from this script). One module per sub-project under
scripts/plots/ (plots(rows, tune_rows, out, args) and tables(rows, tune_rows)), shared helpers
in scripts/plots/common.py; the sub-project is read from the CSV.

usage: plot.py --csv results/<gpu>/stream_compaction.csv [--tune-csv ...] --out images/stream_compaction
               [--readme stream_compaction/README.md [--compare results]] [--trace-csv ...] [--topdown-dir ...]
               [--profile-csv results/<gpu>/stream_compaction_profile.csv]

--profile-csv: the driver's --profile rows (every sub-project's, scripts/plots/profile.py): profile.png in
--out and, with --readme, the README's PROFILE block (a README without one is left as it is, and said so).
"""

import argparse
import importlib
import importlib.util
import os
import sys
from types import ModuleType

from course_csv import SUBPROJECTS, CsvError, Row, read_registry
from plots import profile
from plots.common import ladder_table, make_saver, read_rows, update_readme


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
    ap.add_argument("--profile-csv", help="the driver's --profile CSV (rows of kind profile): table and plot")
    return ap.parse_args()


def read_inputs(a: argparse.Namespace) -> tuple[list[Row], list[Row], list[Row], list[Row]]:
    """(rows, tune rows, registry, profile rows), or exit naming the file and what is wrong with it."""
    for p in filter(None, [a.csv, a.tune_csv, a.profile_csv]):
        if not os.path.isfile(p):
            sys.exit(f"plot.py: no CSV at '{p}'")
    try:
        rows = read_rows(a.csv)
        tune_rows = read_rows(a.tune_csv) if a.tune_csv else []
        registry = read_registry(a.registry) if a.registry else []
        profile_rows = read_rows(a.profile_csv) if a.profile_csv else []
    except (CsvError, OSError) as e:
        sys.exit(f"plot.py: {e}")
    if not rows:
        sys.exit(f"plot.py: '{a.csv}' has no rows")
    if rows[0]["subproject"] not in SUBPROJECTS:
        sys.exit(f"plot.py: '{a.csv}' is from sub-project '{rows[0]['subproject']}', which has no plot module")
    other = next((r["subproject"] for r in profile_rows if r["subproject"] != rows[0]["subproject"]), None)
    if other:
        sys.exit(f"plot.py: '{a.profile_csv}' is {other}'s profile, not {rows[0]['subproject']}'s")
    return rows, tune_rows, registry, profile_rows


def write_readme(
    a: argparse.Namespace,
    module: ModuleType,
    rows: list[Row],
    tune_rows: list[Row],
    registry: list[Row],
    profile_rows: list[Row],
) -> None:
    """The README's generated blocks: the results tables (next to the reference with --compare), the
    ladder, the profile (with --profile-csv, where the README has its block)."""
    text = module.tables(rows, tune_rows)
    if a.compare:
        import compare

        text += "\n\n### Next to the reference\n\n" + compare.markdown(a.csv, a.compare)
    update_readme(a.readme, text)
    if registry:
        update_readme(a.readme, ladder_table(registry, rows), "LADDER")
    if a.profile_csv:
        with open(a.readme, encoding="utf-8") as fh:
            has_block = "<!-- BEGIN GENERATED PROFILE -->" in fh.read()
        if has_block:
            drawn = importlib.util.find_spec("matplotlib") is not None and any(map(profile.profiled, profile_rows))
            image = os.path.relpath(os.path.join(a.out, "profile.png"), os.path.dirname(os.path.abspath(a.readme)))
            update_readme(a.readme, profile.markdown(profile_rows, image if drawn else None), "PROFILE")
        else:
            print(f"plot.py: {a.readme} has no PROFILE block: the profile table is not written into it")
    print(f"plot.py: tables written into {a.readme}")


def profile_plot(profile_rows: list[Row], out: str) -> list[str]:
    """profile.png from the --profile rows (nothing where no version was profiled)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[str] = []
    profile.plot(plt, make_saver(plt, out, written), profile_rows)
    return written


def main() -> None:
    a = parse_args()
    rows, tune_rows, registry, profile_rows = read_inputs(a)
    module = importlib.import_module(f"plots.{rows[0]['subproject']}")
    if a.readme:
        write_readme(a, module, rows, tune_rows, registry, profile_rows)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        sys.exit(
            "plot.py: matplotlib is missing, so no plots were drawn. Install it with\n"
            "    python3 -m pip install -r requirements.txt\n"
            f"then run: python3 scripts/plot.py --csv {a.csv} --out {a.out}"
        )
    written = module.plots(rows, tune_rows, a.out, a)
    if profile_rows:
        written += profile_plot(profile_rows, a.out)
    for p in written:
        print(f"plot.py: wrote {p}")
    if not written:
        print(f"plot.py: {a.csv} has no timed rows (skipped or failed versions only): no plots drawn")


if __name__ == "__main__":
    main()
