#!/usr/bin/env python3
"""Plots and README tables from the drivers' CSV files (CSV only: version names, ideas and
ceilings all come from the rows, never from this script).

usage: plot.py --csv results/<gpu>/stream_compaction.csv [--tune-csv ...] --out images/stream_compaction
               [--readme stream_compaction/README.md]
"""
import argparse
import csv
import math
import os
import re
import sys
from collections import OrderedDict, defaultdict


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["n"] = int(r["n"])
        r["params_d"] = {}
        key = None
        for tok in r["params"].split():  # "shape=128x4 min8": a token without '=' continues the value
            if "=" in tok:
                key, val = tok.split("=", 1)
                r["params_d"][key] = val
            elif key:
                r["params_d"][key] += " " + tok
        for k in ("median_ms", "min_ms", "max_ms", "noise", "metric", "pct_of_ceiling", "speedup_vs_cpu",
                  "speedup_vs_prev", "speedup_vs_library", "predicted_ms"):
            r[k] = float(r[k]) if r.get(k) not in (None, "") else math.nan
        r["m"] = parse_metrics(r.get("metrics", ""))
    return rows


def parse_metrics(text):
    """The CSV's metrics column, "name[unit]=value;...", as {name: value} (the units are for readers)."""
    out = {}
    for item in filter(None, (text or "").split(";")):
        name, rest = item.split("[", 1)
        unit, value = rest.split("]=", 1)
        out[name] = float(value) if value else math.nan
    return out


def meta(rows):
    """The run's metadata record (kind "meta"): measured ceilings and the parameters the plots
    need, as {name: value}; empty when the CSV has none."""
    return next((r["m"] for r in rows if r.get("kind") == "meta"), {})


SC_KINDS = {"version": "main", "stage": "stage", "end_to_end": "e2e", "block_sweep": "sweep", "tune": "tune"}


def kind(r):
    return SC_KINDS.get(r.get("kind"), r.get("kind"))


def timed(r):
    return r["passed"] == "PASS" and not math.isnan(r["median_ms"])


def size_label(n):
    for k in range(3, 40):
        p = 1 << k
        if n == p:
            return f"2^{k}"
        if n == p - 3:
            return f"2^{k}-3"
        if p < n < p + 100:
            return f"2^{k}+{n - p}"
    return str(n)


def copy_bandwidth(rows):
    return meta(rows).get("copy_bandwidth")


def fmt(x, digits=2):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}f}"


def device_of(rows):
    return next((r["device"] for r in rows if r["device"] and not r["device"].startswith("none")), "CPU only")


