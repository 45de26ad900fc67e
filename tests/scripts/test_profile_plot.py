"""The profile block and plot (scripts/plots/profile.py through plot.py --profile-csv) on profile rows
as the drivers write them. The numbers are those of the ncu captures in tests/common/data/ (an H200):
common/src/profile.cpp sums scan_shared_mem's six kernels to what these rows hold, and
tests/common/test_profile.cpp checks that sum."""

import os
import subprocess
import sys

from conftest import ROOT, row, write_csv
from course_csv import read_rows
from plots import profile

DEV = "NVIDIA H200"
CASE = "launches=40 args=--n 2^20 --reps 1"


def profile_run(tmp_path, name="stream_compaction_profile.csv", sub="stream_compaction"):
    rows = [
        row(subproject=sub, kind="meta", n=0, params="seed=20261121 launches=40", status="pass", device=DEV,
            metrics="copy_bandwidth[GB/s]=4213;fp32_fma_peak[GFLOP/s]=50649.4;launch_latency[us]=87.264"),
        # tests/common/data/ncu_scan_nvtx_raw.csv, summed
        row(subproject=sub, kind="profile", version="scan_shared_mem", role="version", params=CASE, metric=342.369,
            metric_unit="GB/s", pct_of_ceiling=8.12649, ceiling="copy_bandwidth", status="pass", device=DEV,
            metrics="kernels[]=6;duration[ms]=0.036896;dram[MB]=12.6321;achieved_occupancy[%]=62.0303;"
                    "theoretical_occupancy[%]=100;registers[reg/thread]=20;spill_instructions[inst]=0;"
                    "shared_memory[B]=2116;stall.long_scoreboard[cycles/issue]=6.61357;"
                    "stall.barrier[cycles/issue]=4.61039;heaviest.block_scan_kernel[%]=77.5369"),
        # tests/common/data/ncu_ceilings_raw.csv, summed (the ceilings' kernels as if one version's)
        row(subproject=sub, kind="profile", version="scan_lookback", role="version", params=CASE, metric=0.0175477,
            metric_unit="GB/s", pct_of_ceiling=0.000416513, ceiling="copy_bandwidth", status="pass", device=DEV,
            metrics="kernels[]=12;duration[ms]=2.90317;dram[MB]=0.050944;achieved_occupancy[%]=84.364;"
                    "theoretical_occupancy[%]=99.881;registers[reg/thread]=21;spill_instructions[inst]=0;"
                    "shared_memory[B]=0;stall.math_pipe_throttle[cycles/issue]=0.225716;"
                    "stall.no_instruction[cycles/issue]=0.151891;heaviest.fma_peak_kernel[%]=99.7619"),
        row(subproject=sub, kind="profile", version="scan_tma", role="version", params=CASE, status="skipped",
            detail="no permission to read GPU performance counters (NVreg_RestrictProfilingToAdminUsers): run as "
                   "root or ask the admin", device=DEV),
        row(subproject=sub, kind="profile", version="scan_cub", role="library", params=CASE, status="fail",
            detail="the profiled run failed: element 3 is 7, expected 8", device=DEV),
    ]  # fmt: skip
    return write_csv(tmp_path / name, rows)


def plot_py(*args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "plot.py"), *args],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_the_table_has_a_line_per_version_with_its_numbers_or_its_verdict(tmp_path):
    text = profile.markdown(read_rows(profile_run(tmp_path)), image="../images/stream_compaction/profile.png")
    lines = text.splitlines()
    shared = next(line for line in lines if line.startswith("| `scan_shared_mem` |"))
    cells = [c.strip() for c in shared.strip("|").split("|")]
    assert cells[1:5] == ["6", "0.0369", "342.4", "8.1"]
    assert cells[5] == "62.0 / 100.0"
    assert cells[6:9] == ["20", "0", "2,116"]
    assert cells[9] == "long_scoreboard 6.61, barrier 4.61"  # largest first
    assert cells[10] == "`block_scan_kernel` 78%"
    skipped = next(line for line in lines if line.startswith("| `scan_tma` |"))
    assert "skipped: no permission to read GPU performance counters" in skipped
    assert skipped.count("|") == shared.count("|")  # a row of the table, not a broken one
    assert "FAIL: the profiled run failed: element 3 is 7, expected 8" in text
    assert "on NVIDIA H200" in text and "first 40 kernels" in text
    assert "Profile case: `stream_compaction --n 2^20 --reps 1 --version NAME`" in text
    assert lines[-1] == "![profile per version](../images/stream_compaction/profile.png)"


