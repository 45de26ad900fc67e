"""nbody: interactions per second against the FMA peak and issue ceiling, time per step, the batch,
multi-GPU scaling, energy drift, v8 shapes, and the README tables."""

from __future__ import annotations

import math
from collections import OrderedDict
from types import ModuleType
from typing import TYPE_CHECKING

import course_csv
from course_csv import Row

from .common import (
    STEP_COLORS,
    Saver,
    device_of,
    fmt,
    ladder_plot,
    make_saver,
    meta,
    size_label,
    timed,
    version_colors,
    version_lines,
)

if TYPE_CHECKING:
    from argparse import Namespace

NB_KINDS = {"version": "step", "batch_file": "batch"}


def nb_kind(r: Row) -> str:
    return NB_KINDS.get(r.get("kind"), r.get("kind"))


def nbody_ceilings(rows: list[Row], tune_rows: list[Row]) -> tuple[float, float]:
    """FP32 FMA peak and issue ceiling in G interactions/s, from the run's meta record."""
    m = meta(rows) or meta(tune_rows)
    fma = m["fp32_fma_peak"] / m["flops_per_interaction"] if "fp32_fma_peak" in m else None
    return fma, m.get("issue_ceiling")


def _scaling_plot(plt: ModuleType, save: Saver, device: str, rows: list[Row]) -> None:
    """Speed-up over one GPU against the GPU count, per N, with the ideal line."""
    scaling = [r for r in rows if nb_kind(r) == "scaling" and timed(r)]
    if len({r["params_d"]["gpus"] for r in scaling}) > 1:  # one GPU alone is no scaling plot
        # speed-up over one GPU, from zero, whole GPUs on the x axis, and the ideal (linear) line
        fig, ax = plt.subplots(figsize=(7, 4.5))
        gpus = sorted({int(r["params_d"]["gpus"]) for r in scaling})
        ax.plot([0, max(gpus)], [0, max(gpus)], color="#999999", linestyle="--", label="ideal: x GPUs")
        for k, n in enumerate(sorted({r["n"] for r in scaling})):
            rs = sorted([r for r in scaling if r["n"] == n], key=lambda r: int(r["params_d"]["gpus"]))
            one = next((r["metric"] for r in rs if int(r["params_d"]["gpus"]) == 1), None)
            if not one:
                continue
            ax.plot(
                [int(r["params_d"]["gpus"]) for r in rs],
                [r["metric"] / one for r in rs],
                marker="o",
                color=STEP_COLORS[k % len(STEP_COLORS)],
                label=f"N = {size_label(n)} ({one:,.0f} G inter./s on 1 GPU)",
            )
        ax.set_xticks(list(range(0, max(gpus) + 1)))
        ax.set_xlim(0, max(gpus) + 0.3)
        ax.set_ylim(0, max(gpus) + 0.3)
        ax.set_xlabel("GPUs")
        ax.set_ylabel("speed-up over 1 GPU (same N)")
        ax.set_title(f"multi-GPU scaling (NCCL all-gather per step), {device}")
        ax.legend(fontsize=8, loc="upper left")
        ax.grid(True, alpha=0.3)
        save(fig, "multi_gpu_scaling.png")


def _batch_plot(plt: ModuleType, save: Saver, device: str, rows: list[Row]) -> None:
    """The batch pipelines: each snapshot's time, next to the original project's."""
    files = [r for r in rows if nb_kind(r) == "batch" and "file" in r["params_d"] and timed(r)]
    if files:
        fig, ax = plt.subplots(figsize=(9, 4.8))
        for pipe in OrderedDict.fromkeys(r["params_d"]["pipeline"] for r in files):
            rs = sorted(
                [r for r in files if r["params_d"]["pipeline"] == pipe], key=lambda r: int(r["params_d"]["file"])
            )
            ax.plot(
                [int(r["params_d"]["file"]) for r in rs],
                [r["median_ms"] for r in rs],
                marker="o",
                label=f"{pipe} ({rs[0]['params_d'].get('gpus', '1')} GPU)",
            )
        ax.axhline(433, color="#999999", linestyle=":", label="original project, GTX 1650: ~433 ms/file")
        ax.axhline(83, color="#666666", linestyle="--", label="original project, RTX 4060 Ti: ~83 ms/file")
        ax.set_yscale("log")
        ax.set_xlabel("snapshot")
        ax.set_ylabel("ms (read + compute + write)")
        ax.set_title(f"19-snapshot batch, {files[0]['n']} bodies x {files[0]['params_d'].get('steps')} steps, {device}")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        save(fig, "batch_per_snapshot.png")


