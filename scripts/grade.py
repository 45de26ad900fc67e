#!/usr/bin/env python3
"""Grades the versions of a checkout (a student's, the handout, or the solution) with
grading/rubric.toml, each version in its own process under a time limit.

    scripts/grade.py [--checkout DIR] [--build] [--subproject S,..] [--versions V,..]
                     [--reference-checkout SOLUTION | --reference REPORT.json] [--out DIR]
    scripts/grade.py --students DIR --reference-checkout SOLUTION --build [--out DIR]

Writes OUT/report.json and OUT/report.md (per version: status, failing case, time, ratio to the
reference solution's time on the same GPU, points); with --students, one report per student
folder under OUT/<student>/ and OUT/grades.csv. The drivers must be built (--build runs CMake's
release preset for the four drivers). Exit status 0 when grading ran, whatever the grade; 2 on
bad usage or a missing build.
"""
import argparse
import csv
import json
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SUBPROJECTS = ("stream_compaction", "nbody", "ground_seg", "ndt_graph")


# ---- rubric -------------------------------------------------------------------------------------
def load_toml(path):
    try:
        import tomllib  # Python >= 3.11
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except ModuleNotFoundError:
        return parse_simple_toml(open(path, encoding="utf-8").read(), path)


def parse_simple_toml(text, path):
    """The subset the rubric uses: [a.b] tables, key = "string" | number | ["string", ...]."""
    data, table = {}, None
    for num, raw in enumerate(text.split("\n"), 1):
        line, quoted = "", False  # drop a comment: a '#' outside quotes
        for ch in raw:
            if ch == '"':
                quoted = not quoted
            elif ch == "#" and not quoted:
                break
            line += ch
        line = line.strip()
        if not line:
            continue
        m = re.match(r"^\[([A-Za-z0-9_.]+)\]$", line)
        if m:
            table = data
            for part in m.group(1).split("."):
                table = table.setdefault(part, {})
            continue
        m = re.match(r"^([A-Za-z0-9_]+)\s*=\s*(.+)$", line)
        if not m or table is None:
            raise SystemExit(f"grade: {path}:{num}: cannot read '{raw.strip()}'")
        key, val = m.group(1), m.group(2).strip()
        if val.startswith("["):
            table[key] = re.findall(r'"([^"]*)"', val)
        elif val.startswith('"'):
            table[key] = val.strip('"')
        else:
            table[key] = float(val) if "." in val else int(val)
    return data


# ---- running one version --------------------------------------------------------------------------
def read_rows(csv_path):
    for p in (csv_path, csv_path + ".partial"):
        if os.path.exists(p):
            with open(p, newline="", encoding="utf-8") as fh:
                return list(csv.DictReader(fh)), p.endswith(".partial")
    return [], False


def run_version(build, sub, conf, version, vconf, timeout_s, workdir, env):
    driver = os.path.join(build, conf["driver"])
    args = vconf.get("args", conf.get("args", []))
    out_csv = os.path.join(workdir, f"{sub}.{version}.csv")
    log_path = os.path.join(workdir, f"{sub}.{version}.log")
    for p in (out_csv, out_csv + ".partial"):
        if os.path.exists(p):
            os.remove(p)
    cmd = [driver, "--version", version] + list(args) + ["--csv", out_csv]
    t0 = time.time()
    with open(log_path, "w", encoding="utf-8") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
        try:
            rc = proc.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the driver and anything it started
            proc.wait()
            rc, timed_out = None, True
    rows, partial = read_rows(out_csv)
    mine = [r for r in rows if r.get("version") == version and r.get("kind") != "meta"]
    device = next((r.get("device", "") for r in rows if r.get("kind") == "meta"), "")
    res = {"version": version, "command": " ".join(cmd[1:]), "seconds": round(time.time() - t0, 1),
           "device": device, "log": os.path.relpath(log_path, workdir)}
    if timed_out:
        res.update(status="timeout", detail=f"still running after {timeout_s} s (killed); "
                   f"{sum(1 for r in mine if r['passed'] == 'PASS')} rows had passed")
        return res, mine
    if rc is not None and rc < 0:
        res.update(status="crash", detail=f"killed by signal {signal.Signals(-rc).name}")
        return res, mine
    fails = [r for r in mine if r["passed"].startswith("FAIL")]
    stubs = [r for r in mine if r["passed"].startswith("NOT IMPLEMENTED")]
    passes = [r for r in mine if r["passed"] == "PASS"]
    if fails:
        f = fails[0]
        res.update(status="incorrect", detail=f"{case_of(f)}: {f['passed'][5:].strip()}", failed_cases=len(fails))
    elif rc == 2:  # the driver refused its flags: the rubric's arguments, not the student's code
        tail = open(log_path, encoding="utf-8", errors="replace").read().strip().split("\n")
        res.update(status="harness error", detail=f"the driver refused the rubric's arguments: {tail[1][:200] if len(tail) > 1 else ''}")
    elif rc not in (0, 1):
        tail = open(log_path, encoding="utf-8", errors="replace").read().strip().split("\n")[-1:]
        res.update(status="crash", detail=f"exit status {rc}" + (f": {tail[0][:200]}" if tail else ""))
    elif partial:
        res.update(status="crash", detail="the run ended before writing its CSV (rows from its journal)")
    elif stubs:
        res.update(status="not implemented", detail=stubs[0]["passed"][len("NOT IMPLEMENTED: "):])
    elif passes:
        res.update(status="correct", detail=f"{len(passes)} cases passed")
    else:
        reasons = sorted({r["passed"] for r in mine}) or ["no rows for this version"]
        res.update(status="not gradable", detail="; ".join(reasons)[:300])
    return res, mine


