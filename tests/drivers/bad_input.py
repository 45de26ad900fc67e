#!/usr/bin/env python3
"""Hostile and careless input to the four drivers, as a student would type it.

Each case runs one driver and checks its exit status (2: usage error, 1: bad input or a failed
check, 0: success) and that the message names the flag or file and the reason. A crash (a signal,
status >= 128 or < 0) fails every case. Cases that need a GPU say SKIP on a machine without one.

usage: bad_input.py [--stream-compaction BIN] [--nbody BIN] [--ground-seg BIN] [--ndt-graph BIN] --work DIR
(a handout holds only its assignment's drivers: the cases of a driver not given are skipped, said so)
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass

failures = []
passed = 0
skipped = 0


def run(binary, args, env=None, cwd=None, timeout=600):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([binary] + args, capture_output=True, text=True, env=e, cwd=cwd, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def case(name, binary, args, rc, *needles, env=None, cwd=None):
    """Runs one case; `needles` must all appear in the output (case-sensitive)."""
    global passed
    if binary is None:
        skip(name, "this tree does not hold that driver")
        return 0, ""
    code, out = run(binary, args, env=env, cwd=cwd)
    problems = []
    if code < 0 or code >= 128:
        problems.append(f"crashed (status {code})")
    elif code != rc:
        problems.append(f"exit status {code}, expected {rc}")
    for n in needles:
        if n not in out:
            problems.append(f"no '{n}' in the output")
    if problems:
        failures.append(
            f"{name}: {'; '.join(problems)}\n  command: {os.path.basename(binary)} {' '.join(args)}\n"
            f"  output (last lines):\n    " + "\n    ".join(out.strip().splitlines()[-6:])
        )
        print(f"FAIL  {name}")
    else:
        passed += 1
        print(f"ok    {name}")
    return code, out


def skip(name, why):
    global skipped
    skipped += 1
    print(f"SKIP  {name}: {why}")


def read_rows(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def write(path, data):
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return path


def kitti_bin(path, n=2000):
    """A small KITTI .bin: a flat ground ring and a few raised points, deterministic."""
    pts = []
    for i in range(n):
        a = 6.283185307 * i / n
        r = 5.0 + (i % 37) * 0.5
        z = -1.7 if i % 5 else 0.5
        pts.append(struct.pack("<4f", r * math.cos(a), r * math.sin(a), z, 0.5))
    return write(path, b"".join(pts))


PCD_HEAD = "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\n"


@dataclass
class Drivers:
    """The drivers under test (None: not in this tree), the work directory and whether a GPU runs."""

    sc: str | None
    nb: str | None
    gs: str | None
    ndt: str | None
    w: str
    gpu: bool


def numbers_and_sizes(d: Drivers) -> None:
    """Numbers and sizes: one parser, range-checked, nothing wraps or is cast silently."""
    sc, nb, gs, ndt = d.sc, d.nb, d.gs, d.ndt
    print("-- numbers and sizes: one parser, range-checked, nothing wraps or is cast silently")
    case("size that overflows (2^50 << 40)", sc, ["--n", "1125899906842624<<40"], 2, "1125899906842624<<40")
    case("block beyond int (4294967552)", sc, ["--block", "4294967552"], 2, "--block", "4294967552")
    case("n = 2^40 is checked against memory first", sc, ["--n", "2^40", "--op", "scan"], 2, "memory")
    case("nbody --steps 2^40", nb, ["--mode", "batch", "--steps", "2^40"], 2, "--steps", "out of range")
    case("nbody --files 0", nb, ["--mode", "batch", "--files", "0"], 2, "--files", "out of range")
    case("nbody --files 2^32", nb, ["--mode", "batch", "--files", "2^32"], 2, "--files")
    case("nbody --n 0", nb, ["--mode", "step", "--n", "0"], 2, "--n", "out of range")
    case("nbody --n 2^31 (beyond an int)", nb, ["--mode", "step", "--n", "2^31"], 2, "--n")
    case("nbody --n 2^30 needs more memory than a machine has", nb, ["--mode", "step", "--n", "2^30"], 2, "memory")
    case(
        "nbody --batch-n 2^30 needs more memory than a machine has",
        nb,
        ["--mode", "batch", "--batch-n", "2^30"],
        2,
        "memory",
    )
    case("nbody --scaling-n 0", nb, ["--mode", "scaling", "--scaling-n", "0"], 2, "--scaling-n")
    for bad in ["abc", "0.01abc", "inf", "nan", "1e999", ""]:
        case(f"nbody --eps '{bad}'", nb, ["--mode", "drift", "--eps", bad], 2, "--eps")
    case("ground_seg --cell 1e7 (a cell wider than the region)", gs, ["--cell", "1e7"], 2, "--cell")
    case("ground_seg --cell inf", gs, ["--cell", "inf"], 2, "--cell", "'inf'")
    case("ground_seg --region of 1e30 m", gs, ["--region=-1e30,1e30,-50,50"], 2, "--region")
    case("ground_seg --region with min > max", gs, ["--region=50,-50,-50,50"], 2, "region")
    case("ground_seg --cell 1e-4 over 100 m: 10^12 cells", gs, ["--cell", "1e-4"], 2, "2^28 cells")
    case("ground_seg --point-threshold 4294967299", gs, ["--point-threshold", "4294967299"], 2, "--point-threshold")
    case("ground_seg --sim-scans 2^32", gs, ["--sim-scans", "2^32"], 2, "--sim-scans")
    case("ndt_graph --max-iter -1", ndt, ["--max-iter", "-1"], 2, "--max-iter")
    case("ndt_graph --resolution 0", ndt, ["--resolution", "0"], 2, "--resolution")
    case("ndt_graph --guess without --target/--source", ndt, ["--guess", "0,0,0,0,0,0"], 2, "--guess", "one alignment")
    case(
        "ndt_graph --launch-bench with alignment flags", ndt, ["--launch-bench", "--resolution", "2"], 2, "--resolution"
    )
    case("ndt_graph --graph-study with --images", ndt, ["--graph-study", "--images", "x"], 2, "--images is not read")
    case("ndt_graph --graph-study, --version", ndt, ["--graph-study", "--version", "v4"], 2, "--version is not read")


def flags(d: Drivers) -> None:
    """Every accepted flag does something; --version selects in every driver."""
    sc, nb, gs, ndt, w = d.sc, d.nb, d.gs, d.ndt, d.w
    print("-- flags: every accepted flag does something; --version selects in every driver")
    case(
        "stream_compaction --version nope lists the known names", sc, ["--version", "nope"], 2, "nope", "scan_lookback"
    )
    case("nbody --version nope lists the known names", nb, ["--version", "nope"], 2, "nope", "v8_multi_body")
    case("ground_seg --version nope lists the known names", gs, ["--version", "nope"], 2, "nope", "v4_graph")
    case(
        "ndt_graph --version nope lists the known names",
        ndt,
        ["--version", "nope"],
        2,
        "nope",
        "v8_programmatic_launch",
    )
    code, out = case(
        "nbody --version cpu runs cpu only (2 step sizes, the table's 3 files and its summary)",
        nb,
        ["--quick", "--version", "cpu"],
        0,
        "6 PASS, 0 FAIL, 0 skipped",
    )
    # the reference, never a handout exercise: this case holds in the starter repository too
    code, out = case(
        "ground_seg --version cpu runs it only", gs, ["--quick", "--version", "cpu"], 0, "cpu ", " 0 FAIL, 0 skipped"
    )
    case(
        "nbody --version cpu --mode batch (batch measures another version)",
        nb,
        ["--version", "cpu", "--mode", "batch"],
        2,
        "v5_streams",
    )
    case("nbody --steps outside batch mode", nb, ["--mode", "step", "--steps", "5"], 2, "--steps", "batch or table")
    case("nbody --cpu-max-n outside step mode", nb, ["--mode", "drift", "--cpu-max-n", "5"], 2, "--cpu-max-n")
    case("nbody --files with --batch-dir", nb, ["--mode", "batch", "--batch-dir", w, "--files", "3"], 2, "--files")
    case("nbody --cold (not used by nbody)", nb, ["--cold"], 2, "--cold")
    case("nbody --mode nope", nb, ["--mode", "nope"], 2, "--mode", "nope")
    case("ground_seg --n (not used)", gs, ["--n", "5"], 2, "--n")
    case("ground_seg --sweep (not used)", gs, ["--sweep"], 2, "--sweep")
    case("ndt_graph --input (it reads --target/--source)", ndt, ["--input", "x.pcd"], 2, "--input")
    case(
        "stream_compaction --sort-cpu-max-n without a sort",
        sc,
        ["--op", "scan", "--sort-cpu-max-n", "5"],
        2,
        "--sort-cpu-max-n",
    )
    case(
        "stream_compaction --block-sweep-n without --block-sweep", sc, ["--block-sweep-n", "2^20"], 2, "--block-sweep-n"
    )
    case("stream_compaction --fill of an unknown input", sc, ["--fill", "zeros,ones"], 2, "--fill", "'ones'")
    case("stream_compaction --fill with --input", sc, ["--input", "x.bin", "--fill", "zeros"], 2, "--fill", "--input")
    case("stream_compaction --fill with --block-sweep", sc, ["--fill", "nonzero", "--block-sweep"], 2, "--block-sweep")
    case("stream_compaction --input with --n", sc, ["--input", "x.bin", "--n", "5"], 2, "--input")
    case("stream_compaction --input with --fresh-inputs", sc, ["--input", "x.bin", "--fresh-inputs"], 2, "--input")
    case("--fresh-inputs takes no value", sc, ["--fresh-inputs=1"], 2, "--fresh-inputs")
    case("unknown flag", sc, ["--frobnicate"], 2, "unknown flag --frobnicate")
    case("a flag without its value", sc, ["--n"], 2, "--n needs a value")


def readers(d: Drivers) -> tuple[str, str]:
    """Malformed files name the file and the reason. Returns (a KITTI scan, a valid PCD) for the writers."""
    nb, gs, ndt, w = d.nb, d.gs, d.ndt, d.w
    print("-- readers: malformed files name the file and the reason")
    scan = kitti_bin(os.path.join(w, "scan.bin"))
    write(os.path.join(w, "odd.bin"), b"\0" * 18)
    case("KITTI .bin not a multiple of 16 bytes", gs, ["--input", os.path.join(w, "odd.bin")], 1, "odd.bin")
    write(os.path.join(w, "empty.bin"), b"")
    case("empty KITTI .bin", gs, ["--input", os.path.join(w, "empty.bin"), "--quick"], 1, "empty.bin", "empty file")
    h = PCD_HEAD
    pcds = {
        "eof_binary.pcd": (h + "WIDTH 2\nHEIGHT 1\nPOINTS 2\nDATA binary", "truncated"),
        "eof_large.pcd": (h + "WIDTH 1000000000\nHEIGHT 1\nPOINTS 1000000000\nDATA binary", "truncated"),
        "eof_compressed.pcd": (h + "WIDTH 2\nHEIGHT 1\nPOINTS 2\nDATA binary_compressed", "no size header"),
        "huge_wh.pcd": (h + "WIDTH 4294967296\nHEIGHT 4294967296\nPOINTS 0\nDATA ascii\n", "overflows"),
        "negative_width.pcd": (h + "WIDTH -5\nHEIGHT 1\nPOINTS 5\nDATA ascii\n", "WIDTH"),
        "duplicate_field.pcd": (
            "VERSION 0.7\nFIELDS x y z x\nSIZE 4 4 4 4\nTYPE F F F F\nCOUNT 1 1 1 1\n"
            "WIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA ascii\n1 2 3 4\n",
            "duplicate",
        ),
        "trailing.pcd": (h + "WIDTH 1\nHEIGHT 1\nPOINTS 1\nDATA ascii\n1 2 3\n4 5 6\n", "trailing"),
        "short_row.pcd": (h + "WIDTH 2\nHEIGHT 1\nPOINTS 2\nDATA ascii\n1 2 3\n4 5\n", "has 2 values"),
        "not_pcd.pcd": ("hello world\n", "unknown header line"),
    }
    for fname, (text, needle) in pcds.items():
        p = write(os.path.join(w, fname), text)
        case(f"PCD {fname}", gs, ["--input", p, "--quick"], 1, fname, needle)
    pcd = write(os.path.join(w, "ok.pcd"), h + "WIDTH 3\nHEIGHT 1\nPOINTS 3\nDATA ascii\n1 2 3\n4 5 6\n7 8 9\n")
    case(
        "ndt_graph --guess with 5 numbers",
        ndt,
        ["--target", pcd, "--source", pcd, "--guess", "0,0,0,0,0"],
        2,
        "--guess",
    )
    case(
        "ndt_graph: bad target names it",
        ndt,
        ["--target", os.path.join(w, "trailing.pcd"), "--source", pcd],
        1,
        "trailing.pcd",
    )
    case(
        "ndt_graph: missing source file",
        ndt,
        ["--target", pcd, "--source", os.path.join(w, "missing.pcd")],
        1,
        "missing.pcd",
    )
    snap = os.path.join(w, "snaps")
    os.makedirs(snap)
    write(os.path.join(snap, "a.csv"), "x,y,z,vx,vy,vz,m,id\n0,0,0,0,0,0,1,nan\n")
    case(
        "nbody snapshot with id nan",
        nb,
        ["--mode", "batch", "--batch-dir", snap],
        1,
        "a.csv",
        "id is not a non-negative integer",
    )
    write(os.path.join(snap, "a.csv"), "x,y,z,vx,vy,vz,m,id\n0,0,0,0,0,0,1,1.7\n")
    case("nbody snapshot with id 1.7", nb, ["--mode", "batch", "--batch-dir", snap], 1, "a.csv", "id")
    write(os.path.join(snap, "a.csv"), "x,y,z,vx,vy,vz,m\n0,0,0,0,0,inf,1\n")
    case("nbody snapshot with inf", nb, ["--mode", "batch", "--batch-dir", snap], 1, "a.csv", "not finite")
    case(
        "nbody --batch-dir that does not exist",
        nb,
        ["--mode", "batch", "--batch-dir", os.path.join(w, "nodir")],
        1,
        "nodir",
    )
    return scan, pcd


def writers(d: Drivers, scan: str, pcd: str) -> None:
    """Outputs are checked before the run, written atomically, never over an input."""
    sc, gs, ndt, w = d.sc, d.gs, d.ndt, d.w
    print("-- writers: checked before the run, atomic, never over an input")
    case(
        "--csv into a missing directory fails before the run",
        sc,
        ["--csv", os.path.join(w, "no/such/dir.csv")],
        2,
        "--csv",
        "No such file or directory",
    )
    case("--csv naming a directory", sc, ["--csv", w], 2, "--csv", "directory")
    leftovers = [f for f in os.listdir(w) if ".tmp" in f or f.startswith(".") or f.endswith(".partial")]
    if leftovers:
        failures.append(f"temporaries left in the work directory: {leftovers}")
    case(
        "ground_seg --labels-out equal to --input is refused",
        gs,
        ["--input", scan, "--labels-out", scan],
        2,
        "--labels-out",
    )
    with open(scan, "rb") as f:
        if gs and len(f.read()) != 2000 * 16:
            failures.append("ground_seg --labels-out = --input changed the input")
    case(
        "ndt_graph --pose-out equal to --target is refused",
        ndt,
        ["--target", pcd, "--source", pcd, "--pose-out", pcd],
        2,
        "--pose-out",
    )
    sub = os.path.join(w, "in dir")
    os.makedirs(sub)
    shutil.copy(scan, os.path.join(sub, "scan.bin"))
    imgs = os.path.join(w, "imgs")
    case(
        "ground_seg --topdown-out with an --input in a directory",
        gs,
        [
            "--input",
            os.path.join(sub, "scan.bin"),
            "--topdown-out",
            imgs,
            "--quick",
            "--labels-out",
            os.path.join(w, "labels.bin"),
            "--cells-out",
            os.path.join(w, "cells.csv"),
        ],
        0,
        "PASS",
    )
    if gs and not os.path.exists(os.path.join(imgs, "topdown_scan.bin.gstd")):
        failures.append(
            f"ground_seg top-down data not found; {imgs} holds {os.listdir(imgs) if os.path.isdir(imgs) else 'nothing'}"
        )
    labels = os.path.join(w, "labels.bin")
    if gs and (not os.path.exists(labels) or os.path.getsize(labels) != 2000):
        failures.append("ground_seg --labels-out: not one byte per point")
    improved = os.path.join(w, "labels_improved.bin")
    case(
        "ground_seg --rule improved still writes --labels-out",
        gs,
        ["--input", scan, "--rule", "improved", "--quick", "--labels-out", improved],
        0,
        "PASS",
    )
    if gs and (not os.path.exists(improved) or os.path.getsize(improved) != 2000):
        failures.append("ground_seg --rule improved --labels-out: no file of one byte per point")


def failing_versions(d: Drivers) -> None:
    """A failing or crashing version: the other rows are kept."""
    global passed
    sc, gs, w = d.sc, d.gs, d.w
    print("-- a failing or crashing version: the other rows are kept")
    out_csv = os.path.join(w, "sc.csv")
    case(
        "a version that throws is a FAIL row, the run goes on",
        sc,
        ["--quick", "--op", "scan", "--csv", out_csv],
        1,
        "FAIL: injected failure",
        env={"COURSE_FAIL_VERSION": "scan_cpu"},
    )
    rows = read_rows(out_csv) if sc and os.path.exists(out_csv) else []
    fails = [r for r in rows if r["status"] == "fail"]
    others = [r for r in rows if r["status"] != "fail"]
    if sc and (not fails or not others or os.path.exists(out_csv + ".partial")):
        failures.append(
            f"the CSV after a throwing version: {len(fails)} FAIL rows, {len(others)} others, "
            f"journal left: {os.path.exists(out_csv + '.partial')}"
        )
    crash_csv = os.path.join(w, "crash.csv")
    code, out = (
        run(gs, ["--quick", "--csv", crash_csv], env={"COURSE_FAIL_VERSION": "cpu_openmp:abort"}) if gs else (1, "")
    )
    journal = crash_csv + ".partial"
    kept = read_rows(journal) if os.path.exists(journal) else []
    if not gs:
        skip("a crash keeps the finished rows in <csv>.partial", "this tree does not hold ground_seg")
    elif code == 0 or os.path.exists(crash_csv) or not any(r["version"] == "cpu" for r in kept):
        failures.append(
            f"a crash mid-run: status {code}, final CSV written: {os.path.exists(crash_csv)}, "
            f"rows kept in the journal: {len(kept)}"
        )
        print("FAIL  a crash keeps the finished rows in <csv>.partial")
    else:
        passed += 1
        print(f"ok    a crash keeps the finished rows in <csv>.partial ({len(kept)} rows)")
    if d.gpu and sc:
        trap_csv = os.path.join(w, "trap.csv")
        case(
            "a version that poisons the GPU: later GPU rows skipped, CPU rows still run",
            sc,
            ["--quick", "--op", "scan,compact", "--csv", trap_csv],
            1,
            "injected device fault",
            "device unusable",
            env={"COURSE_FAIL_VERSION": "scan_naive:trap"},
        )
        rows = read_rows(trap_csv)
        cpu_after = [r for r in rows if r["version"] == "compact_cpu" and r["status"] == "pass"]
        if not cpu_after:
            failures.append("after a device fault the CPU compaction rows did not run")
    else:
        skip("a version that poisons the GPU", "no CUDA device" if sc else "this tree does not hold stream_compaction")


NO_PERMISSION = "no permission to read GPU performance counters (NVreg_RestrictProfilingToAdminUsers)"


def profile(d: Drivers) -> None:
    """--profile runs the driver's own case only, and every version it cannot profile says why."""
    w = d.w
    print("-- --profile: the driver's own case; every row that is not a profile says why")
    case("--profile with --n (the case is the driver's)", d.sc, ["--profile", "--n", "2^10"], 2, "--n does not apply")
    case("nbody --profile with --mode", d.nb, ["--profile", "--mode", "step"], 2, "--mode does not apply")
    case("--profile takes no value", d.gs, ["--profile=1"], 2, "--profile takes no value")
    case("ndt_graph --profile with --quick", d.ndt, ["--profile", "--quick"], 2, "--quick does not apply")
    # no ncu anywhere it looks (an empty PATH, no $COURSE_NCU): without a GPU the usual skip comes first
    empty = os.path.join(w, "no_ncu_here")
    os.makedirs(empty, exist_ok=True)
    denied = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters"
    fake = write(os.path.join(w, "ncu_denied"), f"#!/bin/sh\necho '{denied} on the target device 0.'\nexit 1\n")
    os.chmod(fake, 0o755)
    no_ncu = "no CUDA device" if not d.gpu else "ncu not found on PATH"
    situations = [("without ncu", {"PATH": empty, "COURSE_NCU": ""}, no_ncu)]
    if d.gpu:  # ncu refuses to read the counters: every version says so, after one try
        situations.append(("where ncu may not read the counters", {"COURSE_NCU": fake}, NO_PERMISSION))
    for binary, versions in ((d.sc, "scan_naive,compact_lookback"), (d.nb, "v1_naive,v5_streams"),
                             (d.gs, "v1_naive,v4_graph"), (d.ndt, "v1_naive,v4_graph_batch")):  # fmt: skip
        if binary is None:
            continue
        name = os.path.basename(binary)
        for what, env, reason in situations:
            out_csv = os.path.join(w, f"{name}_profile.csv")
            case(f"{name} --profile {what}", binary, ["--profile", "--version", versions, "--csv", out_csv], 0, reason,
                 env=env)  # fmt: skip
            rows = [r for r in read_rows(out_csv) if r["kind"] != "meta"] if os.path.exists(out_csv) else []
            if sorted(r["version"] for r in rows) != sorted(versions.split(",")) or any(
                r["kind"] != "profile" or r["status"] != "skipped" or not r["detail"].startswith(reason) for r in rows
            ):
                failures.append(f"{name} --profile {what}: its rows are not one skipped profile row a version: {rows}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stream-compaction")
    ap.add_argument("--nbody")
    ap.add_argument("--ground-seg")
    ap.add_argument("--ndt-graph")
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    sc, nb, gs, ndt = a.stream_compaction, a.nbody, a.ground_seg, a.ndt_graph
    w = os.path.abspath(a.work)
    shutil.rmtree(w, ignore_errors=True)
    os.makedirs(w)
    given = [d for d in (sc, nb, gs, ndt) if d]
    if not given:
        sys.exit("bad_input: no driver given")
    _, probe = (
        run(sc, ["--n", "8", "--op", "scan", "--version", "scan_cpu"])
        if sc
        else run(given[0], ["--quick", "--version", "cpu"])
    )
    gpu = "no CUDA device" not in probe

    d = Drivers(sc, nb, gs, ndt, w, gpu)
    numbers_and_sizes(d)
    flags(d)
    scan, pcd = readers(d)
    writers(d, scan, pcd)
    failing_versions(d)
    profile(d)

    print(f"\n{passed} passed, {len(failures)} failed, {skipped} skipped")
    for f in failures:
        print("\n" + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