def _table_files(rows: list[Row]) -> OrderedDict:
    """{version: its table_file rows by file} of the versions that passed the table."""
    out: OrderedDict = OrderedDict()
    for r in rows:
        if r.get("kind") == "table_file" and timed(r):
            out.setdefault(r["version"], []).append(r)
    for v in out:
        out[v].sort(key=lambda r: int(r["params_d"]["file"]))
    return out


def _table_plot(plt: ModuleType, save: Saver, device: str, rows: list[Row], colors: dict[str, str]) -> None:
    """The term project's table as a plot: each version's time per snapshot against its body count,
    measured points filled, extrapolated ones hollow on a dashed line."""
    per = _table_files(rows)
    if not per:
        return
    fig, ax = plt.subplots(figsize=(9, 5))
    for v, rs in per.items():
        c = colors.get(v)
        ns, ms = [r["n"] for r in rs], [r["median_ms"] for r in rs]
        extrapolated = [r["params_d"].get("measured") == "0" for r in rs]
        ax.plot(ns, ms, color=c, linestyle="--" if any(extrapolated) else "-", linewidth=1, label=v)
        ax.scatter(
            [n for n, e in zip(ns, extrapolated) if not e],
            [m for m, e in zip(ms, extrapolated) if not e],
            color=c,
            s=14,
        )
        if any(extrapolated):
            ax.scatter(
                [n for n, e in zip(ns, extrapolated) if e],
                [m for m, e in zip(ms, extrapolated) if e],
                facecolors="none",
                edgecolors=c,
                s=14,
            )
    first = next(iter(per.values()))[0]["params_d"]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("bodies in the snapshot")
    ax.set_ylabel("ms per snapshot (read + integrate + write)")
    ax.set_title(
        f"every version over {first.get('files')} snapshots x {first.get('steps')} steps, {device} "
        "(hollow: extrapolated)"
    )
    ax.legend(fontsize=8, ncol=2)
    ax.grid(True, which="both", alpha=0.3)
    save(fig, "batch_table.png")


def _ladder(
    plt: ModuleType, save: Saver, rows: list[Row], step: list[Row], colors: dict[str, str], issue: float
) -> None:
    """The ladder at the headline size: the largest N the library baseline (all CPU cores) ran at."""
    lib_sizes = [r["n"] for r in step if r["role"] == "library"]
    n = max(lib_sizes) if lib_sizes else max(r["n"] for r in step)
    extra = (
        [
            (
                issue,
                f"issue ceiling of the best kernel ({meta(rows).get('instructions_per_interaction', 0):g} "
                f"instr./interaction): {issue:.0f}",
            )
        ]
        if issue
        else []
    )
    ladder_plot(
        plt,
        save,
        [
            (
                f"one step, N = {size_label(n)}",
                [r for r in step if r["n"] == n],
                "G interactions / s",
                lambda r: r["metric"],
                extra,
            )
        ],
        colors,
        "ladder.png",
        f"nbody: the ladder on {device_of(rows)}",
    )