def replace_atomically(path, write):
    """write(tmp_path) into a unique temporary next to `path`, fsync it, rename it over `path`:
    the file is complete or untouched, never half-written (issue 8)."""
    import tempfile
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=d)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def make_saver(plt, out, written):
    """save(fig, name): tight layout, write PNG into out, close, remember the path."""
    os.makedirs(out, exist_ok=True)

    def save(fig, name):
        fig.tight_layout()
        path = os.path.join(out, name)
        replace_atomically(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
        plt.close(fig)
        written.append(path)

    return save


def plots(rows, tune_rows, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    main = [r for r in rows if kind(r) == "main" and timed(r)]
    device = device_of(rows)
    copy_gbs = copy_bandwidth(rows)
    written = []
    save = make_saver(plt, out, written)

    by_op = defaultdict(list)
    for r in main:
        by_op[r["params_d"].get("op", "?")].append(r)

    def series(op_rows, pow2=True):
        s = OrderedDict()
        for r in op_rows:
            if pow2 and (r["n"] & (r["n"] - 1)):
                continue
            s.setdefault(r["version"], []).append(r)
        return s

    for op, op_rows in by_op.items():
        fig, ax = plt.subplots(figsize=(8, 5.5))
        for name, rs in series(op_rows).items():
            rs.sort(key=lambda r: r["n"])
            ax.plot([r["n"] for r in rs], [r["median_ms"] for r in rs], marker="o", ms=3, label=name,
                    linestyle="--" if "cpu" in name or "std" in name else "-")
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
            for name, rs in series(op_rows).items():
                rs = [r for r in rs if r["params_d"].get("op") == op]
                rs.sort(key=lambda r: r["n"])
                ax.plot([r["n"] for r in rs], [r["metric"] for r in rs], marker="o", ms=3, label=name)
            if copy_gbs:
                ax.axhline(copy_gbs, color="black", linestyle=":", label=f"measured copy {copy_gbs:.0f} GB/s")
            ax.set_xscale("log", base=2)
            ax.set_xlabel("n (elements, powers of two)")
            ax.set_ylabel("effective GB/s (" + ("8n" if op == "scan" else "4n+4k") + " bytes / time)")
            ax.set_title(f"{op}: effective bandwidth vs n on {device}")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
            save(fig, f"{op}_bandwidth.png")

    fig, axes = plt.subplots(1, len(by_op), figsize=(5 * max(1, len(by_op)), 5), squeeze=False)
    for ax, (op, op_rows) in zip(axes[0], by_op.items()):
        for name, rs in series(op_rows).items():
            rs = [r for r in rs if not math.isnan(r["speedup_vs_cpu"])]
            if not rs or "cpu" in name or "std" in name:
                continue
            rs.sort(key=lambda r: r["n"])
            ax.plot([r["n"] for r in rs], [r["speedup_vs_cpu"] for r in rs], marker="o", ms=3, label=name)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.axhline(1, color="black", linewidth=0.8)
        ax.set_title(f"{op}: speedup over the CPU")
        ax.set_xlabel("n")
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    save(fig, "speedup_vs_cpu.png")

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

    stages = [r for r in rows if kind(r) == "stage" and timed(r)]
    if stages:
        n = max(r["n"] for r in stages)
        names = list(OrderedDict.fromkeys(r["version"] for r in stages if r["n"] == n))
        fused = [r for r in main if r["n"] == n and r["params_d"].get("op") == "compact" and r["version"] not in names
                 and "cpu" not in r["version"]]
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [3, 2]})
        bottom = [0.0] * len(names)
        shares = {}
        for stage, color in (("map", "#4c72b0"), ("scan", "#dd8452"), ("scatter", "#55a868")):
            vals = []
            for name in names:
                v = [r["median_ms"] for r in stages if r["n"] == n and r["version"] == name and r["params_d"]["stage"] == stage]
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

    tune = [r for r in tune_rows if timed(r)]
    if tune:
        fig, ax = plt.subplots(figsize=(9, 6))
        labels = [r["version"] for r in tune]
        vals = [r["speedup_vs_library"] for r in tune]
        colors = ["#999999" if "cub" in l else "#4c72b0" if l.startswith("scan") else "#55a868" if l.startswith("compact")
                  else "#c44e52" for l in labels]
        ax.barh(labels, vals, color=colors)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.invert_yaxis()
        ax.set_xlabel("speed relative to CUB (higher is better)")
        ax.set_title(f"tile-shape and look-back-delay tuning at n = {size_label(tune[0]['n'])}, {device}")
        ax.tick_params(axis="y", labelsize=7)
        save(fig, "tuning.png")
    return written


def markdown_tables(rows, tune_rows):
    main = [r for r in rows if kind(r) == "main"]
    lines = []
    device = device_of(rows)
    sha = next((r["git_sha"] for r in rows), "unknown")
    copy_gbs = copy_bandwidth(rows)
    lines.append(f"Device: **{device}**, CUDA {rows[0]['cuda'] if rows else '?'}, commit `{sha}`"
                 + (f", measured copy bandwidth **{copy_gbs:.0f} GB/s** (read + write)." if copy_gbs else "."))
    lines.append("")
    for op in OrderedDict.fromkeys(r["params_d"].get("op") for r in main):
        op_rows = [r for r in main if r["params_d"].get("op") == op]
        n = max(r["n"] for r in op_rows)
        unit = next((r["metric_unit"] for r in op_rows if r["metric_unit"]), "")
        lines.append(f"**{op}, n = {size_label(n)}**")
        lines.append("")
        lines.append(f"| version | idea | median ms | {unit} | % of copy | x CPU | x prev | x CUB | predicted ms | check |")
        lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in op_rows:
            if r["n"] != n:
                continue
            lines.append(f"| `{r['version']}` | {r['idea']} | {fmt(r['median_ms'], 3)} | {fmt(r['metric'], 0)} | "
                         f"{fmt(r['pct_of_ceiling'], 1)} | {fmt(r['speedup_vs_cpu'], 1)} | {fmt(r['speedup_vs_prev'])} | "
                         f"{fmt(r['speedup_vs_library'])} | {fmt(r['predicted_ms'], 3)} | {r['passed']} |")
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
            lines.append(f"| `{name}` | {fmt(v.get('map'), 3)} | {fmt(v.get('scan'), 3)} | {fmt(v.get('scatter'), 3)} |")
        lines.append("")
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
        lines.append(f"**tuning, n = {size_label(tune[0]['n'])}** (`stream_compaction_tune`; shape = threads x items "
                     "per thread, d = look-back delays in ns before the first poll / between polls)")
        lines.append("")
        lines.append("| candidate | median ms | GB/s | % of copy | x CUB |")
        lines.append("|---|---:|---:|---:|---:|")
        for r in tune:
            lines.append(f"| `{r['version']}` | {fmt(r['median_ms'], 4)} | {fmt(r['metric'], 0)} | "
                         f"{fmt(r['pct_of_ceiling'], 1)} | {fmt(r['speedup_vs_library'])} |")
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# nbody

