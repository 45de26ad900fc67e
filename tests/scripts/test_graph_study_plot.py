"""ndt_graph --graph-study's README tables and figures (scripts/plots/ndt_graph.py), from a fake study CSV
written the way the driver writes it: the study joins the results block when its CSV is given (as
--tune-csv), names what the rows name (versions, the claim's baseline, the plan's cloud) and is left
out without it.

    python3 -m pytest tests/scripts/test_graph_study_plot.py
"""

import os
import subprocess
import sys

import pytest

from conftest import ROOT, row, write_csv

DEV = "NVIDIA Fake GPU"
CASE = "room_tutorial"


def ndt(**kw):
    return row(subproject="ndt_graph", device=DEV, status="pass", **kw)


def unroll(version, k, ms, metrics):
    kind = "unroll" if k else "unroll_baseline"
    params = f"case={CASE}" + (f" unroll={k}" if k else "")
    return ndt(kind=kind, version=version, role="version", n=12433, params=params, median_ms=ms, samples=40,
               metric=ms * 1e3 / 21, metric_unit="us/iteration", metrics=metrics)  # fmt: skip


def study_rows():
    own = "iterations[]=18;evaluations[]=21;kernel_per_evaluation[us]=18.6"
    return [
        ndt(kind="meta", idea="the run's device", metrics="copy_bandwidth[GB/s]=4000;graph_batch_unrolled[]=8"),
        unroll("v2_device_step", 0, 0.80, own + ";other_per_evaluation[us]=19.5;host_syncs[]=21"),
        unroll("v4_graph_batch", 1, 0.78, own + ";graph_launches[]=21;noop_evaluations[]=0;x_baseline[]=1.03;"
               "claimed_speedup[]=1.4"),
        unroll("v4_graph_batch", 8, 0.51, own + ";graph_launches[]=3;evaluations_launched[]=24;noop_evaluations[]=3;"
               "host_syncs[]=3;other_per_evaluation[us]=5.8;x_baseline[]=1.57;x_unroll1[]=1.53;claimed_speedup[]=1.4"),
        ndt(kind="graph_build", version="v4_graph_batch", idea="the graph by stream capture", n=12433,
            params=f"case={CASE} method=stream_capture", median_ms=0.05, samples=300, metric=50, metric_unit="us",
            metrics="build_us[us]=20;instantiate_us[us]=30;nodes[]=17;blocks[]=389"),
        ndt(kind="graph_update", version="v4_graph_batch", idea="each node's new parameters set", n=12433,
            params=f"case={CASE} method=exec_node_set_params points=12433,6217", median_ms=0.004, samples=500,
            metric=4, metric_unit="us", metrics="blocks[]=389;blocks_other[]=195;points_other[]=6217"),
        ndt(kind="kernel_split", version="v1_naive", n=12433, params=f"case={CASE}", median_ms=10.7, samples=20,
            metric=510, metric_unit="us/evaluation", metrics="evaluations[]=21;host_solve_us[us]=40;kernel_us[us]=nan"),
        ndt(kind="kernel_split", version="v8_programmatic_launch", n=12433, params=f"case={CASE}", median_ms=0.49,
            samples=40, metric=23.3, metric_unit="us/evaluation",
            metrics="evaluations[]=21;kernel_us[us]=18.6;eval_us[us]=12.4;reduce_us[us]=2.1;solve_us[us]=3.6;"
                    "bookkeeping_us[us]=0.5;outside_us[us]=4.7"),
        ndt(kind="limit", version="dependent_l2_load", idea="one thread chasing pointers", n=1, params="bytes=4194304",
            metric=310, metric_unit="ns/load"),
        ndt(kind="cost_model", version="v8_programmatic_launch", idea="the solver state read once", n=12433,
            params=f"case={CASE} part=bookkeeping", metric=0.5, metric_unit="us/evaluation",
            metrics="measured_us[us]=0.5;limit_us[us]=0.31"),
        ndt(kind="cost_model", version="v8_programmatic_launch", idea="one evaluation, and the alignment", n=12433,
            params=f"case={CASE} part=total", metric=23.3, metric_unit="us/evaluation",
            metrics="measured_us[us]=23.3;limit_us[us]=9.1;evaluations[]=21;iterations[]=18;iteration_us[us]=27.2;"
                    "iteration_limit_us[us]=10.6;alignment_ms[ms]=0.49;alignment_limit_ms[ms]=0.19"),
        ndt(kind="coop", version="eval_kernel", idea="the evaluation kernel", n=50688,
            params=f"gpu={DEV} (sm_90) threads=128 source=measured", metric=50688, metric_unit="points",
            metrics="sms[]=132;blocks_per_sm[]=3;coresident_blocks[]=396"),
        ndt(kind="coop", version="eval_kernel", idea="the evaluation kernel", n=4096,
            params="gpu=Jetson AGX Orin (sm_87) threads=256 source=computed", metric=4096, metric_unit="points",
            metrics="sms[]=16;blocks_per_sm[]=1;coresident_blocks[]=16"),
        ndt(kind="coop_case", version="v3_cooperative", n=326867, params="case=sim_street_326867", median_ms=4.2,
            samples=30,
            metrics="iterations[]=11;coresident_blocks[]=264;grid_blocks[]=264;chunk_rounds_per_block[]=39"),
    ]  # fmt: skip


