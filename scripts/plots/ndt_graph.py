"""ndt_graph: alignment time, time split, batch throughput, convergence traces, and the README tables."""

from __future__ import annotations

import math
import os
from collections import OrderedDict
from typing import TYPE_CHECKING

import course_csv
from course_csv import Row

from .common import device_of, fmt, ladder_plot, make_saver, timed, version_colors

if TYPE_CHECKING:
    from argparse import Namespace


def ndt_rows(rows: list[Row], row_kind: str) -> list[Row]:
    """Rows of one kind; "align" is the per-version alignment table (kind "version")."""
    want = "version" if row_kind == "align" else row_kind
    return [r for r in rows if r.get("kind") == want]


def plots(rows: list[Row], tune_rows: list[Row], out: str, args: Namespace | None = None) -> list[str]:
    trace_csv = getattr(args, "trace_csv", None)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    save = make_saver(plt, out, written)
    dev = device_of(rows)
    align = [r for r in ndt_rows(rows, "align") if timed(r)]
    cases = list(OrderedDict.fromkeys(r["params_d"]["case"] for r in align))
    if cases:  # the ladder on the first real (not simulated) case
        headline = next((c for c in cases if not c.startswith("sim")), cases[0])
        ladder_plot(
            plt,
            save,
            [
                (
                    f"one alignment, case {headline}",
                    [r for r in align if r["params_d"]["case"] == headline],
                    "alignments / s",
                    lambda r: 1e3 / r["median_ms"],
                    [],
                )
            ],
            version_colors(rows),
            "ladder.png",
            f"ndt_graph: the ladder on {dev}",
        )
    gpu = [r for r in align if "kernel_per_iteration" in r["m"]]
    if gpu:  # per-iteration time split: kernels vs the rest (launch, sync, transfers)
        case = next(
            (c for c in cases if any(r["params_d"]["case"] == c for r in gpu) and not c.startswith("sim")),
            gpu[0]["params_d"]["case"],
        )
        rs = [r for r in gpu if r["params_d"]["case"] == case]
        kern = [r["m"]["kernel_per_iteration"] for r in rs]
        other = [max(0.0, r["metric"] - k) for r, k in zip(rs, kern)]
        fig, ax = plt.subplots(figsize=(9, 4.5))
        x = range(len(rs))
        ax.bar(x, kern, label="kernels (device timer)")
        ax.bar(x, other, bottom=kern, label="launch / sync / copies")
        ax.set_xticks(list(x))
        ax.set_xticklabels([r["version"] for r in rs], rotation=20)
        ax.set_ylabel("us per Newton iteration")
        ax.set_title(f"{case}: where an iteration's time goes ({dev})")
        ax.legend()
        save(fig, "time_split.png")
    if align:  # ms per alignment, every version, every case
        versions = list(OrderedDict.fromkeys(r["version"] for r in align))
        fig, ax = plt.subplots(figsize=(10, 4.8))
        width = 0.8 / max(1, len(versions))
        for k, v in enumerate(versions):
            ys = [
                next((r["median_ms"] for r in align if r["version"] == v and r["params_d"]["case"] == c), math.nan)
                for c in cases
            ]
            ax.bar([i + k * width for i in range(len(cases))], ys, width, label=v)
        ax.set_xticks([i + width * (len(versions) - 1) / 2 for i in range(len(cases))])
        ax.set_xticklabels(cases, rotation=15)
        ax.set_yscale("log")
        ax.set_ylabel("ms per alignment (source upload included)")
        ax.set_title(f"NDT alignment time per version ({dev})")
        ax.legend(fontsize=8, ncol=2)
        save(fig, "alignment_time.png")
    batch = [r for r in ndt_rows(rows, "batch") if timed(r)]
    if batch:
        fig, ax = plt.subplots(figsize=(8, 4.5))
        xs = [int(r["params_d"]["batch"]) for r in batch]
        ax.plot(xs, [r["metric"] for r in batch], "o-")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("alignments in one graph launch")
        ax.set_ylabel("alignments per second")
        ax.set_title(f"batched NDT, {batch[0]['params_d']['case']} ({dev})")
        ax.grid(True, alpha=0.3)
        save(fig, "batch_throughput.png")
    if trace_csv and os.path.isfile(trace_csv):
        trace = course_csv.read_kind(trace_csv, "trace", ("case", "version", "iteration", "likelihood"))
        for case in OrderedDict.fromkeys(t["case"] for t in trace):
            ts = [t for t in trace if t["case"] == case]
            fig, ax = plt.subplots(figsize=(8, 4.5))
            for k, v in enumerate(OrderedDict.fromkeys(t["version"] for t in ts)):
                vs = [t for t in ts if t["version"] == v]
                ax.plot(
                    [int(t["iteration"]) for t in vs],
                    [float(t["likelihood"]) for t in vs],
                    linestyle="-" if k == 0 else "none",
                    marker="" if k == 0 else "os^vD<>p"[k % 8],
                    markersize=9 - 0.7 * k,
                    fillstyle="none",
                    lw=3,
                    alpha=0.5 if k == 0 else 1,
                    label=v,
                )
            ax.set_xlabel("Newton iteration")
            ax.set_ylabel("likelihood (score / source points)")
            ax.set_title(f"{case}: convergence, every version over the CPU reference")
            ax.legend(fontsize=8)
            save(fig, f"convergence_{case}.png")
    return written


