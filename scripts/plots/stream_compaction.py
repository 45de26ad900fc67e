"""stream_compaction: time, bandwidth and speed-up per operation, the block sweep, the compaction
stages, the tuning candidates, and the README tables."""

from __future__ import annotations

import math
from collections import OrderedDict, defaultdict
from types import ModuleType
from typing import TYPE_CHECKING, NamedTuple

import course_csv
from course_csv import Row

from .common import (
    LIBRARY_COLOR,
    Saver,
    copy_bandwidth,
    device_of,
    fmt,
    ladder_plot,
    make_saver,
    size_label,
    timed,
    version_colors,
    version_lines,
)

if TYPE_CHECKING:
    from argparse import Namespace


SC_KINDS = {"version": "main", "stage": "stage", "end_to_end": "e2e", "block_sweep": "sweep", "tune": "tune"}


def kind(r: Row) -> str:
    return SC_KINDS.get(r.get("kind"), r.get("kind"))


class Figures(NamedTuple):
    plt: ModuleType
    save: Saver
    colors: dict[str, str]
    device: str
    copy_gbs: float


def series(op_rows: list[Row], pow2: bool = True) -> OrderedDict:
    s = OrderedDict()
    for r in op_rows:
        if pow2 and (r["n"] & (r["n"] - 1)):
            continue
        s.setdefault(r["version"], []).append(r)
    return s


