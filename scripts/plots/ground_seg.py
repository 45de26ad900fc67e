"""ground_seg: grid population, accuracy, end-to-end frame time, phases, streams, top-down views, and
the README tables."""

from __future__ import annotations

import math
import os
from collections import OrderedDict
from types import ModuleType
from typing import TYPE_CHECKING

import course_csv
from course_csv import Row

from .common import Saver, device_of, fmt, ladder_plot, make_saver, meta, timed, version_colors

if TYPE_CHECKING:
    from argparse import Namespace

    import numpy as np


def read_topdown(path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """A ground_seg --topdown-out file (format in ground_seg.hpp, write_topdown_data)."""
    import numpy as np

    with open(path, "rb") as f:
        data = f.read()
    if data[:10] != b"GSTOPDOWN1":
        raise SystemExit(f"plot.py: {path} is not a ground_seg top-down file")
    region = np.frombuffer(data, np.float32, 5, 10)
    n = int(np.frombuffer(data, np.uint64, 1, 30)[0])
    has_variance, has_improved = data[38], data[39]
    at = 40
    x = np.frombuffer(data, np.float32, n, at)
    at += 4 * n
    y = np.frombuffer(data, np.float32, n, at)
    at += 4 * n
    truth = np.frombuffer(data, np.uint8, n, at)
    at += n
    rules = {}
    for name, present in (("variance", has_variance), ("improved", has_improved)):
        if present:
            rules[name] = np.frombuffer(data, np.uint8, n, at).astype(bool)
            at += n
    if at != len(data):
        raise SystemExit(f"plot.py: {path}: {len(data)} bytes, expected {at}")
    return region, x, y, truth, rules


# the outcome of a point against the labels, and its colour
OUTCOMES = [
    ("ground found", "#2ca02c"),
    ("ground missed", "#1f57e6"),
    ("non-ground called ground", "#e6261f"),
    ("non-ground", "#7a7a7a"),
    ("not scored (label ignored)", "#c8c8c8"),
]


def topdown_plots(plt: ModuleType, save: Saver, folder: str, m: dict[str, float]) -> None:
    """One figure per top-down file: each rule's labels against the ground truth, and the
    difference of the two rules (the points whose label changes, coloured by whether the change
    fixed or broke the label), with axes in metres and a legend."""
    import glob

    import numpy as np
    from matplotlib.lines import Line2D

    for path in sorted(glob.glob(os.path.join(folder, "topdown_*.gstd"))):
        region, x, y, truth, rules = read_topdown(path)
        stem = os.path.basename(path)[len("topdown_") : -len(".gstd")]
        panels = list(rules.items())
        both = len(panels) == 2
        fig, axes = plt.subplots(1, len(panels) + both, figsize=(6.2 * (len(panels) + both), 6.6), squeeze=False)
        scored = truth != 0
        handles = [Line2D([], [], marker="o", linestyle="", color=c, label=line) for line, c in OUTCOMES]
        for ax, (rule, pred) in zip(axes[0], panels):
            outcome = np.where(truth == 1, np.where(pred, 0, 1), np.where(truth == 2, np.where(pred, 2, 3), 4))
            if not scored.any():  # no labels: ground / non-ground only
                outcome = np.where(pred, 0, 3)
            for k, (_, color) in reversed(list(enumerate(OUTCOMES))):  # errors drawn last, on top
                sel = outcome == k
                ax.scatter(y[sel], x[sel], s=0.4, c=color, linewidths=0, rasterized=True)
            ax.set_title(f"{rule} rule: {int(pred.sum()):,} of {len(pred):,} points ground")
        if both:
            ax = axes[0][-1]
            variance, improved = rules["variance"], rules["improved"]
            changed = variance != improved
            ax.scatter(y[~changed], x[~changed], s=0.3, c="#e4e4e4", linewidths=0, rasterized=True)
            right = changed & scored & (improved == (truth == 1))
            wrong = changed & scored & (improved != (truth == 1))
            unscored = changed & ~scored
            for sel, color in ((unscored, "#999999"), (right, "#2ca02c"), (wrong, "#e6261f")):
                ax.scatter(y[sel], x[sel], s=3, c=color, linewidths=0, rasterized=True)
            ax.set_title(f"difference: {int(changed.sum()):,} points change label")
            ax.legend(
                handles=[
                    Line2D([], [], marker="o", linestyle="", color=c, label=line)
                    for line, c in (
                        ("the improved rule fixes the label", "#2ca02c"),
                        ("the improved rule breaks the label", "#e6261f"),
                        ("changed, not scored", "#999999"),
                        ("unchanged", "#d0d0d0"),
                    )
                ],
                loc="lower left",
                fontsize=7,
                markerscale=1.5,
            )
        for ax in axes[0]:
            ax.set_xlim(region[3], region[2])  # y to the left, as seen from above with x forward
            ax.set_ylim(region[0], region[1])
            ax.set_aspect("equal")
            ax.set_xlabel("y (m, left is +)")
            ax.set_ylabel("x (m, forward)")
            ax.grid(True, alpha=0.25)
        axes[0][0].legend(handles=handles, loc="lower left", fontsize=7, markerscale=1.5)
        fig.suptitle(
            f"{stem}: top-down, {region[4]:g} m cells over a {region[1] - region[0]:g} x "
            f"{region[3] - region[2]:g} m region"
        )
        save(fig, f"topdown_{stem}.png")


def _accuracy_plot(plt: ModuleType, save: Saver, rows: list[Row]) -> None:
    """Precision against recall of ground per input, the two rules side by side."""
    acc = [r for r in rows if r["kind"] == "version" and "precision" in r["m"]]
    if acc:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        names = list(OrderedDict.fromkeys(r["params_d"]["input"] for r in acc))
        for rule in ["variance", "improved"]:
            pick = [
                next((r for r in acc if r["params_d"]["input"] == n and r["params_d"]["rule"] == rule), None)
                for n in names
            ]
            pts = [(r["m"]["recall"], r["m"]["precision"], n) for r, n in zip(pick, names) if r]
            ax.scatter(
                [x for x, _, _ in pts],
                [y for _, y, _ in pts],
                marker="o" if rule == "variance" else "s",
                s=60,
                label=f"{rule} rule",
            )
            for x, y, n in pts:
                ax.annotate(
                    n.replace("semantickitti_", "SK "), (x, y), fontsize=7, xytext=(4, 2), textcoords="offset points"
                )
        ax.set_xlabel("recall of ground (%)")
        ax.set_ylabel("precision of ground (%)")
        ax.set_title("accuracy, variance vs improved rule (Patchwork++ convention)")
        ax.grid(True, alpha=0.3)
        ax.legend()
        save(fig, "accuracy.png")


def _streams_plot(plt: ModuleType, save: Saver, rows: list[Row], m: dict[str, float]) -> None:
    """Throughput and latency against the number of streams."""
    streams = [r for r in rows if r["kind"] == "streams" and timed(r)]
    if streams:
        # two panels with zero-based axes instead of one plot with two offset y axes
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
        xs = [int(r["params_d"]["streams"]) for r in streams]
        ax.plot(xs, [r["metric"] for r in streams], marker="o", label="measured")
        if "target_rate" in m:
            ax.axhline(
                m["target_rate"], color="#c44e52", linestyle="--", label=f"target: {m['target_rate']:,.0f} frames/s"
            )
        ax.legend(loc="lower right")
        ax2.plot(xs, [r["m"].get("latency", math.nan) * 1e3 for r in streams], marker="s", color="#555555")
        for a, ylabel, title in (
            (ax, "frames / s", f"{streams[0]['version']}: throughput"),
            (ax2, "median latency of a frame (us)", "latency: a frame waits for the frames ahead of it"),
        ):
            a.set_ylim(bottom=0)
            a.set_xscale("log", base=2)
            a.set_xticks(xs)
            a.set_xticklabels([str(x) for x in xs])
            a.set_xlabel("streams (frames in flight)")
            a.set_ylabel(ylabel)
            a.set_title(title)
            a.grid(True, alpha=0.3)
        save(fig, "streams.png")


def _census_plot(plt: ModuleType, save: Saver, hist: list[Row], m: dict[str, float]) -> None:
    """The grid census (the report's section 1.1): non-empty cells by point count, each count from
    1 to 32 on its own and the cells over 32 by power-of-two range, for the real scan and one
    simulated street; the warp/block split of the statistics stage drawn where it falls."""
    inputs = list(OrderedDict.fromkeys(r["params_d"]["input"] for r in hist))
    shown = [i for i in inputs if not i.startswith("sim")][:1] + [i for i in inputs if i.startswith("sim")][:1]
    fig, ax = plt.subplots(figsize=(12, 4.8))
    width = 0.8 / max(1, len(shown))
    labels: list[str] = []
    for k, name in enumerate(shown):
        rs = [r for r in hist if r["params_d"]["input"] == name and r["params_d"]["points_per_cell"] != "0"]
        if len(rs) > len(labels):
            labels = [r["params_d"]["points_per_cell"] for r in rs]
        ax.bar([i + k * width for i in range(len(rs))], [r["metric"] for r in rs], width, label=name)
    ax.set_xticks([i + width * (len(shown) - 1) / 2 for i in range(len(labels))])
    ax.set_xticklabels(labels, rotation=90, fontsize=8)
    if "32" in labels:
        split = labels.index("32") + 0.5 + width * (len(shown) - 1) / 2
        ax.axvline(split, color="black", linestyle="--", linewidth=1)
        ax.text(
            split - 0.3,
            0.97,
            "one warp a cell (2-32 points)",
            transform=ax.get_xaxis_transform(),
            ha="right",
            va="top",
            fontsize=9,
        )
        ax.text(
            split + 0.3, 0.97, "one block a cell", transform=ax.get_xaxis_transform(), ha="left", va="top", fontsize=9
        )
    ax.set_yscale("log")
    ax.set_xlabel("points in the cell")
    ax.set_ylabel("cells")
    ax.set_title(f"grid census ({m.get('cell', math.nan):g} m cells)")
    ax.legend(loc="lower left")
    save(fig, "grid_population.png")


def plots(rows: list[Row], tune_rows: list[Row], out: str, args: Namespace | None = None) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    save = make_saver(plt, out, written)
    m = meta(rows)
    hist = [r for r in rows if r["kind"] == "histogram"]
    if hist:
        _census_plot(plt, save, hist, m)
    _accuracy_plot(plt, save, rows)

    real = next(
        (
            r["params_d"]["input"]
            for r in rows
            if "input" in r["params_d"] and not r["params_d"]["input"].startswith("sim")
        ),
        None,
    )
    frame = [
        r
        for r in rows
        if r["kind"] == "version"
        and r["params_d"].get("input") == real
        and r["params_d"].get("rule") == "variance"
        and timed(r)
    ]
    target_us = m.get("target_frame", math.nan) * 1e3
    if frame:
        # a dot per version on a log axis (bars on a log axis would start from an arbitrary baseline)
        fig, ax = plt.subplots(figsize=(8, 0.5 * len(frame) + 1.8))
        ys = list(range(len(frame)))[::-1]
        us = [r["median_ms"] * 1e3 for r in frame]
        ax.scatter(
            us,
            ys,
            s=60,
            color=[
                "#999999" if r["role"] == "reference" else "#c44e52" if r["role"] == "library" else "#4c72b0"
                for r in frame
            ],
            zorder=3,
        )
        for x, y in zip(us, ys):
            ax.annotate(f"{x:,.0f} us", (x, y), xytext=(6, 4), textcoords="offset points", fontsize=8)
        ax.set_yticks(ys)
        ax.set_yticklabels([f"{r['version']} ({r['role']})" if r["role"] != "version" else r["version"] for r in frame])
        if not math.isnan(target_us):
            ax.axvline(target_us, color="#c44e52", linestyle="--", label=f"target: {target_us:g} us end to end")
            ax.legend(loc="lower right")
        ax.set_xscale("log")
        ax.set_xlabel("us per frame, host points in -> host labels out (log scale)")
        ax.grid(True, axis="x", which="both", alpha=0.3)
        ax.set_title(f"one {frame[0]['n']:,}-point frame, variance rule, {device_of(rows)}")
        save(fig, "end_to_end.png")
        extra = (
            [
                (
                    1 / m["target_frame"] * 1e3,
                    f"target: one frame in {target_us:g} us = {1e3 / m['target_frame']:,.0f} frames/s",
                )
            ]
            if "target_frame" in m
            else []
        )
        ladder_plot(
            plt,
            save,
            [
                (
                    f"one {frame[0]['n']:,}-point frame ({real}), variance rule, host points to host labels",
                    frame,
                    "frames / s (one frame at a time)",
                    lambda r: 1e3 / r["median_ms"],
                    extra,
                )
            ],
            version_colors(rows),
            "ladder.png",
            f"ground_seg: the ladder on {device_of(rows)}",
        )
    phases = [r for r in rows if r["kind"] == "phase" and timed(r)]
    if phases:
        fig, ax = plt.subplots(figsize=(10, 3.8))
        left = 0.0
        cmap = plt.get_cmap("tab20")
        phased = f"{phases[0]['version']} (by phase)"
        for i, r in enumerate(phases):
            ax.barh([phased], [r["median_ms"] * 1e3], left=left, color=cmap(i % 20), label=r["params_d"]["phase"])
            left += r["median_ms"] * 1e3
        kern = next(
            (
                r
                for r in rows
                if r["kind"] == "kernels"
                and r["params_d"].get("input") == real
                and r["params_d"].get("rule") == "variance"
            ),
            None,
        )
        e2e = next((r for r in frame if kern and r["version"] == kern["version"]), None)
        if kern and e2e:
            label = f"{kern['version']} (one graph)"
            ax.barh([label], [kern["median_ms"] * 1e3], color="#2ca02c", label="graph: kernels")
            ax.barh(
                [label],
                [(e2e["median_ms"] - kern["median_ms"]) * 1e3],
                left=kern["median_ms"] * 1e3,
                color="#98df8a",
                label="graph: copies + launch",
            )
        ax.set_xlabel("us per frame")
        ax.set_title("where a frame's time goes")
        ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.25))
        save(fig, "phases.png")
    _streams_plot(plt, save, rows, m)

    folder = getattr(args, "topdown_dir", None)
    if folder:
        topdown_plots(plt, save, folder, m)
    return written


