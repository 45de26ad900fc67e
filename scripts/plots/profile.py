"""The profile of every GPU version (a driver's `--profile`: rows of kind "profile", common/profile.hpp),
as the README table and one plot, the same for every sub-project. Everything shown comes from the
rows: the kernels' summed time, DRAM throughput and its share of the measured copy bandwidth,
occupancy, registers, spills, shared memory, the two largest stall reasons (metrics named
"stall.<reason>") and the heaviest kernel ("heaviest.<kernel>")."""

from __future__ import annotations

import math
from types import ModuleType

import course_csv
from course_csv import Row

from .common import Saver, device_of, fmt, version_colors

# what the README says where a run has no profile rows (a fresh tree, a run without a GPU)
NOT_PROFILED = (
    "_No profile yet: `scripts/run_all.sh` profiles every GPU version with `<driver> --profile` on a GPU "
    "(Nsight Compute's `ncu` on PATH or in `$COURSE_NCU`)._"
)


def profile_rows(rows: list[Row]) -> list[Row]:
    return [r for r in rows if r.get("kind") == "profile"]


def profiled(r: Row) -> bool:
    """A profile row whose version was profiled (the others say why not)."""
    return r.get("kind") == "profile" and course_csv.is_pass(r)


def stalls(r: Row) -> list[tuple[str, float]]:
    """The row's largest stall reasons, largest first: [(reason, cycles per issued instruction)]."""
    out = [(k[len("stall.") :], v) for k, v in r["m"].items() if k.startswith("stall.")]
    return sorted(out, key=lambda kv: -kv[1] if not math.isnan(kv[1]) else 0.0)


def heaviest(r: Row) -> tuple[str, float] | None:
    """(kernel, % of the version's kernel time) of its longest kernel, if the row names one."""
    return next(((k[len("heaviest.") :], v) for k, v in r["m"].items() if k.startswith("heaviest.")), None)


def cases(rows: list[Row]) -> list[tuple[str, list[str]]]:
    """The profile cases, each with the versions profiled on it: [(driver arguments, [version])]."""
    out: dict[str, list[str]] = {}
    for r in rows:
        args = r["params_d"].get("args")
        if args is not None:
            out.setdefault(args, []).append(r["version"])
    return list(out.items())


def _row_line(r: Row) -> str:
    m = r["m"]
    if not profiled(r):
        return f"| `{r['version']}` | {course_csv.status_text(r)} |" + " |" * 9
    occ = f"{fmt(m.get('achieved_occupancy'), 1)} / {fmt(m.get('theoretical_occupancy'), 1)}"
    stall_text = ", ".join(f"{reason} {fmt(v)}" for reason, v in stalls(r)) or "-"
    heavy = heaviest(r)
    heavy_text = f"`{heavy[0]}` {fmt(heavy[1], 0)}%" if heavy else "-"
    whole = " (whole graphs)" if r["params_d"].get("graphs") == "whole" else ""
    return (
        f"| `{r['version']}`{whole} | {fmt(m.get('kernels'), 0)} | {fmt(m.get('duration'), 4)} | "
        f"{fmt(r['metric'], 1)} | "
        f"{fmt(r['pct_of_ceiling'], 1)} | {occ} | {fmt(m.get('registers'), 0)} | {fmt(m.get('spill_instructions'), 0)} "
        f"| {fmt(m.get('shared_memory'), 0)} | {stall_text} | {heavy_text} |"
    )