def _op_plots(c: Figures, op: str, op_rows: list[Row]) -> None:
    """Time against n, and effective bandwidth for scan and compaction."""
    plt, save, colors, device = c.plt, c.save, c.colors, c.device
    copy_gbs = c.copy_gbs
    fig, ax = plt.subplots(figsize=(8, 5.5))
    version_lines(ax, series(op_rows), colors, lambda r: r["median_ms"])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n (elements, powers of two)")
    ax.set_ylabel("median time (ms)")
    ax.set_title(f"{op}: time vs n on {device}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, f"{op}_runtime.png")

    if op in ("scan", "compact"):
        fig, ax = plt.subplots(figsize=(8, 5.5))
        mine = {name: [r for r in rs if r["params_d"].get("op") == op] for name, rs in series(op_rows).items()}
        version_lines(ax, mine, colors, lambda r: r["metric"])
        if copy_gbs:
            ax.axhline(copy_gbs, color="black", linestyle=":", label=f"measured copy {copy_gbs:.0f} GB/s")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("n (elements, powers of two)")
        ax.set_ylabel("effective GB/s (" + ("8n" if op == "scan" else "4n+4k") + " bytes / time)")
        ax.set_title(f"{op}: effective bandwidth vs n on {device}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, f"{op}_bandwidth.png")


def _speedup_plot(
    c: Figures,
    by_op: dict[str, list[Row]],
) -> None:
    """Every version's speed-up over the CPU, one panel per operation."""
    plt, save, colors = c.plt, c.save, c.colors
    fig, axes = plt.subplots(1, len(by_op), figsize=(5 * max(1, len(by_op)), 5), squeeze=False)
    for ax, (op, op_rows) in zip(axes[0], by_op.items()):
        shown = {}
        for name, rs in series(op_rows).items():
            rs = [r for r in rs if not math.isnan(r["speedup_vs_cpu"])]
            if rs and rs[0]["role"] != "reference":  # the reference is the 1.0 line itself
                shown[name] = rs
        version_lines(ax, shown, colors, lambda r: r["speedup_vs_cpu"])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.axhline(1, color="black", linewidth=0.8)
        ax.set_title(f"{op}: speedup over the CPU")
        ax.set_xlabel("n")
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    save(fig, "speedup_vs_cpu.png")


def _sweep_plot(c: Figures, rows: list[Row]) -> None:
    """The block-size sweep."""
    plt, save, device = c.plt, c.save, c.device
    sweep = [r for r in rows if kind(r) == "sweep" and timed(r)]
    if sweep:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for name, rs in series(sweep, pow2=False).items():
            rs.sort(key=lambda r: int(r["params_d"]["block"]))
            ax.plot([int(r["params_d"]["block"]) for r in rs], [r["median_ms"] for r in rs], marker="o", label=name)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("threads per block")
        ax.set_ylabel("median time (ms)")
        ax.set_title(f"block-size sweep, n = {size_label(sweep[0]['n'])}, {device}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, "block_sweep.png")


def _stages_plot(
    c: Figures,
    rows: list[Row],
    main: list[Row],
) -> None:
    """The staged compaction's map / scan / scatter against the one-pass versions."""
    plt, save = c.plt, c.save
    stages = [r for r in rows if kind(r) == "stage" and timed(r)]
    if stages:
        # the GPU's staged versions when there are any: a CPU split (hundreds of ms at the largest
        # size) would flatten their bars; it has its own table per size
        on_gpu = {r["version"] for r in main if r.get("ceiling")}
        if any(r["version"] in on_gpu for r in stages):
            stages = [r for r in stages if r["version"] in on_gpu]
        n = max(r["n"] for r in stages)
        names = list(OrderedDict.fromkeys(r["version"] for r in stages if r["n"] == n))
        # the one-pass versions: the compaction rows after the first staged version (registry order)
        compact = [r for r in main if r["n"] == n and r["params_d"].get("op") == "compact"]
        first = next((i for i, r in enumerate(compact) if r["version"] in names), len(compact))
        fused = [r for r in compact[first:] if r["version"] not in names]
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [3, 2]})
        bottom = [0.0] * len(names)
        shares = {}
        for stage, color in (("map", "#4c72b0"), ("scan", "#dd8452"), ("scatter", "#55a868")):
            vals = []
            for name in names:
                v = [
                    r["median_ms"]
                    for r in stages
                    if r["n"] == n and r["version"] == name and r["params_d"]["stage"] == stage
                ]
                vals.append(v[0] if v else 0.0)
            shares[stage] = vals
            ax.bar(names, vals, bottom=bottom, label=stage, color=color)
            bottom = [b + v for b, v in zip(bottom, vals)]
        for r in fused:
            ax.bar(r["version"], r["median_ms"], color="#8172b3", label="one pass" if r is fused[0] else None)
        for i, total in enumerate(bottom + [r["median_ms"] for r in fused]):
            ax.text(i, total, f"{total:.2f}", ha="center", va="bottom", fontsize=7)
        ax.set_ylabel("ms")
        ax.set_title(f"compaction at n = {size_label(n)}: stages vs one pass")
        ax.legend(fontsize=8)
        plt.setp(ax.get_xticklabels(), rotation=25, ha="right", fontsize=8)
        left = [0.0] * len(names)
        for stage, color in (("map", "#4c72b0"), ("scan", "#dd8452"), ("scatter", "#55a868")):
            pct = [100 * v / t if t else 0 for v, t in zip(shares[stage], bottom)]
            ax2.barh(names, pct, left=left, color=color)
            left = [a + b for a, b in zip(left, pct)]
        ax2.invert_yaxis()
        ax2.set_xlabel("% of the pipeline's time")
        ax2.set_title("where the time goes")
        ax2.tick_params(axis="y", labelsize=8)
        save(fig, "compact_stages.png")


def _tune_plot(
    c: Figures,
    tune_rows: list[Row],
) -> None:
    """The tuning candidates relative to CUB."""
    plt, save, device = c.plt, c.save, c.device
    tune = [r for r in tune_rows if timed(r)]
    if tune:
        fig, ax = plt.subplots(figsize=(9, 6))
        labels = [r["version"] for r in tune]
        vals = [r["speedup_vs_library"] for r in tune]
        op_color = {"scan": "#4c72b0", "compact": "#55a868"}
        ax.barh(
            labels,
            vals,
            color=[
                LIBRARY_COLOR if r["role"] == "library" else op_color.get(r["params_d"].get("op"), "#c44e52")
                for r in tune
            ],
        )
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.invert_yaxis()
        ax.set_xlabel("speed relative to CUB (higher is better)")
        ax.set_title(f"tile-shape and look-back-delay tuning at n = {size_label(tune[0]['n'])}, {device}")
        ax.tick_params(axis="y", labelsize=7)
        save(fig, "tuning.png")


def plots(
    rows: list[Row],
    tune_rows: list[Row],
    out: str,
    args: Namespace | None = None,
) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    main = [r for r in rows if kind(r) == "main" and timed(r)]
    colors = version_colors(rows)
    device = device_of(rows)
    copy_gbs = copy_bandwidth(rows)
    written = []
    save = make_saver(plt, out, written)
    fig_ctx = Figures(plt, save, colors, device, copy_gbs)

    by_op = defaultdict(list)
    for r in main:
        by_op[r["params_d"].get("op", "?")].append(r)

    for op, op_rows in by_op.items():
        _op_plots(fig_ctx, op, op_rows)
    if by_op:  # nothing timed (no GPU and no CPU version asked for): no speed-up to draw
        _speedup_plot(fig_ctx, by_op)
    _sweep_plot(fig_ctx, rows)
    _stages_plot(fig_ctx, rows, main)
    _tune_plot(fig_ctx, tune_rows)
    # the ladder: every version of each operation at its largest size
    panels = []
    for op, op_rows in by_op.items():
        n = max(r["n"] for r in op_rows)
        at_n = [r for r in op_rows if r["n"] == n]
        unit = next((r["metric_unit"] for r in at_n if r["metric_unit"]), "")
        panels.append(
            (
                f"{op}, n = {size_label(n)}",
                at_n,
                unit or "runs/s",
                (lambda r: r["metric"]) if unit else (lambda r: 1e3 / r["median_ms"]),
                [],
            )
        )
    ladder_plot(plt, save, panels, colors, "ladder.png", f"stream_compaction: the ladder on {device}")
    return written


def tables(
    rows: list[Row],
    tune_rows: list[Row],
) -> str:
    main = [r for r in rows if kind(r) == "main"]
    lines = []
    device = device_of(rows)
    sha = next((r["git_sha"] for r in rows), "unknown")
    copy_gbs = copy_bandwidth(rows)
    lines.append(
        f"Device: **{device}**, CUDA {rows[0]['cuda'] if rows else '?'}, commit `{sha}`"
        + (f", measured copy bandwidth **{copy_gbs:.0f} GB/s** (read + write)." if copy_gbs else ".")
    )
    lines.append("")
    for op in OrderedDict.fromkeys(r["params_d"].get("op") for r in main):
        op_rows = [r for r in main if r["params_d"].get("op") == op]
        n = max(r["n"] for r in op_rows)
        unit = next((r["metric_unit"] for r in op_rows if r["metric_unit"]), "")
        lines.append(f"**{op}, n = {size_label(n)}**")
        lines.append("")
        lines.append(
            f"| version | idea | median ms | {unit} | % of copy | x CPU | x prev | x CUB | predicted ms | check |"
        )
        lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in op_rows:
            if r["n"] != n:
                continue
            lines.append(
                f"| `{r['version']}` | {r['idea']} | {fmt(r['median_ms'], 3)} | {fmt(r['metric'], 0)} | "
                f"{fmt(r['pct_of_ceiling'], 1)} | {fmt(r['speedup_vs_cpu'], 1)} | {fmt(r['speedup_vs_prev'])} | "
                f"{fmt(r['speedup_vs_library'])} | {fmt(r['predicted_ms'], 3)} | {course_csv.status_text(r)} |"
            )
        lines.append("")
    stages = [r for r in rows if kind(r) == "stage" and timed(r)]
    if stages:
        n = max(r["n"] for r in stages)
        lines.append(f"**compaction sub-timings, n = {size_label(n)} (ms)**")
        lines.append("")
        lines.append("| version | map | scan | scatter |")
        lines.append("|---|---:|---:|---:|")
        for name in OrderedDict.fromkeys(r["version"] for r in stages if r["n"] == n):
            v = {r["params_d"]["stage"]: r["median_ms"] for r in stages if r["n"] == n and r["version"] == name}
            lines.append(
                f"| `{name}` | {fmt(v.get('map'), 3)} | {fmt(v.get('scan'), 3)} | {fmt(v.get('scatter'), 3)} |"
            )
        lines.append("")
    lines += per_size_lines(main, stages)
    e2e = [r for r in rows if kind(r) == "e2e" and timed(r)]
    if e2e:
        lines.append(f"**end to end, n = {size_label(e2e[0]['n'])}: pinned host input -> device -> host output (ms)**")
        lines.append("")
        lines.append("| version | end-to-end ms | kernel-only ms |")
        lines.append("|---|---:|---:|")
        for r in e2e:
            k = [m["median_ms"] for m in main if m["version"] == r["version"] and m["n"] == r["n"]]
            lines.append(f"| `{r['version']}` | {fmt(r['median_ms'], 2)} | {fmt(k[0] if k else math.nan, 3)} |")
        lines.append("")
    tune = [r for r in tune_rows if timed(r)]
    if tune:
        lines.append(
            f"**tuning, n = {size_label(tune[0]['n'])}** (`stream_compaction_tune`; shape = threads x items "
            "per thread, d = look-back delays in ns before the first poll / between polls)"
        )
        lines.append("")
        lines.append("| candidate | median ms | GB/s | % of copy | x CUB |")
        lines.append("|---|---:|---:|---:|---:|")
        for r in tune:
            lines.append(
                f"| `{r['version']}` | {fmt(r['median_ms'], 4)} | {fmt(r['metric'], 0)} | "
                f"{fmt(r['pct_of_ceiling'], 1)} | {fmt(r['speedup_vs_library'])} |"
            )
        lines.append("")
    return "\n".join(lines)


def per_size_lines(main: list[Row], stages: list[Row]) -> list[str]:
    """The raw tables, as the assignment's performance analysis has them: every version's median at
    every size of the run (the non-powers of two beside the powers), one table an operation, and the
    compaction's map / scan / scatter split at every size, one table a staged version; folded
    (<details>) under the tables above."""
    if not main:
        return []
    lines = [
        "<details><summary>every version at every size (median ms), and the compaction's split per size</summary>",
        "",
    ]
    for op in OrderedDict.fromkeys(r["params_d"].get("op") for r in main):
        op_rows = [r for r in main if r["params_d"].get("op") == op]
        names = list(OrderedDict.fromkeys(r["version"] for r in op_rows))
        sizes = sorted({r["n"] for r in op_rows})
        at = {(r["version"], r["n"]): r for r in op_rows}
        lines += [f"**{op}, median ms per size**", "", "| n | " + " | ".join(f"`{v}`" for v in names) + " |"]
        lines.append("|---:|" + "---:|" * len(names))
        for n in sizes:
            cells = []
            for v in names:
                r = at.get((v, n))
                cells.append(fmt(r["median_ms"], 4) if r is not None and timed(r) else "-")
            lines.append(f"| {size_label(n)} | " + " | ".join(cells) + " |")
        lines.append("")
    for name in OrderedDict.fromkeys(r["version"] for r in stages):
        mine = [r for r in stages if r["version"] == name]
        lines += [f"**`{name}`: map / scan / scatter per size (ms; share of their sum)**", ""]
        lines += ["| n | map | scan | scatter | scan's share |", "|---:|---:|---:|---:|---:|"]
        for n in sorted({r["n"] for r in mine}):
            v = {r["params_d"]["stage"]: r["median_ms"] for r in mine if r["n"] == n}
            total = sum(x for x in (v.get("map"), v.get("scan"), v.get("scatter")) if x is not None)
            share = f"{100 * v['scan'] / total:.0f}%" if total and v.get("scan") is not None else "-"
            lines.append(
                f"| {size_label(n)} | {fmt(v.get('map'), 4)} | {fmt(v.get('scan'), 4)} | {fmt(v.get('scatter'), 4)} "
                f"| {share} |"
            )
        lines.append("")
    lines += ["</details>", ""]
    return lines