NB_KINDS = {"version": "step", "batch_file": "batch"}


def nb_kind(r):
    return NB_KINDS.get(r.get("kind"), r.get("kind"))


def nbody_ceilings(rows, tune_rows):
    """FP32 FMA peak and issue ceiling in G interactions/s, from the run's meta record."""
    m = meta(rows) or meta(tune_rows)
    fma = m["fp32_fma_peak"] / m["flops_per_interaction"] if "fp32_fma_peak" in m else None
    return fma, m.get("issue_ceiling")


def nbody_plots(rows, tune_rows, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    save = make_saver(plt, out, written)

    device = device_of(rows)
    fma, issue = nbody_ceilings(rows, tune_rows)
    step = [r for r in rows if nb_kind(r) == "step" and timed(r)]
    if step:
        sizes = sorted({r["n"] for r in step})
        fig, axes = plt.subplots(1, min(2, len(sizes)), figsize=(12, 5), squeeze=False)
        for ax, n in zip(axes[0], sizes[-2:]):
            rs = [r for r in step if r["n"] == n]
            ax.bar([r["version"] for r in rs], [r["metric"] for r in rs],
                   color=["#999999" if "cpu" in r["version"] else "#4c72b0" for r in rs])
            if fma:
                ax.axhline(fma, color="black", linestyle=":", label=f"FP32 FMA peak / 20 FLOP = {fma:.0f}")
            if issue:
                ax.axhline(issue, color="#c44e52", linestyle="--", label=f"issue ceiling ({meta(rows or tune_rows).get('instructions_per_interaction', 0):g} instr.) = {issue:.0f}")
            ax.set_ylabel("G interactions / s")
            ax.set_title(f"n = {size_label(n)}")
            ax.legend(fontsize=8)
            plt.setp(ax.get_xticklabels(), rotation=30, ha="right", fontsize=8)
        fig.suptitle(f"nbody: interactions per second on {device}")
        save(fig, "interactions.png")

        fig, ax = plt.subplots(figsize=(8, 5.5))
        for name in OrderedDict.fromkeys(r["version"] for r in step):
            rs = sorted([r for r in step if r["version"] == name], key=lambda r: r["n"])
            ax.plot([r["n"] for r in rs], [r["median_ms"] for r in rs], marker="o", ms=3, label=name,
                    linestyle="--" if "cpu" in name else "-")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("N (bodies)")
        ax.set_ylabel("ms per step")
        ax.set_title(f"nbody: time per step vs N on {device}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, "time_vs_n.png")

    files = [r for r in rows if nb_kind(r) == "batch" and "file" in r["params_d"] and timed(r)]
    if files:
        fig, ax = plt.subplots(figsize=(9, 4.8))
        for pipe in OrderedDict.fromkeys(r["params_d"]["pipeline"] for r in files):
            rs = sorted([r for r in files if r["params_d"]["pipeline"] == pipe], key=lambda r: int(r["params_d"]["file"]))
            ax.plot([int(r["params_d"]["file"]) for r in rs], [r["median_ms"] for r in rs], marker="o",
                    label=f"{pipe} ({rs[0]['params_d'].get('gpus', '1')} GPU)")
        ax.axhline(433, color="#999999", linestyle=":", label="seed, GTX 1650: ~433 ms/file")
        ax.axhline(83, color="#666666", linestyle="--", label="seed, RTX 4060 Ti: ~83 ms/file")
        ax.set_yscale("log")
        ax.set_xlabel("snapshot")
        ax.set_ylabel("ms (read + compute + write)")
        ax.set_title(f"19-snapshot batch, {files[0]['n']} bodies x {files[0]['params_d'].get('steps')} steps, {device}")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        save(fig, "batch_per_snapshot.png")

    scaling = [r for r in rows if nb_kind(r) == "scaling" and timed(r)]
    if scaling:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for n in sorted({r["n"] for r in scaling}):
            rs = sorted([r for r in scaling if r["n"] == n], key=lambda r: int(r["params_d"]["gpus"]))
            ax.plot([int(r["params_d"]["gpus"]) for r in rs], [r["metric"] for r in rs], marker="o", label=f"N = {size_label(n)}")
        ax.set_xlabel("GPUs")
        ax.set_ylabel("G interactions / s")
        ax.set_title(f"multi-GPU scaling (NCCL all-gather per step), {device}")
        ax.legend()
        ax.grid(True, alpha=0.3)
        save(fig, "multi_gpu_scaling.png")

    drift = [r for r in rows if nb_kind(r) == "drift" and r["passed"] == "PASS"]
    if drift:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for integ in OrderedDict.fromkeys(r["params_d"]["integrator"] for r in drift):
            rs = sorted([r for r in drift if r["params_d"]["integrator"] == integ], key=lambda r: int(r["params_d"]["step"]))
            ax.plot([int(r["params_d"]["step"]) for r in rs], [r["metric"] for r in rs], marker="o", ms=3, label=integ)
        ax.set_yscale("log")
        ax.set_xlabel(f"steps (dt = {meta(rows).get('dt', math.nan):g})")
        ax.set_ylabel("|E - E0| / |E0|")
        ax.set_title(f"energy drift per integrator, N = {drift[0]['n']} Plummer sphere")
        ax.legend()
        ax.grid(True, which="both", alpha=0.3)
        save(fig, "energy_drift.png")

    tune = [r for r in tune_rows if timed(r)]
    if tune:
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
    return written


def nbody_tables(rows, tune_rows):
    lines = []
    device = device_of(rows)
    sha = next((r["git_sha"] for r in rows), "unknown")
    fma, issue = nbody_ceilings(rows, tune_rows)
    lines.append(f"Device: **{device}**, CUDA {rows[0]['cuda']}, commit `{sha}`."
                 + (f" Measured FP32 FMA peak / 20 FLOP = **{fma:.0f} G interactions/s**;" if fma else "")
                 + (f" issue ceiling at {meta(rows or tune_rows).get('instructions_per_interaction', 0):g} instructions per interaction = **{issue:.0f} G interactions/s**." if issue else ""))
    lines.append("")
    step = [r for r in rows if nb_kind(r) == "step"]
    for n in sorted({r["n"] for r in step})[-3:]:
        lines.append(f"**one symplectic step, N = {size_label(n)}** (x prev: over the row above; x OpenMP: over all cores of the host CPU)")
        lines.append("")
        lines.append("| version | idea | ms / step | G inter./s | GFLOP/s (20/inter.) | % FMA peak | x prev | x OpenMP | predicted ms | check |")
        lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in step:
            if r["n"] != n:
                continue
            gflops = r["metric"] * 20 if not math.isnan(r["metric"]) else math.nan
            lines.append(f"| `{r['version']}` | {r['idea']} | {fmt(r['median_ms'], 3)} | {fmt(r['metric'], 1)} | "
                         f"{fmt(gflops, 0)} | {fmt(r['pct_of_ceiling'], 1)} | {fmt(r['speedup_vs_prev'])} | "
                         f"{fmt(r['speedup_vs_library'], 1)} | {fmt(r['predicted_ms'], 3)} | {r['passed']} |")
        lines.append("")
    batch = [r for r in rows if nb_kind(r) == "batch" and "file" not in r["params_d"]]
    if batch:
        b0 = batch[0]["params_d"]
        lines.append(f"**the seed workload: {b0.get('files')} snapshots x {batch[0]['n']} bodies x {b0.get('steps')} steps, "
                     "end to end (read CSV, upload, integrate, download, write CSV)**")
        lines.append("")
        lines.append("| pipeline | GPUs | ms per snapshot | G inter./s overall | check |")
        lines.append("|---|---:|---:|---:|---|")
        for r in batch:
            lines.append(f"| {r['params_d'].get('pipeline', '-')} | {r['params_d'].get('gpus', '-')} | {fmt(r['median_ms'], 1)} | "
                         f"{fmt(r['metric'], 0)} | {r['passed']} |")
        lines.append("| seed: GTX 1650 | 1 | ~433 | | |")
        lines.append("| seed: RTX 4060 Ti | 1 | ~83 | | |")
        lines.append("")
    scaling = [r for r in rows if nb_kind(r) == "scaling"]
    if scaling:
        lines.append("**multi-GPU scaling** (one symplectic step; x 1 GPU: over the best kernel on one GPU without NCCL)")
        lines.append("")
        lines.append("| N | GPUs | ms / step | G inter./s | x 1 GPU | check |")
        lines.append("|---:|---:|---:|---:|---:|---|")
        for r in scaling:
            lines.append(f"| {size_label(r['n'])} | {r['params_d'].get('gpus', '-')} | {fmt(r['median_ms'], 2)} | {fmt(r['metric'], 0)} | "
                         f"{fmt(r['speedup_vs_prev'])} | {r['passed']} |")
        lines.append("")
    drift = [r for r in rows if nb_kind(r) == "drift" and r["passed"] == "PASS"]
    if drift:
        last = max(int(r["params_d"]["step"]) for r in drift)
        lines.append(f"**energy drift |E - E0| / |E0| after {last} steps, N = {drift[0]['n']}, dt = {meta(rows).get('dt', math.nan):g}**: " + ", ".join(
            f"{r['params_d']['integrator']} {r['metric']:.2e}" for r in drift if int(r['params_d']['step']) == last))
        lines.append("")
    tune = [r for r in tune_rows if timed(r)]
    if tune:
        lines.append("**v8 shapes** (`nbody --mode tune`; % of the issue ceiling)")
        lines.append("")
        lines.append("| shape | N | ms / step | G inter./s | % issue ceiling |")
        lines.append("|---|---:|---:|---:|---:|")
        for r in tune:
            lines.append(f"| {r['params_d']['shape']} | {size_label(r['n'])} | {fmt(r['median_ms'], 3)} | {fmt(r['metric'], 0)} | "
                         f"{fmt(r['pct_of_ceiling'], 1)} |")
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# ground_seg

def ground_seg_plots(rows, tune_rows, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    save = make_saver(plt, out, written)
    m = meta(rows)
    hist = [r for r in rows if r["kind"] == "histogram"]
    if hist:
        inputs = list(OrderedDict.fromkeys(r["params_d"]["input"] for r in hist))
        shown = [i for i in inputs if not i.startswith("sim")][:1] + [i for i in inputs if i.startswith("sim")][:1]
        fig, ax = plt.subplots(figsize=(9, 4.5))
        width = 0.8 / max(1, len(shown))
        for k, name in enumerate(shown):
            rs = [r for r in hist if r["params_d"]["input"] == name and r["params_d"]["points_per_cell"] != "0"]
            ax.bar([i + k * width for i in range(len(rs))], [r["metric"] for r in rs], width, label=name)
            ax.set_xticks([i + width * (len(shown) - 1) / 2 for i in range(len(rs))])
            ax.set_xticklabels([r["params_d"]["points_per_cell"] for r in rs], rotation=30)
        ax.set_yscale("log")
        ax.set_xlabel("points in the cell")
        ax.set_ylabel("non-empty cells")
        ax.set_title(f"grid population ({m.get('cell', math.nan):g} m cells)")
        ax.legend()
        save(fig, "grid_population.png")
    acc = [r for r in rows if r["kind"] == "version" and "precision" in r["m"]]
    if acc:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        names = list(OrderedDict.fromkeys(r["params_d"]["input"] for r in acc))
        for k, rule in enumerate(["seed", "improved"]):
            pick = [next((r for r in acc if r["params_d"]["input"] == n and r["params_d"]["rule"] == rule), None) for n in names]
            pts = [(r["m"]["recall"], r["m"]["precision"], n) for r, n in zip(pick, names) if r]
            ax.scatter([x for x, _, _ in pts], [y for _, y, _ in pts], marker="o" if rule == "seed" else "s", s=60,
                       label=f"{rule} rule")
            for x, y, n in pts:
                ax.annotate(n.replace("semantickitti_", "SK "), (x, y), fontsize=7, xytext=(4, 2), textcoords="offset points")
        ax.set_xlabel("recall of ground (%)")
        ax.set_ylabel("precision of ground (%)")
        ax.set_title("accuracy, seed vs improved rule (Patchwork++ convention)")
        ax.grid(True, alpha=0.3)
        ax.legend()
        save(fig, "accuracy.png")
    real = next((r["params_d"]["input"] for r in rows if "input" in r["params_d"] and not r["params_d"]["input"].startswith("sim")), None)
    frame = [r for r in rows if r["kind"] == "version" and r["params_d"].get("input") == real
             and r["params_d"].get("rule") == "seed" and timed(r)]
    target_us = m.get("target_frame", math.nan) * 1e3
    if frame:
        # a dot per version on a log axis (bars on a log axis would start from an arbitrary baseline)
        fig, ax = plt.subplots(figsize=(8, 0.5 * len(frame) + 1.8))
        ys = list(range(len(frame)))[::-1]
        us = [r["median_ms"] * 1e3 for r in frame]
        ax.scatter(us, ys, s=60, color=["#999999" if r["role"] == "reference" else "#c44e52" if r["role"] == "library"
                                         else "#4c72b0" for r in frame], zorder=3)
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
        ax.set_title(f"one {frame[0]['n']:,}-point frame, seed rule, {device_of(rows)}")
        save(fig, "end_to_end.png")
    phases = [r for r in rows if r["kind"] == "phase" and timed(r)]
    if phases:
        fig, ax = plt.subplots(figsize=(10, 3.8))
        left = 0.0
        cmap = plt.get_cmap("tab20")
        phased = f"{phases[0]['version']} (by phase)"
        for i, r in enumerate(phases):
            ax.barh([phased], [r["median_ms"] * 1e3], left=left, color=cmap(i % 20), label=r["params_d"]["phase"])
            left += r["median_ms"] * 1e3
        kern = next((r for r in rows if r["kind"] == "kernels" and r["params_d"].get("input") == real
                     and r["params_d"].get("rule") == "seed"), None)
        e2e = next((r for r in frame if kern and r["version"] == kern["version"]), None)
        if kern and e2e:
            label = f"{kern['version']} (one graph)"
            ax.barh([label], [kern["median_ms"] * 1e3], color="#2ca02c", label="graph: kernels")
            ax.barh([label], [(e2e["median_ms"] - kern["median_ms"]) * 1e3], left=kern["median_ms"] * 1e3,
                    color="#98df8a", label="graph: copies + launch")
        ax.set_xlabel("us per frame")
        ax.set_title("where a frame's time goes")
        ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.25))
        save(fig, "phases.png")
    streams = [r for r in rows if r["kind"] == "streams" and timed(r)]
    if streams:
        # two panels with zero-based axes instead of one plot with two offset y axes
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
        xs = [int(r["params_d"]["streams"]) for r in streams]
        ax.plot(xs, [r["metric"] for r in streams], marker="o", label="measured")
        if "target_rate" in m:
            ax.axhline(m["target_rate"], color="#c44e52", linestyle="--", label=f"target: {m['target_rate']:,.0f} frames/s")
        ax.legend(loc="lower right")
        ax2.plot(xs, [r["m"].get("latency", math.nan) * 1e3 for r in streams], marker="s", color="#555555")
        for a, ylabel, title in ((ax, "frames / s", f"{streams[0]['version']}: throughput"),
                                 (ax2, "median latency of a frame (us)", "latency: a frame waits for the frames ahead of it")):
            a.set_ylim(bottom=0)
            a.set_xscale("log", base=2)
            a.set_xticks(xs)
            a.set_xticklabels([str(x) for x in xs])
            a.set_xlabel("streams (frames in flight)")
            a.set_ylabel(ylabel)
            a.set_title(title)
            a.grid(True, alpha=0.3)
        save(fig, "streams.png")
    return written


def ground_seg_tables(rows, tune_rows):
    lines = []
    device = device_of(rows)
    sha = next((r["git_sha"] for r in rows), "unknown")
    lines.append(f"Run on: {device}, commit `{sha}`. Accuracy under the Patchwork++ convention; time is the median per "
                 "frame; x CPU against the reference, x lib against the library route (CUB).")
    lines.append("")
    lines.append("| input | rule | version | precision % | recall % | F1 % | IoU % | false ground | missed ground | ms / frame | x CPU | x prev | x lib | check |")
    lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in [r for r in rows if r["kind"] == "version"]:
        d, mm = r["params_d"], r["m"]
        lines.append(f"| {d['input']} | {d['rule']} | `{r['version']}` | {fmt(mm.get('precision'))} | {fmt(mm.get('recall'))} | "
                     f"{fmt(r['metric'])} | {fmt(mm.get('iou'))} | {fmt(mm.get('false_positives'), 0)} | "
                     f"{fmt(mm.get('false_negatives'), 0)} | {fmt(r['median_ms'], 3)} | {fmt(r['speedup_vs_cpu'], 1)} | "
                     f"{fmt(r['speedup_vs_prev'])} | {fmt(r['speedup_vs_library'])} | {r['passed']} |")
    lines.append("GPU times are end to end: host points in, labels out; v1-v3 allocate and copy per frame, v4 replays "
                 "a graph from pinned memory.")
    lines.append("")
    timing = [r for r in rows if r["kind"] in ("kernels", "from_vector")]
    if timing:
        lines.append(f"**{timing[0]['version']} in detail** (us per frame)")
        lines.append("")
        lines.append("| input | rule | measured | us | predicted us |")
        lines.append("|---|---|---|---:|---:|")
        for r in timing:
            d = r["params_d"]
            what = "kernels only (events inside the graph)" if r["kind"] == "kernels" else "end to end from a std::vector (copy into pinned memory included)"
            lines.append(f"| {d['input']} | {d['rule']} | {what} | {fmt(r['median_ms'] * 1e3, 1)} | {fmt(r['predicted_ms'] * 1e3, 1)} |")
        lines.append("")
    phases = [r for r in rows if r["kind"] == "phase" and timed(r)]
    if phases:
        lines.append(f"**{phases[0]['version']} per-phase table, {phases[0]['params_d']['input']}** (median of "
                     f"{phases[0]['samples']} frames; each phase synchronized; predicted: the stage's DRAM bytes over the "
                     "measured copy bandwidth plus its launches at the measured lone-launch latency)")
        lines.append("")
        lines.append("| phase | us | predicted us |")
        lines.append("|---|---:|---:|")
        for r in phases:
            lines.append(f"| {r['params_d']['phase']} | {fmt(r['median_ms'] * 1e3, 1)} | {fmt(r['predicted_ms'] * 1e3, 1)} |")
        lines.append("")
    streams = [r for r in rows if r["kind"] == "streams"]
    if streams:
        lines.append(f"**{streams[0]['version']} streamed frames** (one graph engine per stream, frames from pinned memory; "
                     "median of samples of many frames)")
        lines.append("")
        lines.append("| streams | frames / s | median latency us | samples | check |")
        lines.append("|---:|---:|---:|---:|---|")
        for r in streams:
            lines.append(f"| {r['params_d']['streams']} | {fmt(r['metric'], 0)} | {fmt(r['m'].get('latency', math.nan) * 1e3, 1)} | "
                         f"{r['samples']} | {r['passed']} |")
        lines.append("")
    hist = [r for r in rows if r["kind"] == "histogram"]
    if hist:
        first = hist[0]["params_d"]["input"]
        real = next((r["params_d"]["input"] for r in hist if not r["params_d"]["input"].startswith("sim")), first)
        rs = [r for r in hist if r["params_d"]["input"] == real]
        lines.append(f"**grid population, {real}** (cells by point count; the seed's section 1.1)")
        lines.append("")
        lines.append("| points per cell | " + " | ".join(r["params_d"]["points_per_cell"] for r in rs) + " |")
        lines.append("|---|" + "---:|" * len(rs))
        lines.append("| cells | " + " | ".join(f"{int(r['metric'])}" for r in rs) + " |")
        lines.append("")
    return "\n".join(lines)


def ndt_rows(rows, row_kind):
    """Rows of one kind; "align" is the per-version alignment table (kind "version")."""
    want = "version" if row_kind == "align" else row_kind
    return [r for r in rows if r.get("kind") == want]


def ndt_graph_plots(rows, tune_rows, out, trace_csv=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    save = make_saver(plt, out, written)
    dev = device_of(rows)
    align = [r for r in ndt_rows(rows, "align") if timed(r)]
    cases = list(OrderedDict.fromkeys(r["params_d"]["case"] for r in align))
    gpu = [r for r in align if "kernel_per_iteration" in r["m"]]
    if gpu:  # per-iteration time split: kernels vs the rest (launch, sync, transfers)
        case = next((c for c in cases if any(r["params_d"]["case"] == c for r in gpu) and not c.startswith("sim")),
                    gpu[0]["params_d"]["case"])
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
            ys = [next((r["median_ms"] for r in align if r["version"] == v and r["params_d"]["case"] == c), math.nan)
                  for c in cases]
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
        with open(trace_csv, newline="") as f:
            trace = list(csv.DictReader(f))
        for case in OrderedDict.fromkeys(t["case"] for t in trace):
            ts = [t for t in trace if t["case"] == case]
            fig, ax = plt.subplots(figsize=(8, 4.5))
            for k, v in enumerate(OrderedDict.fromkeys(t["version"] for t in ts)):
                vs = [t for t in ts if t["version"] == v]
                ax.plot([int(t["iteration"]) for t in vs], [float(t["likelihood"]) for t in vs],
                        linestyle="-" if k == 0 else "none", marker="" if k == 0 else "os^vD<>p"[k % 8],
                        markersize=9 - 0.7 * k, fillstyle="none", lw=3, alpha=0.5 if k == 0 else 1, label=v)
            ax.set_xlabel("Newton iteration")
            ax.set_ylabel("likelihood (score / source points)")
            ax.set_title(f"{case}: convergence, every version over the CPU reference")
            ax.legend(fontsize=8)
            save(fig, f"convergence_{case}.png")
    return written


def ndt_graph_tables(rows, tune_rows):
    dev = device_of(rows)
    sha = next((r["git_sha"] for r in rows if r["git_sha"]), "unknown")
    lines = [f"Measured on **{dev}** (commit {sha}). ms per alignment includes the source upload (the map is "
             "prebuilt); kernel/other split the time per Newton iteration by the kernels' device timer; "
             "'% launch floor' is two lone-launch latencies per evaluation over the measured time.", ""]
    align = ndt_rows(rows, "align")
    for case in OrderedDict.fromkeys(r["params_d"]["case"] for r in align):
        rs = [r for r in align if r["params_d"]["case"] == case]
        lines.append(f"**{case}** ({rs[0]['n']:,} source points)")
        lines.append("")
        lines.append("| version | iterations | ms / alignment | us / iteration | kernel us / it | other us / it | "
                     "% launch floor | x cpu | x prev | x pcl | error vs reference | check |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
        for r in rs:
            p = r["m"]
            err = (f"{p['err_ref']:.4f} cm / {p['err_ref_rotation']:.5f} deg" if "err_ref" in p else
                   f"PCL: {p['err_pcl']:.4f} cm / {p['err_pcl_rotation']:.5f} deg" if "err_pcl" in p else
                   f"truth: {p['err_truth']:.3f} cm" if "err_truth" in p else "-")
            lines.append(f"| {r['version']} | {fmt(p.get('iterations'), 0)} | {fmt(r['median_ms'], 3)} | {fmt(r['metric'], 1)} | "
                         f"{fmt(p.get('kernel_per_iteration'))} | {fmt(p.get('other_per_iteration'))} | "
                         f"{fmt(r['pct_of_ceiling'], 1)} | {fmt(r['speedup_vs_cpu'], 1)} | {fmt(r['speedup_vs_prev'], 2)} | "
                         f"{fmt(r['speedup_vs_library'], 1)} | {err} | {r['passed'][:60]} |")
        lines.append("")
    other = ndt_rows(rows, "map_build") + ndt_rows(rows, "filter")
    if other:
        lines.append("**map build and filter** (GPU rows: device time, the upload excluded)")
        lines.append("")
        lines.append("| case | what | version | points | ms | Mpts/s | x cpu | check |")
        lines.append("|---|---|---|---:|---:|---:|---:|---|")
        for r in other:
            lines.append(f"| {r['params_d']['case']} | {r['kind']} | {r['version']} | {r['n']:,} | "
                         f"{fmt(r['median_ms'], 3)} | {fmt(r['metric'], 1)} | {fmt(r['speedup_vs_cpu'], 1)} | {r['passed'][:50]} |")
        lines.append("")
    batch = ndt_rows(rows, "batch")
    if batch:
        lines.append(f"**batched alignments** ({batch[0]['params_d']['case']}, {batch[0]['version']})")
        lines.append("")
        lines.append("| batch | ms per launch | alignments/s | check |")
        lines.append("|---:|---:|---:|---|")
        for r in batch:
            lines.append(f"| {r['params_d']['batch']} | {fmt(r['median_ms'], 3)} | {fmt(r['metric'], 0)} | {r['passed'][:50]} |")
        lines.append("")
    for r in ndt_rows(rows, "hypotheses"):
        p, mm = r["params_d"], r["m"]
        lines.append(f"**multi-hypothesis search** ({p['case']}, {p['hypotheses']} guesses around one 2 m / 30 deg off "
                     f"PCL's answer): a single alignment ends {mm.get('single_err', math.nan):.2f} cm / "
                     f"{mm.get('single_err_rotation', math.nan):.3f} deg off, the best hypothesis "
                     f"{mm.get('best_err', math.nan):.3f} cm / {mm.get('best_err_rotation', math.nan):.4f} deg; {fmt(r['median_ms'], 1)} ms "
                     f"for all ({fmt(r['metric'], 0)} alignments/s), {r['passed'][:40]}.")
        lines.append("")
    return "\n".join(lines)


def update_readme(path, text):
    begin, end = "<!-- BEGIN GENERATED RESULTS -->", "<!-- END GENERATED RESULTS -->"
    with open(path) as f:
        content = f.read()
    if begin not in content or end not in content:
        sys.exit(f"plot.py: {path} has no '{begin}' ... '{end}' markers")
    content = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda m: f"{begin}\n{text}\n{end}", content,
                     flags=re.S)
    def write(tmp):
        with open(tmp, "w") as f:
            f.write(content)

    replace_atomically(path, write)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True, help="driver CSV")
    ap.add_argument("--tune-csv", help="stream_compaction_tune CSV")
    ap.add_argument("--out", required=True, help="folder for the PNG files")
    ap.add_argument("--readme", help="README whose generated-results section is rewritten")
    ap.add_argument("--trace-csv", help="ndt_graph per-iteration trace CSV (convergence plots)")
    a = ap.parse_args()
    for p in filter(None, [a.csv, a.tune_csv]):
        if not os.path.isfile(p):
            sys.exit(f"plot.py: no CSV at '{p}'")
    rows = read_rows(a.csv)
    tune_rows = read_rows(a.tune_csv) if a.tune_csv else []
    if not rows:
        sys.exit(f"plot.py: '{a.csv}' has no rows")
    sub = rows[0]["subproject"]
    tables = {"nbody": nbody_tables, "ground_seg": ground_seg_tables, "ndt_graph": ndt_graph_tables}.get(sub, markdown_tables)
    drawers = {"nbody": nbody_plots, "ground_seg": ground_seg_plots,
               "ndt_graph": lambda r, t, o: ndt_graph_plots(r, t, o, a.trace_csv)}.get(sub, plots)
    if a.readme:
        update_readme(a.readme, tables(rows, tune_rows))
        print(f"plot.py: tables written into {a.readme}")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        sys.exit("plot.py: matplotlib is missing, so no plots were drawn. Install it with\n"
                 "    python3 -m pip install -r requirements.txt\n"
                 f"then run: python3 scripts/plot.py --csv {a.csv} --out {a.out}")
    for p in drawers(rows, tune_rows, a.out):
        print(f"plot.py: wrote {p}")


if __name__ == "__main__":
    main()