def _interactions_plot(
    plt: ModuleType, save: Saver, rows: list[Row], tune_rows: list[Row], step: list[Row], colors: dict[str, str]
) -> None:
    """Interactions per second at the two largest sizes, under the FMA peak and the issue ceiling."""
    fma, issue = nbody_ceilings(rows, tune_rows)
    sizes = sorted({r["n"] for r in step})
    fig, axes = plt.subplots(1, min(2, len(sizes)), figsize=(12, 5), squeeze=False)
    for ax, n in zip(axes[0], sizes[-2:]):
        rs = [r for r in step if r["n"] == n]
        ax.bar([r["version"] for r in rs], [r["metric"] for r in rs], color=[colors.get(r["version"]) for r in rs])
        if fma:
            ax.axhline(fma, color="black", linestyle=":", label=f"FP32 FMA peak / 20 FLOP = {fma:.0f}")
        if issue:
            instructions = meta(rows or tune_rows).get("instructions_per_interaction", 0)
            ax.axhline(
                issue,
                color="#c44e52",
                linestyle="--",
                label=f"issue ceiling ({instructions:g} instr.) = {issue:.0f}",
            )
        ax.set_ylabel("G interactions / s")
        ax.set_title(f"n = {size_label(n)}")
        ax.legend(fontsize=8)
        plt.setp(ax.get_xticklabels(), rotation=30, ha="right", fontsize=8)
    fig.suptitle(f"nbody: interactions per second on {device_of(rows)}")
    save(fig, "interactions.png")