def tables(rows: list[Row], tune_rows: list[Row]) -> str:
    lines = []
    device = device_of(rows)
    sha = next((r["git_sha"] for r in rows), "unknown")
    lines.append(
        f"Run on: {device}, commit `{sha}`. Accuracy under the Patchwork++ convention; time is the median per "
        "frame; x CPU against the reference, x lib against the library route (CUB)."
    )
    lines.append("")
    lines.append(
        "| input | rule | version | precision % | recall % | F1 % | IoU % | false ground | missed ground | ms / "
        "frame | x CPU | x prev | x lib | check |"
    )
    lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in [r for r in rows if r["kind"] == "version"]:
        d, mm = r["params_d"], r["m"]
        lines.append(
            f"| {d['input']} | {d['rule']} | `{r['version']}` | {fmt(mm.get('precision'))} | {fmt(mm.get('recall'))} | "
            f"{fmt(r['metric'])} | {fmt(mm.get('iou'))} | {fmt(mm.get('false_positives'), 0)} | "
            f"{fmt(mm.get('false_negatives'), 0)} | {fmt(r['median_ms'], 3)} | {fmt(r['speedup_vs_cpu'], 1)} | "
            f"{fmt(r['speedup_vs_prev'])} | {fmt(r['speedup_vs_library'])} | {course_csv.status_text(r)} |"
        )
    lines.append(
        "GPU times are end to end: host points in, labels out; v1-v3 allocate and copy per frame, v4 replays "
        "a graph from pinned memory."
    )
    lines.append("")
    timing = [r for r in rows if r["kind"] in ("kernels", "from_vector")]
    if timing:
        lines.append(f"**{timing[0]['version']} in detail** (us per frame)")
        lines.append("")
        lines.append("| input | rule | measured | us | predicted us |")
        lines.append("|---|---|---|---:|---:|")
        for r in timing:
            d = r["params_d"]
            what = (
                "kernels only (events inside the graph)"
                if r["kind"] == "kernels"
                else "end to end from a std::vector (copy into pinned memory included)"
            )
            lines.append(
                f"| {d['input']} | {d['rule']} | {what} | {fmt(r['median_ms'] * 1e3, 1)} | "
                f"{fmt(r['predicted_ms'] * 1e3, 1)} |"
            )
        lines.append("")
    phases = [r for r in rows if r["kind"] == "phase" and timed(r)]
    if phases:
        lines.append(
            f"**{phases[0]['version']} per-phase table, {phases[0]['params_d']['input']}** (median of "
            f"{phases[0]['samples']} frames; each phase synchronized; predicted: the stage's DRAM bytes over the "
            "measured copy bandwidth plus its launches at the measured lone-launch latency)"
        )
        lines.append("")
        lines.append("| phase | us | predicted us |")
        lines.append("|---|---:|---:|")
        for r in phases:
            lines.append(
                f"| {r['params_d']['phase']} | {fmt(r['median_ms'] * 1e3, 1)} | {fmt(r['predicted_ms'] * 1e3, 1)} |"
            )
        lines.append("")
    streams = [r for r in rows if r["kind"] == "streams"]
    if streams:
        lines.append(
            f"**{streams[0]['version']} streamed frames** (one graph engine per stream, frames from pinned memory; "
            "median of samples of many frames)"
        )
        lines.append("")
        lines.append("| streams | frames / s | median latency us | samples | check |")
        lines.append("|---:|---:|---:|---:|---|")
        for r in streams:
            lines.append(
                f"| {r['params_d']['streams']} | {fmt(r['metric'], 0)} | "
                f"{fmt(r['m'].get('latency', math.nan) * 1e3, 1)} | "
                f"{r['samples']} | {course_csv.status_text(r)} |"
            )
        lines.append("")
    lines += cold_lines([r for r in rows if r["kind"] == "cold"])
    census = [r for r in rows if r["kind"] == "census"]
    if census:
        lines += census_lines(census)
    return "\n".join(lines)


