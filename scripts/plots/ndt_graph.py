"""ndt_graph: alignment time, time split, batch throughput, convergence traces, the --graph-study figures, and the
README tables."""

from __future__ import annotations

import math
import os
from collections import OrderedDict
from typing import TYPE_CHECKING

import course_csv
from course_csv import Row

from .common import STEP_COLORS, Saver, device_of, fmt, ladder_plot, make_saver, meta, timed, version_colors

if TYPE_CHECKING:
    from argparse import Namespace
    from types import ModuleType


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
    study_plots(plt, save, rows, tune_rows)
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
    lines += study_tables(rows, tune_rows)
    return "\n".join(lines)


# ---- ndt_graph --graph-study: what the CUDA-graph plan is about, measured. Its CSV comes to
# plot.py as --tune-csv (or as --csv); the tables join the README's results block, the plots
# images/ndt_graph. Every number comes from the rows: names, counts, limits and the plan's claim. ----

STUDY_KINDS = ("unroll", "unroll_baseline", "graph_build", "graph_update", "kernel_split", "cost_model", "coop")


def study_rows(rows: list[Row], tune_rows: list[Row]) -> list[Row]:
    """The study's rows from either file (the study's CSV passed as --tune-csv or as --csv)."""
    return [r for r in rows + tune_rows if r.get("kind") in (*STUDY_KINDS, "limit", "coop_case")]


def _study_case(study: list[Row]) -> str | None:
    """The case the single-case parts ran on (the kernel split's), else the first swept case."""
    for kind in ("kernel_split", "unroll"):
        r = next((r for r in study if r["kind"] == kind), None)
        if r:
            return r["params_d"]["case"]
    return None


def _speedup(x: float | None) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:.2f}x"