def test_a_run_without_profile_rows_says_how_to_get_them():
    assert profile.markdown([]) == profile.NOT_PROFILED
    assert "--profile" in profile.NOT_PROFILED and "ncu" in profile.NOT_PROFILED


def test_versions_on_different_cases_are_named_with_their_case(tmp_path):
    rows = read_rows(profile_run(tmp_path))
    rows[1]["params_d"]["args"] = "--mode batch --files 2"
    text = profile.markdown(rows)
    assert "Profile case (`scan_shared_mem`): `stream_compaction --mode batch --files 2 --version NAME`" in text
    assert "(`scan_lookback`, `scan_tma`, `scan_cub`): `stream_compaction --n 2^20 --reps 1" in text


def test_plot_py_fills_the_profile_block_and_draws_the_plot(tmp_path, sample_run):
    readme = tmp_path / "README.md"
    readme.write_text(
        "# x\n<!-- BEGIN GENERATED RESULTS -->\n<!-- END GENERATED RESULTS -->\n"
        "<!-- BEGIN GENERATED PROFILE -->\nold\n<!-- END GENERATED PROFILE -->\n"
    )
    out = tmp_path / "img"
    p = plot_py("--csv", sample_run, "--out", str(out), "--readme", str(readme), "--profile-csv", profile_run(tmp_path))
    assert p.returncode == 0, p.stderr
    text = readme.read_text()
    assert "old" not in text and "| `scan_shared_mem` | 6 |" in text
    assert "![profile per version](img/profile.png)" in text  # the plot's path from the README
    assert (out / "profile.png").stat().st_size > 10000


def test_a_readme_without_a_profile_block_is_left_alone_and_said_so(tmp_path, sample_run):
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- BEGIN GENERATED RESULTS -->\n<!-- END GENERATED RESULTS -->\n")
    p = plot_py("--csv", sample_run, "--out", str(tmp_path / "img"), "--readme", str(readme),
                "--profile-csv", profile_run(tmp_path))  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "has no PROFILE block" in p.stdout
    assert "scan_shared_mem" not in readme.read_text()


def test_another_subprojects_profile_is_refused(tmp_path, sample_run):
    other = profile_run(tmp_path, "nbody_profile.csv", sub="nbody")
    p = plot_py("--csv", sample_run, "--out", str(tmp_path / "img"), "--profile-csv", other)
    assert p.returncode != 0 and "Traceback" not in p.stderr
    assert "is nbody's profile, not stream_compaction's" in p.stderr


def test_nothing_profiled_draws_nothing_and_shows_every_reason(tmp_path, sample_run):
    rows = [row(kind="meta", n=0, status="pass", device="none (CPU only)")]
    rows += [row(kind="profile", version=v, params=CASE, status="skipped", detail="no CUDA device",
                 device="none (CPU only)") for v in ("scan_naive", "scan_lookback")]  # fmt: skip
    skipped = write_csv(tmp_path / "skipped_profile.csv", rows)
    readme = tmp_path / "README.md"
    readme.write_text("<!-- BEGIN GENERATED RESULTS -->\n<!-- END GENERATED RESULTS -->\n"
                      "<!-- BEGIN GENERATED PROFILE -->\n<!-- END GENERATED PROFILE -->\n")  # fmt: skip
    p = plot_py("--csv", sample_run, "--out", str(tmp_path / "img"), "--readme", str(readme), "--profile-csv", skipped)
    assert p.returncode == 0, p.stderr
    assert not (tmp_path / "img" / "profile.png").exists()
    text = readme.read_text()
    assert text.count("skipped: no CUDA device") == 2 and "profile.png" not in text
    assert "No version was profiled (CPU only, commit `abc1234`): each row says why." in text