def case_of(row):
    parts = [f"n={row['n']}"] if row.get("n") not in (None, "", "0") or not row.get("params") else []
    if row.get("params"):
        parts.append(row["params"])
    if row.get("kind") not in ("version", None):
        parts.insert(0, row["kind"])
    return " ".join(parts) or "the run"


def timed_row(rows, conf, vconf=None):
    """The row timed against the reference: passed, with a time, of the kind timed_kind names
    (default: the version's headline rows), matching timed_params, the largest n."""
    vconf = vconf or {}
    want = vconf.get("timed_params", conf.get("timed_params", ""))
    kind = vconf.get("timed_kind", conf.get("timed_kind", "version"))
    cands = [r for r in rows if r["passed"] == "PASS" and r.get("median_ms") not in ("", None)]
    pref = [r for r in cands if r["kind"] == kind] or cands
    matched = [r for r in pref if want and want in r.get("params", "")] or pref
    if not matched:
        return None
    return max(matched, key=lambda r: (int(r["n"] or 0), r.get("params", "")))


# ---- grading a checkout -------------------------------------------------------------------------
def speed_points(points, ratio, g):
    full, zero = g.get("speed_full", 0.8), g.get("speed_zero", 0.25)
    if ratio >= full:
        return points
    if ratio <= zero:
        return 0.0
    return round(points * (ratio - zero) / (full - zero), 2)


def grade_checkout(checkout, rubric, subs, versions, out_dir, reference=None, quiet=False, build=None):
    g = rubric.get("grading", {})
    build = build or os.path.join(checkout, "build", "release")
    work = os.path.join(out_dir, "runs")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ)
    env.pop("COURSE_SKIP_EXIT", None)
    env.pop("COURSE_FAIL_VERSION", None)
    results, total, maximum = [], 0.0, 0.0
    for sub in subs:
        conf = rubric.get(sub, {})
        driver = os.path.join(build, conf.get("driver", ""))
        if not os.path.isfile(driver):
            raise SystemExit(f"grade: {driver} is not built (run with --build, or scripts/run_tests.sh first)")
        graded = [k for k, v in conf.items() if isinstance(v, dict)]
        for version in graded:
            if versions and version not in versions and f"{sub}/{version}" not in versions:
                continue
            vconf = conf[version]
            if not quiet:
                print(f"[grade] {os.path.basename(os.path.abspath(checkout))}: {sub} {version} ...", end="", flush=True)
            res, rows = run_version(build, sub, conf, version, vconf, g.get("timeout_s", 300), work, env)
            res["subproject"] = sub
            res["requires"] = vconf.get("requires", [])
            cpts, spts = float(vconf.get("correct", 0)), float(vconf.get("speed", 0))
            res["points_correct_max"], res["points_speed_max"] = cpts, spts
            res["points_correct"] = cpts if res["status"] == "correct" else 0.0
            res["points_speed"] = 0.0
            t = timed_row(rows, conf, vconf) if res["status"] == "correct" else None
            if t:
                res["timed_case"] = case_of(t)
                res["ms"] = float(t["median_ms"])
            ref = (reference or {}).get(f"{sub}/{version}")
            speed_scored = False
            if spts and res["status"] == "correct" and t and ref and ref.get("ms") and ref.get("timed_case") == res["timed_case"]:
                if ref.get("device") and res.get("device") and ref["device"] != res["device"]:
                    res["speed_note"] = f"reference timed on {ref['device']}, this run on {res['device']}: speed not scored"
                else:
                    res["reference_ms"] = ref["ms"]
                    res["ratio_to_reference"] = round(ref["ms"] / res["ms"], 3) if res["ms"] > 0 else None
                    res["points_speed"] = speed_points(spts, res["ratio_to_reference"] or 0.0, g)
                    speed_scored = True
            elif spts and res["status"] == "correct":
                res["speed_note"] = ("no reference time for this case on this GPU" if t else
                                     "no timed row (the run measured nothing)")
            gradable = res["status"] not in ("not gradable", "harness error")
            res["points"] = res["points_correct"] + res["points_speed"]
            # speed counts toward the maximum wherever it can be scored: a reference time exists for
            # this version (a version that is not correct then earns none of it)
            speed_possible = speed_scored or (gradable and ref is not None and res["status"] != "correct")
            res["points_max"] = (cpts if gradable else 0.0) + (spts if speed_possible else 0.0)
            total += res["points"]
            maximum += res["points_max"]
            results.append(res)
            if not quiet:
                extra = f" {res['ms']:.3f} ms" if "ms" in res else ""
                extra += f" ({res['ratio_to_reference']:.2f}x ref)" if res.get("ratio_to_reference") else ""
                print(f" {res['status']}{extra}")
    device = next((r["device"] for r in results if r.get("device")), "")
    return {"checkout": os.path.abspath(checkout), "device": device, "points": round(total, 2),
            "points_max": round(maximum, 2), "versions": results,
            "not_gradable": [f"{r['subproject']}/{r['version']}" for r in results if r["status"] == "not gradable"]}