def default_rows():
    return [
        ndt(kind="meta", idea="the run's device", metrics="copy_bandwidth[GB/s]=4000"),
        ndt(kind="version", version="v4_graph_batch", role="version", n=12433, params=f"case={CASE} search=radius",
            median_ms=0.51, samples=40, metric=28.5, metric_unit="us/iteration", metrics="iterations[]=18"),
    ]  # fmt: skip


def run_plot(tmp_path, with_study):
    readme = tmp_path / "README.md"
    readme.write_text("## Results\n<!-- BEGIN GENERATED RESULTS -->\n<!-- END GENERATED RESULTS -->\n")
    main = write_csv(tmp_path / "ndt_graph.csv", default_rows())
    args = [sys.executable, os.path.join(ROOT, "scripts", "plot.py"), "--csv", main, "--out", str(tmp_path / "img")]
    if with_study:
        args += ["--tune-csv", write_csv(tmp_path / "ndt_graph_graph_study.csv", study_rows())]
    done = subprocess.run([*args, "--readme", str(readme)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return readme.read_text()


def test_the_study_joins_the_results_block_with_what_its_rows_name(tmp_path):
    text = run_plot(tmp_path, True)
    assert "The CUDA-graph plan, measured" in text
    assert "x v2_device_step" in text  # the claim's baseline, named by its row
    assert "v4_graph_batch (8 per graph) 1.57x against the claimed 1.4x" in text
    assert "| 21 (24, 3) | 3 | 3 |" in text  # evaluations (launched, no-op), graph launches, host syncs
    assert "| exec_node_set_params |" in text and "389 -> 195 (and back)" in text
    assert "40.00 (host)" in text  # v1's solve runs on the host
    assert "fits 326,867" in text and "| 50,688 | no |" in text  # the cloud's size from its own row
    assert "One Newton iteration (1.17 evaluations): 27.2 us measured, 10.6 us at the limits" in text
    assert "0.490 ms measured, 0.190 ms at the limits" in text


def test_without_the_study_csv_the_block_holds_the_default_run_only(tmp_path):
    text = run_plot(tmp_path, False)
    assert "The CUDA-graph plan, measured" not in text
    assert "v4_graph_batch" in text


def test_the_study_figures_are_drawn(tmp_path):
    pytest.importorskip("matplotlib")
    run_plot(tmp_path, True)
    for name in ("graph_unroll.png", "graph_kernel_split.png"):
        assert (tmp_path / "img" / name).is_file(), name
