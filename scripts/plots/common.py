"""Shared helpers of the plot modules: reading the drivers' CSV (kinds, roles, named metrics,
the meta record), formatting, atomic file writes, the README's generated section, a fixed colour
per version and the ladder plot every sub-project draws."""

from __future__ import annotations

import math
import os
import re
import sys
from collections import OrderedDict
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, List, Tuple

import course_csv
from course_csv import Row

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# save(fig, name): what make_saver returns and every plot function draws through
Saver = Callable[["Figure", str], None]
# a ladder panel: (title, rows, rate label, rate(row), extra lines [(value, label)])
Panel = Tuple[str, List[Row], str, Callable[[Row], float], List[Tuple[float, str]]]


def read_rows(path: str) -> list[Row]:
    return course_csv.read_rows(path)


parse_metrics = course_csv.parse_metrics
meta = course_csv.meta


def timed(r: Row) -> bool:
    return course_csv.is_pass(r) and not math.isnan(r["median_ms"])


def size_label(n: int) -> str:
    """A size as the course writes it: 2^k, 2^k-3 or 2^k+d (the nearest power of two below, d < 100),
    else the number (61 is 2^6-3, not 2^3+53)."""
    if n >= 5 and (n + 3) & (n + 2) == 0 and (n + 3).bit_length() - 1 >= 3:
        return f"2^{(n + 3).bit_length() - 1}-3"
    k = n.bit_length() - 1 if n > 0 else 0
    if k >= 3 and n == 1 << k:
        return f"2^{k}"
    if k >= 3 and n - (1 << k) < 100:
        return f"2^{k}+{n - (1 << k)}"
    return str(n)


def copy_bandwidth(rows: list[Row]) -> float:
    return meta(rows).get("copy_bandwidth")


def fmt(x: float | None, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}f}"


def device_of(rows: list[Row]) -> str:
    return next((r["device"] for r in rows if r["device"] and not r["device"].startswith("none")), "CPU only")


def replace_atomically(path: str, write: Callable[[str], None]) -> None:
    """write(tmp_path) into a unique temporary next to `path`, fsync it, rename it over `path`:
    the file is complete or untouched, never half-written."""
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