def write_report(report, out_dir, title):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "report.json"), "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1)
        fh.write("\n")
    L = [f"# Grade report: {title}", "",
         f"**{report['points']:g} / {report['points_max']:g} points** on {report['device'] or 'a machine without a GPU'}"
         f" ({len(report['versions'])} versions graded from grading/rubric.toml).", ""]
    if report["not_gradable"]:
        L += [f"Not gradable here (left out of the maximum): {len(report['not_gradable'])} versions, e.g. "
              f"{', '.join(report['not_gradable'][:4])} — see each row's reason.", ""]
    L += ["| sub-project | version | status | detail | time (ms) | ratio to reference | points |",
          "|---|---|---|---|---:|---:|---:|"]
    for r in report["versions"]:
        ms = f"{r['ms']:.4g}" if "ms" in r else ""
        ratio = f"{r['ratio_to_reference']:.2f}x" if r.get("ratio_to_reference") else (r.get("speed_note", "")[:60])
        detail = r.get("detail", "").replace("|", "/")
        if len(detail) > 140:
            detail = detail[:137] + "..."
        pts = f"{r['points']:g} / {r['points_max']:g}" if r["points_max"] else "n/a"
        L.append(f"| {r['subproject']} | `{r['version']}` | {r['status']} | {detail} | {ms} | {ratio} | {pts} |")
    L += ["", "Each version ran alone: `<driver> " + "--version NAME <rubric args> --csv ...`; its log is under `runs/`."]
    with open(os.path.join(out_dir, "report.md"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(L) + "\n")


def build_checkout(checkout, quiet=False):
    targets = ["stream_compaction_driver", "nbody_driver", "ground_seg_driver", "ndt_graph_driver"]
    log = os.path.join(checkout, "build", "grade_build.log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    with open(log, "w") as fh:
        for cmd in (["cmake", "--preset", "release"],
                    ["cmake", "--build", "--preset", "release", "-j", str(os.cpu_count() or 2), "--target"] + targets):
            if not quiet:
                print(f"[grade] {checkout}: {' '.join(cmd)}", flush=True)
            if subprocess.run(cmd, cwd=checkout, stdout=fh, stderr=subprocess.STDOUT).returncode != 0:
                return f"the build failed (see {log})"
    return None


def reference_times(report):
    return {f"{r['subproject']}/{r['version']}": {"ms": r.get("ms"), "timed_case": r.get("timed_case"),
                                                  "device": r.get("device")}
            for r in report["versions"] if r["status"] == "correct" and "ms" in r}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkout", default=ROOT, help="the checkout to grade (default: this one)")
    ap.add_argument("--students", help="a folder of student checkouts: grade each, write grades.csv")
    ap.add_argument("--build", action="store_true", help="configure and build the drivers of each checkout first")
    ap.add_argument("--build-dir", help="the build folder of --checkout (default: CHECKOUT/build/release)")
    ap.add_argument("--rubric", default=os.path.join(ROOT, "grading", "rubric.toml"))
    ap.add_argument("--subproject", default=",".join(SUBPROJECTS))
    ap.add_argument("--versions", default="", help="grade only these (NAME or sub-project/NAME)")
    ap.add_argument("--reference-checkout", help="the reference solution: graded first on this GPU, its times are the reference")
    ap.add_argument("--reference", help="report.json of the reference solution graded earlier on this GPU")
    ap.add_argument("--out", default="grade", help="where the reports go (default grade/)")
    a = ap.parse_args()

    rubric = load_toml(a.rubric)
    subs = [s for s in a.subproject.split(",") if s]
    bad = [s for s in subs if s not in SUBPROJECTS]
    if bad:
        print(f"grade: --subproject: unknown {bad} (known: {', '.join(SUBPROJECTS)})", file=sys.stderr)
        return 2
    versions = [v for v in a.versions.split(",") if v]
    known = {f"{s}/{k}" for s in subs for k, v in rubric.get(s, {}).items() if isinstance(v, dict)}
    bad = [v for v in versions if v not in known and not any(k.endswith("/" + v) for k in known)]
    if bad:
        print(f"grade: --versions: not in the rubric: {bad}", file=sys.stderr)
        return 2
    if a.reference and a.reference_checkout:
        print("grade: give --reference or --reference-checkout, not both", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)

    reference = None
    if a.reference:
        with open(a.reference, encoding="utf-8") as fh:
            reference = reference_times(json.load(fh))
    elif a.reference_checkout:
        if a.build:
            err = build_checkout(a.reference_checkout)
            if err:
                print(f"grade: reference solution: {err}", file=sys.stderr)
                return 2
        ref_report = grade_checkout(a.reference_checkout, rubric, subs, versions, os.path.join(a.out, "reference"))
        write_report(ref_report, os.path.join(a.out, "reference"), "reference solution")
        reference = reference_times(ref_report)

    if a.students:
        rows = []
        for name in sorted(os.listdir(a.students)):
            path = os.path.join(a.students, name)
            if not os.path.isdir(path):
                continue
            out = os.path.join(a.out, name)
            err = build_checkout(path) if a.build else None
            if err:
                report = {"checkout": os.path.abspath(path), "device": "", "points": 0.0, "points_max": 0.0,
                          "versions": [], "not_gradable": [], "error": err}
                os.makedirs(out, exist_ok=True)
                with open(os.path.join(out, "report.md"), "w") as fh:
                    fh.write(f"# Grade report: {name}\n\n**0 points**: {err}\n")
                with open(os.path.join(out, "report.json"), "w") as fh:
                    json.dump(report, fh, indent=1)
            else:
                try:
                    report = grade_checkout(path, rubric, subs, versions, out)
                except SystemExit as e:  # a checkout whose drivers are missing
                    report = {"points": 0.0, "points_max": 0.0, "versions": [], "error": str(e), "device": ""}
                if "error" not in report:
                    write_report(report, out, name)
            row = {"student": name, "points": report["points"], "points_max": report["points_max"],
                   "device": report.get("device", ""), "error": report.get("error", "")}
            for r in report.get("versions", []):
                row[f"{r['subproject']}/{r['version']}"] = f"{r['status']}:{r['points']:g}"
            rows.append(row)
            print(f"[grade] {name}: {report['points']:g} / {report['points_max']:g}")
        cols = ["student", "points", "points_max", "device", "error"] + sorted({k for r in rows for k in r} -
                                                                                 {"student", "points", "points_max", "device", "error"})
        with open(os.path.join(a.out, "grades.csv"), "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=cols)
            w.writeheader()
            w.writerows(rows)
        print(f"[grade] {len(rows)} students -> {os.path.join(a.out, 'grades.csv')}")
        return 0

    if a.build:
        err = build_checkout(a.checkout)
        if err:
            print(f"grade: {err}", file=sys.stderr)
            return 2
    try:
        report = grade_checkout(a.checkout, rubric, subs, versions, a.out, reference, build=a.build_dir)
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2
    write_report(report, a.out, os.path.basename(os.path.abspath(a.checkout)))
    print(f"[grade] {report['points']:g} / {report['points_max']:g} points -> {os.path.join(a.out, 'report.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
