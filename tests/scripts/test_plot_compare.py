"""plot.py and compare.py on fake runs: the tables show every row's verdict, the comparison finds
the reference run, and a file that is not a driver's CSV is refused in one line (no traceback)."""

import os
import shutil
import subprocess
import sys

import compare
from conftest import ROOT, row, write_csv


def script(*args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", args[0]), *args[1:]],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_readme_tables_show_each_verdict(tmp_path, sample_run):
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- BEGIN GENERATED RESULTS -->\nold\n<!-- END GENERATED RESULTS -->\n")
    p = script("plot.py", "--csv", sample_run, "--out", str(tmp_path / "img"), "--readme", str(readme))
    assert p.returncode == 0, p.stderr
    text = readme.read_text()
    assert "FAIL: element 3 is 7, expected 8" in text
    assert "skipped: needs sm_90" in text and "NOT IMPLEMENTED: stream_compaction/src/v5_lookback.cu:40" in text
    assert "old" not in text


def test_plot_refuses_a_file_that_is_not_a_driver_csv(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("subproject,kind,passed\nstream_compaction,version,PASS\n")
    p = script("plot.py", "--csv", str(bad), "--out", str(tmp_path / "img"))
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert "bad.csv: not a driver's CSV" in p.stderr


def test_plot_of_a_run_with_nothing_timed_says_so_and_draws_nothing(tmp_path):
    # a machine without a GPU asked only for GPU versions (docs/adding_a_version.md step 6 there)
    dev = "none (no CUDA device)"
    rows = [row(kind="meta", idea="the run's device", n=0, status="pass", device=dev)]
    for v in ("scan_lookback", "scan_one_block", "scan_cub"):
        for n in (1 << 20, 1 << 24):
            rows.append(row(version=v, n=n, params="op=scan", status="skipped", detail="no CUDA device", device=dev))
    csv_path = write_csv(tmp_path / "one_block.csv", rows)
    p = script("plot.py", "--csv", csv_path, "--out", str(tmp_path / "img"))
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert "has no timed rows" in p.stdout and "no plots drawn" in p.stdout
    assert not (tmp_path / "img").exists() or not os.listdir(tmp_path / "img")


def test_compare_matches_rows_against_the_reference_of_the_same_gpu(tmp_path, sample_run):
    ref_dir = tmp_path / "results" / "fake-gpu"
    ref_dir.mkdir(parents=True)
    shutil.copy(sample_run, ref_dir / "stream_compaction.csv")
    mine = write_csv(tmp_path / "mine.csv", [
        row(kind="meta", n=0, metrics="copy_bandwidth[GB/s]=1000", status="pass", device="NVIDIA Fake GPU"),
        row(version="scan_cpu", n=1 << 20, params="op=scan", median_ms=1.0, status="pass", device="NVIDIA Fake GPU"),
        row(version="scan_naive", n=1 << 20, params="op=scan block=256", status="fail", detail="wrong",
            device="NVIDIA Fake GPU"),
    ])  # fmt: skip
    ref, why = compare.closest_reference(mine, str(tmp_path / "results"))
    assert ref == str(ref_dir / "stream_compaction.csv") and why == "the same GPU"
    md = compare.markdown(mine, str(tmp_path / "results"))
    assert "| `scan_cpu` | 1048576 | op=scan | 1 | 2 | 2.00 | PASS |" in md
    assert "FAIL: wrong" in md