def census_lines(census: list[Row]) -> list[str]:
    """The README's census table (every input) and the design it gives the statistics stage."""
    lines = [
        "**grid census** (cells by point count, the report's section 1.1; the same on every machine: the CPU"
        " reference's grid)",
        "",
        "| input | cells | empty | 1 point | 2-32 points | over 32 | fullest cell | points in 2-32 cells "
        "| points in cells over 32 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in census:
        k = r["m"]
        full = k.get("cells", 0) - k.get("empty", 0)
        pts = k.get("points_one", 0) + k.get("points_warp", 0) + k.get("points_over", 0)

        def share(a: float, b: float) -> str:
            return f"{100 * a / b:.1f}%" if b else "-"

        lines.append(
            f"| {r['params_d']['input']} | {int(k.get('cells', 0))} | {int(k.get('empty', 0))} | "
            f"{int(k.get('one', 0))} ({share(k.get('one', 0), full)}) | "
            f"{int(k.get('warp', 0))} ({share(k.get('warp', 0), full)}) | "
            f"{int(k.get('over', 0))} ({share(k.get('over', 0), full)}) | {int(r['metric'])} | "
            f"{share(k.get('points_warp', 0), pts)} | {share(k.get('points_over', 0), pts)} |"
        )
    lines.append("")
    return lines


def cold_lines(cold: list[Row]) -> list[str]:
    """The README's table of each GPU version's first frame (a fresh runner) beside its warm median."""
    if not cold:
        return []
    where = cold[0]["params_d"].get("input", "")
    lines = [
        f"**the first frame, cold, next to the warm ones** ({where}: a fresh runner's first frame pays its"
        " allocation, graph build and the lazy loading of kernels the process has not run yet; the report"
        " measured the same first-launch overhead)",
        "",
        "| version | first frame ms | warm median ms | cold / warm |",
        "|---|---:|---:|---:|",
    ]
    for r in cold:
        warm = r["m"].get("warm_ms", math.nan)
        ratio = r["metric"] / warm if warm and warm == warm else math.nan
        lines.append(f"| {r['version']} | {fmt(r['metric'], 3)} | {fmt(warm, 3)} | {fmt(ratio, 1)}x |")
    lines.append("")
    return lines