def _time_vs_n_plot(plt: ModuleType, save: Saver, device: str, step: list[Row], colors: dict[str, str]) -> None:
    """Time per step against N, one line per version."""
    fig, ax = plt.subplots(figsize=(8, 5.5))
    by_version = OrderedDict()
    for r in step:
        by_version.setdefault(r["version"], []).append(r)
    version_lines(ax, by_version, colors, lambda r: r["median_ms"])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("N (bodies)")
    ax.set_ylabel("ms per step")
    ax.set_title(f"nbody: time per step vs N on {device}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, "time_vs_n.png")


def _drift_plot(plt: ModuleType, save: Saver, rows: list[Row]) -> None:
    """The energy drift of each integrator over the steps."""
    drift = [r for r in rows if nb_kind(r) == "drift" and course_csv.is_pass(r)]
    if not drift:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for integ in OrderedDict.fromkeys(r["params_d"]["integrator"] for r in drift):
        rs = sorted(
            [r for r in drift if r["params_d"]["integrator"] == integ], key=lambda r: int(r["params_d"]["step"])
        )
        ax.plot([int(r["params_d"]["step"]) for r in rs], [r["metric"] for r in rs], marker="o", ms=3, label=integ)
    ax.set_yscale("log")
    ax.set_xlabel(f"steps (dt = {meta(rows).get('dt', math.nan):g})")
    ax.set_ylabel("|E - E0| / |E0|")
    ax.set_title(f"energy drift per integrator, N = {drift[0]['n']} Plummer sphere")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    save(fig, "energy_drift.png")


def _tuning_plot(plt: ModuleType, save: Saver, tune_rows: list[Row], issue: float) -> None:
    """The v8 shapes the tuner measured, per N."""
    tune = [r for r in tune_rows if timed(r)]
    if not tune:
        return
    fig, ax = plt.subplots(figsize=(8, 4.5))
    sizes = sorted({r["n"] for r in tune})
    shapes = list(OrderedDict.fromkeys(r["params_d"]["shape"] for r in tune))
    width = 0.8 / len(sizes)
    for k, n in enumerate(sizes):
        vals = [next((r["metric"] for r in tune if r["n"] == n and r["params_d"]["shape"] == sh), 0) for sh in shapes]
        ax.bar([i + k * width for i in range(len(shapes))], vals, width, label=f"N = {size_label(n)}")
    if issue:
        ax.axhline(issue, color="#c44e52", linestyle="--", label=f"issue ceiling {issue:.0f}")
    ax.set_xticks([i + width * (len(sizes) - 1) / 2 for i in range(len(shapes))])
    ax.set_xticklabels(shapes, rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("G interactions / s")
    ax.set_title("v8 shapes: threads x bodies per thread [min resident blocks]")
    ax.legend(fontsize=8)
    save(fig, "tuning.png")


def plots(rows: list[Row], tune_rows: list[Row], out: str, args: Namespace | None = None) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    save = make_saver(plt, out, written)
    device = device_of(rows)
    _, issue = nbody_ceilings(rows, tune_rows)
    step = [r for r in rows if nb_kind(r) == "step" and timed(r)]
    colors = version_colors(rows)
    if step:
        _ladder(plt, save, rows, step, colors, issue)
        _interactions_plot(plt, save, rows, tune_rows, step, colors)
        _time_vs_n_plot(plt, save, device, step, colors)
    _batch_plot(plt, save, device, rows)
    _table_plot(plt, save, device, rows, colors)
    _scaling_plot(plt, save, device, rows)
    _drift_plot(plt, save, rows)
    _tuning_plot(plt, save, tune_rows, issue)
    return written


def _step_tables(rows: list[Row]) -> list[str]:
    """One table per size of the three largest: every version's step."""
    lines = []
    step = [r for r in rows if nb_kind(r) == "step"]
    for n in sorted({r["n"] for r in step})[-3:]:
        lines.append(
            f"**one symplectic step, N = {size_label(n)}** (x prev: over the row above; x OpenMP: over all "
            "cores of the host CPU)"
        )
        lines.append("")
        lines.append(
            "| version | idea | ms / step | G inter./s | GFLOP/s (20/inter.) | % FMA peak | x prev | x OpenMP | "
            "predicted ms | check |"
        )
        lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in step:
            if r["n"] != n:
                continue
            gflops = r["metric"] * 20 if not math.isnan(r["metric"]) else math.nan
            lines.append(
                f"| `{r['version']}` | {r['idea']} | {fmt(r['median_ms'], 3)} | {fmt(r['metric'], 1)} | "
                f"{fmt(gflops, 0)} | {fmt(r['pct_of_ceiling'], 1)} | {fmt(r['speedup_vs_prev'])} | "
                f"{fmt(r['speedup_vs_library'], 1)} | {fmt(r['predicted_ms'], 3)} | {course_csv.status_text(r)} |"
            )
        lines.append("")
    return lines


def _version_table(rows: list[Row]) -> list[str]:
    """The term project's headline table: every version over the snapshot set, per file and overall,
    and the speed-up over the sequential code, with what was measured and what extrapolated said."""
    heads = [r for r in rows if r.get("kind") == "table"]
    per = _table_files(rows)
    if not heads:
        return []
    p = heads[0]["params_d"]
    ns = sorted({r["n"] for rs in per.values() for r in rs})
    seq = next((r for r in heads if r["role"] == "reference" and timed(r)), None)
    seq_total = seq["m"].get("total") if seq else None
    lines = [
        f"**every version over {p.get('files')} snapshots of "
        + (f"{ns[0]:,} to {ns[-1]:,} bodies" if ns else "different sizes")
        + f" x {p.get('steps')} steps**, each file end to end (read CSV, upload, integrate, download, write CSV; "
        "the original project's table). The sequential CPU is measured on the smallest file and extrapolated "
        "to the others (its reading and writing x n, its integration x n^2); every other row is measured on "
        "every file.",
        "",
        "| version | files measured | ms per file, smallest | ms per file, largest | mean ms per file | "
        "whole batch, ms | x sequential CPU | check |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for h in heads:
        rs = per.get(h["version"], [])
        m = h.get("m", {})
        total = m.get("total")
        measured = int(m.get("files_measured", 0)) if rs else 0
        lines.append(
            f"| `{h['version']}` | {measured} of {len(rs) or p.get('files')} | "
            f"{fmt(rs[0]['median_ms'], 2) if rs else '-'} | {fmt(rs[-1]['median_ms'], 2) if rs else '-'} | "
            f"{fmt(m.get('mean_per_file'), 2)} | {fmt(total, 1)} | "
            f"{fmt(seq_total / total, 1) if seq_total and total else '-'} | {course_csv.status_text(h)} |"
        )
    lines.append("")
    return lines


def _batch_table(rows: list[Row]) -> list[str]:
    """The original project's workload, end to end, next to its published times."""
    lines = []
    batch = [r for r in rows if nb_kind(r) == "batch" and "file" not in r["params_d"]]
    if batch:
        b0 = batch[0]["params_d"]
        lines.append(
            f"**the original project's workload: {b0.get('files')} snapshots x {batch[0]['n']} bodies x "
            f"{b0.get('steps')} steps, "
            "end to end (read CSV, upload, integrate, download, write CSV)**"
        )
        lines.append("")
        lines.append("| pipeline | GPUs | ms per snapshot | G inter./s overall | check |")
        lines.append("|---|---:|---:|---:|---|")
        for r in batch:
            lines.append(
                f"| {r['params_d'].get('pipeline', '-')} | {r['params_d'].get('gpus', '-')} | "
                f"{fmt(r['median_ms'], 1)} | "
                f"{fmt(r['metric'], 0)} | {course_csv.status_text(r)} |"
            )
        lines.append("| original project: GTX 1650 | 1 | ~433 | | |")
        lines.append("| original project: RTX 4060 Ti | 1 | ~83 | | |")
        lines.append("")
    return lines


def _scaling_table(rows: list[Row]) -> list[str]:
    """Multi-GPU scaling: each N on each GPU count, against one GPU."""
    lines = []
    scaling = [r for r in rows if nb_kind(r) == "scaling"]
    if scaling:
        lines.append("**multi-GPU scaling** (one symplectic step; x 1 GPU: over the same N on one GPU)")
        lines.append("")
        lines.append("| N | GPUs | ms / step | G inter./s | x 1 GPU | check |")
        lines.append("|---:|---:|---:|---:|---:|---|")
        for r in scaling:
            one = next((o for o in scaling if o["n"] == r["n"] and o["params_d"].get("gpus") == "1" and timed(o)), None)
            x_one = one["median_ms"] / r["median_ms"] if one and timed(r) else math.nan
            lines.append(
                f"| {size_label(r['n'])} | {r['params_d'].get('gpus', '-')} | {fmt(r['median_ms'], 2)} | "
                f"{fmt(r['metric'], 0)} | "
                f"{fmt(x_one)} | {course_csv.status_text(r)} |"
            )
        lines.append("")
    return lines


def _drift_line(rows: list[Row]) -> list[str]:
    """The energy drift of each integrator after the last step."""
    lines = []
    drift = [r for r in rows if nb_kind(r) == "drift" and course_csv.is_pass(r)]
    if drift:
        last = max(int(r["params_d"]["step"]) for r in drift)
        lines.append(
            f"**energy drift |E - E0| / |E0| after {last} steps, N = {drift[0]['n']}, dt = "
            f"{meta(rows).get('dt', math.nan):g}**: "
            + ", ".join(
                f"{r['params_d']['integrator']} {r['metric']:.2e}" for r in drift if int(r["params_d"]["step"]) == last
            )
        )
        lines.append("")
    return lines


def _tuning_table(tune_rows: list[Row]) -> list[str]:
    """The v8 shapes the tuner measured."""
    lines = []
    tune = [r for r in tune_rows if timed(r)]
    if tune:
        lines.append("**v8 shapes** (`nbody --mode tune`; % of the issue ceiling)")
        lines.append("")
        lines.append("| shape | N | ms / step | G inter./s | % issue ceiling |")
        lines.append("|---|---:|---:|---:|---:|")
        for r in tune:
            lines.append(
                f"| {r['params_d']['shape']} | {size_label(r['n'])} | {fmt(r['median_ms'], 3)} | "
                f"{fmt(r['metric'], 0)} | "
                f"{fmt(r['pct_of_ceiling'], 1)} |"
            )
        lines.append("")
    return lines


def tables(rows: list[Row], tune_rows: list[Row]) -> str:
    lines = []
    device = device_of(rows)
    sha = next((r["git_sha"] for r in rows), "unknown")
    fma, issue = nbody_ceilings(rows, tune_rows)
    lines.append(
        f"Device: **{device}**, CUDA {rows[0]['cuda']}, commit `{sha}`."
        + (f" Measured FP32 FMA peak / 20 FLOP = **{fma:.0f} G interactions/s**;" if fma else "")
        + (
            f" issue ceiling at {meta(rows or tune_rows).get('instructions_per_interaction', 0):g} instructions "
            f"per interaction = **{issue:.0f} G interactions/s**."
            if issue
            else ""
        )
    )
    lines.append("")
    lines += _step_tables(rows)
    lines += _batch_table(rows)
    lines += _version_table(rows)
    lines += _scaling_table(rows)
    lines += _drift_line(rows)
    lines += _tuning_table(tune_rows)
    return "\n".join(lines)