def make_saver(plt: ModuleType, out: str, written: list[str]) -> Saver:
    """save(fig, name): tight layout, write PNG into out, close, remember the path."""
    os.makedirs(out, exist_ok=True)

    def save(fig: Figure, name: str) -> None:
        fig.tight_layout()
        path = os.path.join(out, name)
        replace_atomically(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
        plt.close(fig)
        written.append(path)

    return save


def update_readme(path: str, text: str, section: str = "RESULTS") -> None:
    """Replace what stands between the README's <!-- BEGIN GENERATED {section} --> and
    <!-- END GENERATED {section} --> markers with text."""
    begin, end = f"<!-- BEGIN GENERATED {section} -->", f"<!-- END GENERATED {section} -->"
    with open(path) as f:
        content = f.read()
    if begin not in content or end not in content:
        sys.exit(f"plot.py: {path} has no '{begin}' ... '{end}' markers")
    content = re.sub(
        re.escape(begin) + ".*?" + re.escape(end), lambda m: f"{begin}\n{text}\n{end}", content, flags=re.S
    )

    def write(tmp: str) -> None:
        with open(tmp, "w") as f:
            f.write(content)

    replace_atomically(path, write)


# A fixed colour per version: the reference grey, the library black, the ladder's steps through one
# palette in registry order (the order the version rows first appear in the CSV).
REFERENCE_COLOR, LIBRARY_COLOR = "#9a9a9a", "#222222"
STEP_COLORS = [
    "#4c72b0",
    "#dd8452",
    "#55a868",
    "#8172b3",
    "#937860",
    "#da8bc3",
    "#64b5cd",
    "#ccb974",
    "#c44e52",
    "#2ca02c",
    "#17becf",
    "#7f7f7f",
]


def _ladder_cell(
    rows: list[Row],
) -> tuple[str, str, str]:
    """(n, predicted, measured) of a version's headline row: its largest timed n, the "version"
    rows first; else ("", "", its verdict) when nothing of it was timed."""
    timed_rows = [r for r in rows if timed(r)]
    if not timed_rows:
        why = rows[0]["status"].value + (": " + rows[0]["detail"] if rows[0]["detail"] else "") if rows else "not run"
        return "", "", why
    best = max(timed_rows, key=lambda r: (r["kind"] == "version", r["n"]))
    pred = best["predicted_ms"]
    return size_label(best["n"]), "" if math.isnan(pred) else f"{pred:.4g} ms", f"{best['median_ms']:.4g} ms"


def ladder_table(registry: list[dict], rows: list[dict]) -> str:
    """The README's ladder, one line per registry entry in registry order: id, version, file,
    idea, and from the run's CSV the headline row's size, predicted and measured time."""
    by_version: dict[str, list[dict]] = {}
    for r in rows:
        if r["kind"] != "meta":
            by_version.setdefault(r["version"], []).append(r)
    out = [
        "| id | version | file | idea | n | predicted | measured |",
        "|---|---|---|---|---|---|---|",
    ]
    for v in registry:
        n, pred, meas = _ladder_cell(by_version.get(v["version"], []))
        idea = v["idea"].replace("|", "\\|")
        role = "" if v["role"] == "version" else f" ({v['role']})"
        needs = f" [needs {v['needs']}]" if v["needs"] else ""
        link = f"[{v['file']}]({v['file']})"
        out.append(f"| {v['id']} | `{v['version']}`{role} | {link} | {idea}{needs} | {n} | {pred} | {meas} |")
    return "\n".join(out)


def step_of(r: Row) -> str:
    """The step a version row stands for: its name without the operation's prefix where the row
    names one (scan_naive and compact_naive are the same step), else its name."""
    op = r.get("params_d", {}).get("op")
    name = r["version"]
    return name[len(op) + 1 :] if op and name.startswith(op + "_") else name


def version_colors(rows: list[Row]) -> dict[str, str]:
    """{version: colour}, the same for every plot drawn from these rows and the same for one step
    across operations."""
    roles, step_color = OrderedDict(), {}
    for r in rows:
        if r.get("kind") == "version" and r.get("version"):
            roles.setdefault(r["version"], (r.get("role") or "version", step_of(r)))
    colors = {}
    for name, (role, step) in roles.items():
        if role == "reference":
            colors[name] = REFERENCE_COLOR
        elif role == "library":
            colors[name] = LIBRARY_COLOR
        else:
            if step not in step_color:
                step_color[step] = STEP_COLORS[len(step_color) % len(STEP_COLORS)]
            colors[name] = step_color[step]
    return colors


def role_style(r: Row) -> str:
    """Line style by role: the CPU reference and the library dashed, the ladder's steps solid."""
    return "--" if r.get("role") in ("reference", "library") else "-"


def version_lines(ax: Any, by_version: dict[str, list[Row]], colors: dict[str, str], y: Callable[[Row], float]) -> None:
    """One line per version against n (its rows in order of n), in the version's colour, dashed for
    the reference and the library."""
    for name, rs in by_version.items():
        rs = sorted(rs, key=lambda r: r["n"])
        ax.plot(
            [r["n"] for r in rs],
            [y(r) for r in rs],
            marker="o",
            ms=3,
            label=name,
            color=colors.get(name),
            linestyle=role_style(rs[0]) if rs else "-",
        )


def _predicted_markers(ax: Any, pred: list[tuple[int, float]], limit: float) -> None:
    """The cost model's speed per bar as a hollow diamond (a triangle at the top edge when above the axis)."""
    inside = [(x, y) for x, y in pred if y <= limit]
    above = [(x, limit * 0.97) for x, y in pred if y > limit]
    for points, marker, label in (
        (inside, "D", "predicted by the cost model"),
        (above, "^", "predicted, above the axis"),
    ):
        if points:
            ax.scatter(
                [x for x, _ in points],
                [y for _, y in points],
                marker=marker,
                s=46,
                facecolors="none",
                edgecolors="black",
                zorder=4,
                label=label,
            )


def _ceiling(rs: list[Row], rate: Callable[[Row], float]) -> tuple[float | None, str]:
    """The measured ceiling as a rate (the median over the panel's rows that state one) and its name."""
    ceilings = [rate(r) * 100 / r["pct_of_ceiling"] for r in rs if r["pct_of_ceiling"] > 0]
    ceiling = sorted(ceilings)[len(ceilings) // 2] if ceilings else None
    return ceiling, next((r["ceiling"] for r in rs if r.get("ceiling")), "")


def _ladder_panel(ax: Any, panel: Panel, colors: dict[str, str]) -> None:
    title, rows, rate_label, rate, extra = panel
    rs = [r for r in rows if timed(r)]
    xs = list(range(len(rs)))
    vals = [rate(r) for r in rs]
    ax.bar(xs, vals, color=[colors.get(r["version"], STEP_COLORS[0]) for r in rs], zorder=2)
    ceiling, ceiling_name = _ceiling(rs, rate)
    limit = 1.18 * max([*vals, ceiling or 0, *(value for value, _ in extra)])
    pred = [(x, rate(r) * r["median_ms"] / r["predicted_ms"]) for x, r in zip(xs, rs) if r["predicted_ms"] > 0]
    if pred:
        _predicted_markers(ax, pred, limit)
    if ceiling:
        ax.axhline(
            ceiling,
            color="#c44e52",
            linestyle="--",
            zorder=3,
            label=f"measured ceiling ({ceiling_name.replace('_', ' ')}): {fmt(ceiling, 1)}",
        )
    lib = next((r for r in rs if r.get("role") == "library"), None)
    if lib:
        ax.axhline(rate(lib), color=LIBRARY_COLOR, linestyle=":", zorder=3, label=f"library ({lib['version']})")
    for value, label in extra:
        ax.axhline(value, color="#8172b3", linestyle="-.", zorder=3, label=label)
    for x, v in zip(xs, vals):
        ax.annotate(
            fmt(v, 2 if v < 10 else 1 if v < 100 else 0),
            (x, v),
            ha="center",
            va="bottom",
            fontsize=7,
            xytext=(0, 2),
            textcoords="offset points",
        )
    ax.set_xticks(xs)
    ax.set_xticklabels([r["version"] for r in rs], rotation=25, ha="right", fontsize=8)
    ax.set_ylim(0, limit)
    ax.set_ylabel(rate_label)
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3, zorder=0)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def ladder_plot(
    plt: ModuleType, save: Saver, panels: list[Panel], colors: dict[str, str], name: str, suptitle: str
) -> None:
    """The ladder: per panel, one bar per version (registry order) at the headline size, its speed as
    a rate (higher is better, so bars start from zero on a linear axis), the speed its cost model
    predicts as a hollow diamond, the measured ceiling as a dashed line and the library baseline as a
    dotted line. panels: [(title, rows, rate_label, rate(row), extra_lines)], extra_lines:
    [(value, label)] (targets) drawn dash-dotted."""
    panels = [p for p in panels if any(timed(r) for r in p[1])]
    if not panels:
        return
    width = max(6.0, max(0.75 * len([r for r in p[1] if timed(r)]) + 2.5 for p in panels)) + 3.5
    fig, axes = plt.subplots(len(panels), 1, figsize=(width, 4.6 * len(panels)), squeeze=False)
    for ax, panel in zip(axes[:, 0], panels):
        _ladder_panel(ax, panel, colors)
    fig.suptitle(suptitle)
    save(fig, name)