def markdown(rows: list[Row], image: str | None = None) -> str:
    """The README's profile block: where and how it was profiled, one line per version (its numbers,
    or its verdict), the profile cases, and the plot when `image` (its path from the README) is given."""
    prof = profile_rows(rows)
    if not prof:
        return NOT_PROFILED
    launches = next((r["params_d"].get("launches") for r in prof if r["params_d"].get("launches")), "?")
    sha = next((r["git_sha"] for r in prof), "unknown")
    intro = (
        f"Nsight Compute on {device_of(rows)}, commit `{sha}`: each version's first {launches} kernels inside its "
        "own NVTX range, caches flushed before each kernel (ncu's default), the card at its own clocks. Time is "
        "the kernels' summed duration: several runs of the version (its check, warm-up and timed run) up to the "
        f"{launches}-kernel cap, so compare the rates across versions (DRAM share, occupancy, stalls), not the "
        "times (the driver's tables time one run); DRAM is bytes read + written over that time and its share of the "
        "measured "
        "copy bandwidth; occupancy (achieved / theoretical) and stalls are weighted by each kernel's time; "
        "registers and shared memory are the most any kernel uses, spills the spill instructions executed."
    )
    if not any(map(profiled, prof)):
        intro = f"No version was profiled ({device_of(rows)}, commit `{sha}`): each row says why."
    lines = [
        intro,
        "",
        "| version | kernels | time (ms) | DRAM GB/s | % of copy | occupancy % (achieved / theoretical) | registers "
        "| spills | shared B / block | largest stalls (cycles per issue) | heaviest kernel |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    lines += [_row_line(r) for r in prof]
    lines.append("")
    if any(r["params_d"].get("graphs") == "whole" for r in prof):
        lines += [
            "_(whole graphs)_: the version's kernels run only inside a conditional WHILE graph node, which ncu "
            "does not profile node by node; it was profiled again with `--graph-profiling graph`, each result one "
            "whole graph launch (its kernels together), so its kernel count is graph launches.",
            "",
        ]
    driver = prof[0]["subproject"]
    for args, versions in cases(prof):
        who = f" ({', '.join(f'`{v}`' for v in versions)})" if len(cases(prof)) > 1 else ""
        lines.append(f"Profile case{who}: `{driver} {args} --version NAME`, each version under `ncu` on its own.")
    if image:
        lines += ["", f"![profile per version]({image})"]
    return "\n".join(lines)


def plot(plt: ModuleType, save: Saver, rows: list[Row], name: str = "profile.png") -> bool:
    """Three panels over the profiled versions (registry order): the kernels' summed time (log axis),
    DRAM throughput as % of the measured copy bandwidth, and achieved occupancy with the theoretical
    occupancy as a marker. Returns whether it drew anything (no profiled row: nothing)."""
    prof = [r for r in profile_rows(rows) if profiled(r)]
    if not prof:
        return False
    colors = version_colors([dict(r, kind="version") for r in prof])
    xs = list(range(len(prof)))
    bar_colors = [colors.get(r["version"]) for r in prof]
    fig, axes = plt.subplots(3, 1, figsize=(max(7.0, 0.6 * len(prof) + 3.0), 10.5), sharex=True)
    time_ax, dram_ax, occ_ax = axes
    time_ax.bar(xs, [r["m"].get("duration", math.nan) for r in prof], color=bar_colors, zorder=2)
    time_ax.set_yscale("log")
    time_ax.set_ylabel("kernel time (ms, log)")
    dram_ax.bar(xs, [r["pct_of_ceiling"] for r in prof], color=bar_colors, zorder=2)
    dram_ax.axhline(100, color="#c44e52", linestyle="--", zorder=3, label="measured copy bandwidth")
    dram_ax.set_ylabel("DRAM, % of copy bandwidth")
    dram_ax.legend(fontsize=7, loc="upper left")
    occ_ax.bar(xs, [r["m"].get("achieved_occupancy", math.nan) for r in prof], color=bar_colors, zorder=2)
    occ_ax.scatter(
        xs,
        [r["m"].get("theoretical_occupancy", math.nan) for r in prof],
        marker="_",
        s=400,
        color="black",
        zorder=4,
        label="theoretical",
    )
    occ_ax.set_ylim(0, 105)
    occ_ax.set_ylabel("achieved occupancy %")
    occ_ax.legend(fontsize=7, loc="upper left")
    for ax, values, digits in (
        (time_ax, [r["m"].get("duration", math.nan) for r in prof], 3),
        (dram_ax, [r["pct_of_ceiling"] for r in prof], 1),
        (occ_ax, [r["m"].get("achieved_occupancy", math.nan) for r in prof], 0),
    ):
        ax.grid(True, axis="y", alpha=0.3, zorder=0)
        for x, v in zip(xs, values):
            if not math.isnan(v):
                ax.annotate(fmt(v, digits), (x, v), ha="center", va="bottom", fontsize=7, xytext=(0, 2),
                            textcoords="offset points")  # fmt: skip
    occ_ax.set_xticks(xs)
    occ_ax.set_xticklabels([r["version"] for r in prof], rotation=30, ha="right", fontsize=8)
    fig.suptitle(f"{prof[0]['subproject']}: Nsight Compute profile per version ({device_of(rows)})")
    save(fig, name)
    return True