def tables(rows: list[Row], tune_rows: list[Row]) -> str:
    dev = device_of(rows)
    sha = next((r["git_sha"] for r in rows if r["git_sha"]), "unknown")
    lines = [
        f"Measured on **{dev}** (commit {sha}). ms per alignment includes the source upload (the map is "
        "prebuilt); kernel/other split the time per Newton iteration by the kernels' device timer; "
        "'% launch floor' is two lone-launch latencies per evaluation over the measured time.",
        "",
    ]
    align = ndt_rows(rows, "align")
    for case in OrderedDict.fromkeys(r["params_d"]["case"] for r in align):
        rs = [r for r in align if r["params_d"]["case"] == case]
        lines.append(f"**{case}** ({rs[0]['n']:,} source points)")
        lines.append("")
        lines.append(
            "| version | iterations | ms / alignment | us / iteration | kernel us / it | other us / it | "
            "% launch floor | x cpu | x prev | x pcl | error vs reference | check |"
        )
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
        for r in rs:
            p = r["m"]
            err = (
                f"{p['err_ref']:.4f} cm / {p['err_ref_rotation']:.5f} deg"
                if "err_ref" in p
                else f"PCL: {p['err_pcl']:.4f} cm / {p['err_pcl_rotation']:.5f} deg"
                if "err_pcl" in p
                else f"truth: {p['err_truth']:.3f} cm"
                if "err_truth" in p
                else "-"
            )
            lines.append(
                f"| {r['version']} | {fmt(p.get('iterations'), 0)} | {fmt(r['median_ms'], 3)} | "
                f"{fmt(r['metric'], 1)} | "
                f"{fmt(p.get('kernel_per_iteration'))} | {fmt(p.get('other_per_iteration'))} | "
                f"{fmt(r['pct_of_ceiling'], 1)} | {fmt(r['speedup_vs_cpu'], 1)} | {fmt(r['speedup_vs_prev'], 2)} | "
                f"{fmt(r['speedup_vs_library'], 1)} | {err} | {course_csv.status_text(r)[:60]} |"
            )
        lines.append("")
    other = ndt_rows(rows, "map_build") + ndt_rows(rows, "filter")
    if other:
        lines.append("**map build and filter** (GPU rows: device time, the upload excluded)")
        lines.append("")
        lines.append("| case | what | version | points | ms | Mpts/s | x cpu | check |")
        lines.append("|---|---|---|---:|---:|---:|---:|---|")
        for r in other:
            lines.append(
                f"| {r['params_d']['case']} | {r['kind']} | {r['version']} | {r['n']:,} | "
                f"{fmt(r['median_ms'], 3)} | {fmt(r['metric'], 1)} | {fmt(r['speedup_vs_cpu'], 1)} | "
                f"{course_csv.status_text(r)[:50]} |"
            )
        lines.append("")
    batch = ndt_rows(rows, "batch")
    if batch:
        lines.append(f"**batched alignments** ({batch[0]['params_d']['case']}, {batch[0]['version']})")
        lines.append("")
        lines.append("| batch | ms per launch | alignments/s | check |")
        lines.append("|---:|---:|---:|---|")
        for r in batch:
            lines.append(
                f"| {r['params_d']['batch']} | {fmt(r['median_ms'], 3)} | {fmt(r['metric'], 0)} | "
                f"{course_csv.status_text(r)[:50]} |"
            )
        lines.append("")
    for r in ndt_rows(rows, "hypotheses"):
        p, mm = r["params_d"], r["m"]
        lines.append(
            f"**multi-hypothesis search** ({p['case']}, {p['hypotheses']} guesses around one 2 m / 30 deg off "
            f"PCL's answer): a single alignment ends {mm.get('single_err', math.nan):.2f} cm / "
            f"{mm.get('single_err_rotation', math.nan):.3f} deg off, the best hypothesis "
            f"{mm.get('best_err', math.nan):.3f} cm / {mm.get('best_err_rotation', math.nan):.4f} deg; "
            f"{fmt(r['median_ms'], 1)} ms "
            f"for all ({fmt(r['metric'], 0)} alignments/s), {course_csv.status_text(r)[:40]}."
        )
        lines.append("")
    return "\n".join(lines)