def _unroll_table(study: list[Row], case: str) -> list[str]:
    rs = [r for r in study if r["kind"] in ("unroll_baseline", "unroll") and r["params_d"]["case"] == case]
    if not rs:
        return []
    base = next((r["version"] for r in rs if r["kind"] == "unroll_baseline"), "the baseline")
    lines = [
        f"**{case}** ({rs[0]['n']:,} source points)",
        "",
        "| version | evaluations per graph | ms / alignment | evaluations (launched, no-op) | graph launches "
        f"| host syncs | kernel us / evaluation | other us / evaluation | x 1 per graph | x {base} | claimed | check |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rs:
        m = r["m"]
        claim = f"{m['claimed_speedup']:.1f}x" if "claimed_speedup" in m else ""
        lines.append(
            f"| {r['version']} | {r['params_d'].get('unroll', 'host sync each')} | {fmt(r['median_ms'], 3)} | "
            f"{fmt(m.get('evaluations'), 0)} ({fmt(m.get('evaluations_launched'), 0)}, "
            f"{fmt(m.get('noop_evaluations'), 0)}) | {fmt(m.get('graph_launches'), 0)} | "
            f"{fmt(m.get('host_syncs'), 0)} | "
            f"{fmt(m.get('kernel_per_evaluation'), 2)} | {fmt(m.get('other_per_evaluation'), 2)} | "
            f"{_speedup(m.get('x_unroll1'))} | {_speedup(m.get('x_baseline'))} | {claim} | "
            f"{course_csv.status_text(r)[:50]} |"
        )
    lines.append("")
    return lines + _fastest_line(rs)


def _fastest_line(rs: list[Row]) -> list[str]:
    """Each graph version's fastest count on the case."""
    best = []
    for v in OrderedDict.fromkeys(r["version"] for r in rs if r["kind"] == "unroll"):
        timed_rows = [r for r in rs if r["version"] == v and r["kind"] == "unroll" and timed(r)]
        if timed_rows:
            r = min(timed_rows, key=lambda r: r["median_ms"])
            best.append(f"{v} at {r['params_d']['unroll']} per graph ({fmt(r['median_ms'], 3)} ms)")
    return ["Fastest: " + ", ".join(best) + ".", ""] if best else []


def _claim_line(study: list[Row], own: float | None) -> list[str]:
    """The plan's claim next to its measurement: the claiming version at its own count, per case."""
    if own is None:
        return []
    out = []
    for r in study:
        m = r["m"]
        if r["kind"] == "unroll" and "claimed_speedup" in m and int(r["params_d"]["unroll"]) == int(own):
            out.append(
                f"{r['params_d']['case']}: {r['version']} ({int(own)} per graph) {_speedup(m.get('x_baseline'))} "
                f"against the claimed {m['claimed_speedup']:.1f}x"
            )
    return ["The plan's claim, measured: " + "; ".join(out) + ".", ""] if out else []


def _graph_build_table(study: list[Row]) -> list[str]:
    rs = [r for r in study if r["kind"] in ("graph_build", "graph_update")]
    if not rs:
        return []
    r0 = rs[0]
    lines = [
        f"**{r0['version']}'s graph: built and changed for another scan** ({r0['params_d']['case']}, "
        f"{fmt(r0['m'].get('nodes'), 0)} nodes; host time, median of the samples)",
        "",
        "| method | what | us | build us | instantiate us | evaluation blocks | samples | check |",
        "|---|---|---:|---:|---:|---|---:|---|",
    ]
    for r in rs:
        m = r["m"]
        blocks = (
            f"{fmt(m.get('blocks'), 0)} -> {fmt(m.get('blocks_other'), 0)} (and back)"
            if "blocks_other" in m
            else fmt(m.get("blocks"), 0)
        )
        lines.append(
            f"| {r['params_d']['method']} | {r['idea']} | {fmt(r['metric'], 1)} | {fmt(m.get('build_us'), 1)} | "
            f"{fmt(m.get('instantiate_us'), 1)} | {blocks} | {r['samples']} | {course_csv.status_text(r)[:50]} |"
        )
    lines.append("")
    return lines


def _split_cell(m: dict, key: str) -> str:
    return fmt(m.get(key), 2)


def _kernel_split_table(study: list[Row]) -> list[str]:
    rs = [r for r in study if r["kind"] == "kernel_split"]
    if not rs:
        return []
    lines = [
        f"**where an evaluation's time goes** ({rs[0]['params_d']['case']}; us per evaluation, medians over the "
        "timed runs; device clock: the evaluation kernels, the step's reduction, solve and state copies)",
        "",
        "| version | evaluations | total | kernels | evaluation | reduction | solve | bookkeeping "
        "| outside the kernels | check |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rs:
        m = r["m"]
        solve = f"{fmt(m['host_solve_us'], 2)} (host)" if "host_solve_us" in m else _split_cell(m, "solve_us")
        cells = [_split_cell(m, k) for k in ("kernel_us", "eval_us", "reduce_us")]
        lines.append(
            f"| {r['version']} | {fmt(m.get('evaluations'), 0)} | {fmt(r['metric'], 2)} | {' | '.join(cells)} | "
            f"{solve} | {_split_cell(m, 'bookkeeping_us')} | {_split_cell(m, 'outside_us')} | "
            f"{course_csv.status_text(r)[:40]} |"
        )
    lines.append("")
    return lines


def _cost_model_table(study: list[Row]) -> list[str]:
    rs = [r for r in study if r["kind"] == "cost_model"]
    if not rs:
        return []
    total = next((r for r in rs if r["params_d"]["part"] == "total"), None)
    lines = [
        f"**the cost model of {rs[0]['version']}'s evaluation** ({rs[0]['params_d']['case']}; each part next to "
        "its limit on this GPU)",
        "",
        "| part | measured us / evaluation | limit us | the limit |",
        "|---|---:|---:|---|",
    ]
    for r in rs:
        lines.append(
            f"| {r['params_d']['part']} | {fmt(r['m'].get('measured_us'), 2)} | {fmt(r['m'].get('limit_us'), 2)} | "
            f"{r['idea']} |"
        )
    lines.append("")
    limits = [r for r in study if r["kind"] == "limit" and course_csv.is_pass(r)]
    if limits:
        probes = "; ".join(f"{r['version']} {fmt(r['metric'], 3)} {r['metric_unit']}" for r in limits)
        lines += [f"Measured limits: {probes}.", ""]
    if total:
        m = total["m"]
        lines += [
            f"One Newton iteration ({fmt(m.get('evaluations', math.nan) / m.get('iterations', math.nan), 2)} "
            f"evaluations): {fmt(m.get('iteration_us'), 1)} us measured, {fmt(m.get('iteration_limit_us'), 1)} us at "
            f"the limits of its parts; one alignment ({fmt(m.get('evaluations'), 0)} evaluations, "
            f"{fmt(m.get('iterations'), 0)} iterations): {fmt(m.get('alignment_ms'), 3)} ms measured, "
            f"{fmt(m.get('alignment_limit_ms'), 3)} ms at the limits (transfers not in the model).",
            "",
        ]
    return lines


def _coop_table(study: list[Row]) -> list[str]:
    rs = [r for r in study if r["kind"] == "coop"]
    if not rs:
        return []
    cloud = next((r["n"] for r in study if r["kind"] == "coop_case"), None)
    fits = f" | fits {cloud:,}" if cloud else ""
    lines = [
        "**cooperative grids**: co-resident blocks (blocks per SM x SMs) and the points they cover at one point per "
        "thread; measured on this GPU (the occupancy query), computed for the others from their published limits "
        "(CUDA's occupancy calculator, this build's register count): not measured",
        "",
        f"| GPU | kernel | threads / block | blocks / SM | SMs | co-resident blocks | points{fits} | source | check |",
        "|---|---|---:|---:|---:|---:|---:|" + ("---|" if cloud else "") + "---|---|",
    ]
    for r in rs:
        p, m = r["params_d"], r["m"]
        fit = ("yes" if r["n"] >= cloud else "no") if cloud else None
        lines.append(
            f"| {p.get('gpu', '-')} | {r['version']} | {p.get('threads', '-')} | {fmt(m.get('blocks_per_sm'), 0)} | "
            f"{fmt(m.get('sms'), 0)} | {fmt(m.get('coresident_blocks'), 0)} | {r['n']:,}"
            + (f" | {fit}" if fit else "")
            + f" | {p.get('source', '-')} | {course_csv.status_text(r)[:50]} |"
        )
    lines.append("")
    return lines


def _coop_case_table(study: list[Row]) -> list[str]:
    rs = [r for r in study if r["kind"] == "coop_case"]
    if not rs:
        return []
    lines = [
        f"**the plan's cloud** ({rs[0]['params_d']['case']}, {rs[0]['n']:,} points, simulated)",
        "",
        "| version | iterations | ms / alignment | co-resident blocks | grid | chunk rounds per block | check |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rs:
        m = r["m"]
        lines.append(
            f"| {r['version']} | {fmt(m.get('iterations'), 0)} | {fmt(r['median_ms'], 3)} | "
            f"{fmt(m.get('coresident_blocks'), 0)} | {fmt(m.get('grid_blocks'), 0)} | "
            f"{fmt(m.get('chunk_rounds_per_block'), 0)} | {course_csv.status_text(r)[:50]} |"
        )
    lines.append("")
    return lines


def study_tables(rows: list[Row], tune_rows: list[Row]) -> list[str]:
    """The study's tables, or nothing when neither file holds its rows."""
    study = study_rows(rows, tune_rows)
    if not study:
        return []
    m = meta(tune_rows) or meta(rows)
    lines = [
        f"**The CUDA-graph plan, measured** (`ndt_graph --graph-study`, {device_of(study)}, commit "
        f"{next((r['git_sha'] for r in study if r['git_sha']), 'unknown')})",
        "",
        "*Evaluations per graph launch* (the graph versions at each count, and the host-synced version the plan's "
        "claim is measured against; an evaluation after convergence returns at once: a no-op)",
        "",
    ]
    swept = [r for r in study if r["kind"] in ("unroll", "unroll_baseline")]
    for case in OrderedDict.fromkeys(r["params_d"]["case"] for r in swept):
        lines += _unroll_table(study, case)
    lines += _claim_line(study, m.get("graph_batch_unrolled"))
    for part in (_graph_build_table, _kernel_split_table, _cost_model_table, _coop_table, _coop_case_table):
        lines += part(study)
    return lines


def _unroll_plot(plt: ModuleType, save: Saver, study: list[Row], colors: dict[str, str], dev: str) -> None:
    """ms per alignment against the evaluations per graph launch, one line per version, on the study's case."""
    case = _study_case(study)
    rs = [r for r in study if r["kind"] == "unroll" and r["params_d"]["case"] == case and timed(r)]
    if not rs:
        return
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.6))
    for v in OrderedDict.fromkeys(r["version"] for r in rs):
        vs = sorted((r for r in rs if r["version"] == v), key=lambda r: int(r["params_d"]["unroll"]))
        ks = [int(r["params_d"]["unroll"]) for r in vs]
        ax.plot(ks, [r["median_ms"] for r in vs], "o-", color=colors.get(v), label=v)
        ax2.plot(ks, [r["m"].get("other_per_evaluation", math.nan) for r in vs], "o-", color=colors.get(v), label=v)
    for r in study:
        if r["kind"] == "unroll_baseline" and r["params_d"]["case"] == case and timed(r):
            ax.axhline(r["median_ms"], color="#999999", linestyle="--", label=f"{r['version']} (host sync each)")
            ax2.axhline(r["m"].get("other_per_evaluation", math.nan), color="#999999", linestyle="--")
    for a, label in ((ax, "ms per alignment"), (ax2, "us per evaluation outside the kernels")):
        a.set_xscale("log", base=2)
        a.set_xlabel("evaluations per graph launch")
        a.set_ylabel(label)
        a.set_ylim(bottom=0)
        a.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle(f"{case}: evaluations per graph launch ({dev})")
    save(fig, "graph_unroll.png")


def _split_plot(plt: ModuleType, save: Saver, study: list[Row], dev: str) -> None:
    """us per evaluation per version, stacked: the kernels' parts and the time outside them."""
    rs = [r for r in study if r["kind"] == "kernel_split" and timed(r) and "eval_us" in r["m"]]
    rs = [r for r in rs if not math.isnan(r["m"]["eval_us"])]
    if not rs:
        return
    parts = [
        ("eval_us", "evaluation"),
        ("reduce_us", "reduction"),
        ("solve_us", "solve"),
        ("bookkeeping_us", "bookkeeping"),
        ("outside_us", "outside the kernels"),
    ]
    fig, ax = plt.subplots(figsize=(9, 4.6))
    bottom = [0.0] * len(rs)
    for k, (key, label) in enumerate(parts):
        ys = [max(0.0, r["m"].get(key, 0.0)) for r in rs]
        ax.bar(range(len(rs)), ys, bottom=bottom, label=label, color=STEP_COLORS[k])
        bottom = [b + y for b, y in zip(bottom, ys)]
    ax.set_xticks(range(len(rs)))
    ax.set_xticklabels([r["version"] for r in rs], rotation=20)
    ax.set_ylabel("us per evaluation")
    ax.set_title(f"{rs[0]['params_d']['case']}: where an evaluation's time goes ({dev})")
    ax.legend(fontsize=8)
    save(fig, "graph_kernel_split.png")


def study_plots(plt: ModuleType, save: Saver, rows: list[Row], tune_rows: list[Row]) -> None:
    study = study_rows(rows, tune_rows)
    if not study:
        return
    dev = device_of(study)
    _unroll_plot(plt, save, study, version_colors(rows + tune_rows), dev)
    _split_plot(plt, save, study, dev)
