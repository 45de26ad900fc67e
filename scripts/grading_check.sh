#!/usr/bin/env bash
# The grader on this machine's GPUs: a generated stream_compaction class (the solution, the handout,
# partial, tampered, library-calling, hanging, crashing, flooding, non-building submissions) graded
# with kernel recording, then the students-per-hour benchmark on the four-sub-project handout.
#   scripts/grading_check.sh [OUT] [COPIES]
# STAGES=attacks|realistic|bench (default all three); SC_VERSIONS=a,b grades only those versions of the attack
# class (the versions the attacks aim at, to fit a short lease); SC_KINDS=a,b makes only those
# submissions (classgen's kinds; the check below needs the attack kinds it names); SANDBOX_COMPARE=1 grades the
# benchmark class a second time without the sandbox (--unsafe-no-sandbox) and prints both rates.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$(realpath -m "${1:-results/scratch/grading_check}")
COPIES=${2:-2}
mkdir -p "$OUT"
export COURSE_GRADING_SECRET=${COURSE_GRADING_SECRET:-grading-check-$(date +%s)}
export PYTHONUNBUFFERED=1
step() { echo; echo "=== $*"; }

STAGES=${STAGES:-attacks,realistic,bench}
# the attack and realistic stages check statuses, not speed: several students share a GPU at once
RUNS_PER_GPU=${RUNS_PER_GPU:-4}
if [[ $STAGES == *attacks* ]]; then
step "stream_compaction: a class of tampered and honest submissions"
python3 scripts/make_handout.py "$OUT/handout_sc" --subproject stream_compaction --force >/dev/null || exit 1
# every kind but the realistic students (the realistic stage grades those against a TA's grades)
kinds=$(echo "${SC_KINDS:-$(cd grading && python3 -c 'from judge import classgen; print(",".join(k for k in classgen.KINDS if not k.startswith("real_")))')}" | tr -d ' ')
# hang is graded apart, in its own job beside the class (its runs one at a time): its two timeouts
# are the time limit, which --runs-per-gpu K multiplies by K (4 x 2 x 95 s would hold the stage
# for 13 minutes)
main=$(echo ",$kinds," | sed 's/,hang,/,/g; s/^,//; s/,$//')
[ -n "$main" ] || main=solution  # the class the checks below compare against
# the reports are this run's only (grade.py keeps its out folder's cache, and other reports in it)
rm -rf "$OUT/class_sc" "$OUT/class_hang" "$OUT/grade_sc/students" "$OUT/grade_hang"
(cd grading && python3 -m judge.classgen "$OUT/handout_sc" "$OUT/class_sc" --kinds "$main") || exit 1
hang_pid=""
if [[ ",$kinds," == *,hang,* ]]; then
  (cd grading && python3 -m judge.classgen "$OUT/handout_sc" "$OUT/class_hang" --kinds hang) || exit 1
  python3 scripts/grade.py --students "$OUT/class_hang" --handout "$OUT/handout_sc" --subproject stream_compaction \
    --out "$OUT/grade_hang" --gpus all --runs-per-gpu 1 --build-workers 1 --versions compact_cpu_scan \
    > "$OUT/grade_hang.log" 2>&1 &
  hang_pid=$!
  trap 'kill "$hang_pid" 2>/dev/null' EXIT  # never left running when the stage stops early
fi
python3 scripts/grade.py --students "$OUT/class_sc" --handout "$OUT/handout_sc" --subproject stream_compaction \
  --out "$OUT/grade_sc" --gpus all --runs-per-gpu "$RUNS_PER_GPU" --build-workers 2 \
  ${SC_VERSIONS:+--versions "$SC_VERSIONS"} > "$OUT/grade_sc.log" 2>&1
rc=$?; tail -3 "$OUT/grade_sc.log"; [ $rc -eq 0 ] || exit $rc
if [ -n "$hang_pid" ]; then
  wait "$hang_pid"; rc=$?; trap - EXIT; tail -2 "$OUT/grade_hang.log"; [ $rc -eq 0 ] || exit $rc
fi
(cd grading && python3 -m judge.summary "$OUT/grade_sc")
# the attack classes only a GPU run shows (the kernel record), and those the objects show
python3 - "$OUT/grade_sc" "$OUT/grade_hang" "$OUT/class_sc" "$OUT/class_hang" <<'PY' || exit 1
import glob, json, os, sys
reps = {}
for p in [p for d in sys.argv[1:3] for p in glob.glob(os.path.join(d, "**", "report.json"), recursive=True)]:
    r = json.load(open(p))
    reps[r.get("display_name") or r["student"]] = r
missing = set()
def grade(kind, version):
    """The kind's grade of the version; None where the class (SC_KINDS) has no such student or the
    grade no such version (SC_VERSIONS)."""
    g = next((g for g in reps.get(kind, {"grades": []})["grades"] if g["version"] == version), None)
    if g is None:
        missing.add(f"{kind} {version}")
    return g
bad = []
g = grade("host_work", "scan_naive")
if g and (g["status"] != "not its own work" or "the work happened on the host" not in g["detail"]):
    bad.append(f"host_work scan_naive: {g['status']}: {g['detail']}")
for kind, version in (("calls_reference", "compact_cpu_scan"), ("static_ctor", "scan_naive"), ("interpose", "scan_naive")):
    g = grade(kind, version)
    if g and g["status"] not in ("refused", "not its own work"):
        bad.append(f"{kind} {version}: {g['status']}: {g['detail']}")
# blocks that would change what follows them (checker_blocks): refused; a macro over the harness is scoped
for kind, version in (("line_continuation", "compact_cpu_scan"), ("closes_function", "compact_cpu_scan"),
                      ("include_solution", "scan_naive")):
    g = grade(kind, version)
    if g and g["status"] != "refused":
        bad.append(f"{kind} {version}: {g['status']}: {g['detail']}")
# a library call hidden from a process of several versions (its ranges), or from the record (rewritten)
for kind in ("cub_call", "nvtx_hide", "record_rewrite"):
    g = grade(kind, "scan_naive")
    if g and (g["status"] == "correct" or g.get("points_correct")):
        bad.append(f"{kind} scan_naive: {g['status']}: {g['detail']}")
g, ok = grade("macro_over_harness", "scan_naive"), grade("solution", "scan_naive")
if g and ok and g["status"] != ok["status"]:
    bad.append(f"macro_over_harness scan_naive: {g['status']}")
# a verdict forged from inside the run (its own CSV, then exit): only the out-of-process check sees it
g = grade("forged_verdict", "scan_naive")
if g and (g["status"] != "incorrect" or "checked outside the run" not in g["detail"]):
    bad.append(f"forged_verdict scan_naive: {g['status']}: {g['detail']}")
# a right output with a written time: its tests stand, its time does not (the kernel record's GPU time)
g = grade("forged_time", "scan_naive")
if g and (g["status"] != "correct" or g.get("points_speed")
          or not any("no time counted" in (c.get("detail") or "") for c in g["cases"])):
    bad.append(f"forged_time scan_naive: {g['status']}, speed {g.get('points_speed')}: {g['detail']}")
# the sandbox: what escape read stays out of every report, what it wrote landed nowhere
g = grade("escape", "scan_naive")
if g and g["status"] not in ("incorrect", "crash"):
    bad.append(f"escape scan_naive: {g['status']}: {g['detail']}")
secret = os.environ["COURSE_GRADING_SECRET"]
def walk(top):  # every file, in dot-folders too (glob's "**" skips .grader/ and .git/)
    return [os.path.join(d, n) for d, _, names in os.walk(top) for n in names]
files = [p for out in sys.argv[1:3] for p in walk(out)]  # the reports and the grader's files
submitted = [p for out in sys.argv[3:] for p in walk(out)]  # the class's submissions
for p in files:
    if os.path.isfile(p) and "/.grader/" not in p:
        text = open(p, errors="replace").read()
        if secret in text or "[grading]" in text or "root:x:0" in text:
            bad.append(f"escape: the grader's secret, rubric or accounts in {p}")
# a marker anywhere the attacks aim: the grader's cache, the submissions' own .git (git_config's
# hooks), the repository, the machine's /tmp
pwned = [p for p in files + submitted if os.path.basename(p) == "PWNED"]
pwned += [p for p in ("grading/PWNED", "/tmp/PWNED") if os.path.exists(p)]
pwned += [p for p in files if (p.endswith(".csv") or p.endswith("report.json")) and os.path.isfile(p)
          and open(p, errors="replace").read().startswith("PWNED")]
if pwned:
    bad.append(f"escape wrote {pwned}")
# a library call in a file other versions build on: the versions that never take that path are
# their own work (their kernel record), the ones that do ran CUB
g = grade("library_version", "scan_lookback")
if g and g["status"] != "correct":
    bad.append(f"library_version scan_lookback: {g['status']}: {g['detail']}")
g = grade("library_version", "compact_warp_shuffle")
if g and g["status"] != "not its own work":
    bad.append(f"library_version compact_warp_shuffle: {g['status']}: {g['detail']}")
# the forged CSV of a version run inside another (compact_naive's run of the forged scan_naive)
g = grade("forged_time", "compact_naive")
if g and g["status"] != "correct" and "wrote over" not in g["detail"]:
    bad.append(f"forged_time compact_naive: {g['status']}: {g['detail']}")
g = grade("hang", "compact_cpu_scan")
if g and g["status"] != "timeout":
    bad.append(f"hang compact_cpu_scan: {g['status']}: {g['detail']}")
print("attack classes:", "; ".join(bad) or "every one caught",
      f"(not in this class: {', '.join(sorted(missing))})" if missing else "")
for kind in sorted(reps):
    r = reps[kind]
    print(f"  {kind:20s} {r['points']:g} / {r['points_max']:g}  " + ", ".join(
        f"{g['version']}={g['status']}" for g in r["grades"] if g["status"] not in ("correct", "not written"))[:160])
sys.exit(1 if bad else 0)
PY

fi

if [[ $STAGES == *realistic* ]]; then
step "stream_compaction: a realistic class (classgen's real_* kinds), per case, next to a TA's grades"
python3 scripts/make_handout.py "$OUT/handout_sc" --subproject stream_compaction --force >/dev/null || exit 1
kinds=$(cd grading && python3 -c 'from judge import classgen; print(",".join(["solution", *classgen.TA_GRADES]))')
(cd grading && python3 -m judge.classgen "$OUT/handout_sc" "$OUT/class_real" --kinds "$kinds") || exit 1
python3 scripts/grade.py --students "$OUT/class_real" --handout "$OUT/handout_sc" --subproject stream_compaction \
  --out "$OUT/grade_real" --gpus all --runs-per-gpu "$RUNS_PER_GPU" --build-workers 2 \
  --versions "${REAL_VERSIONS:-compact_cpu_scan,scan_naive,compact_naive,sort_radix}" > "$OUT/grade_real.log" 2>&1
rc=$?; tail -3 "$OUT/grade_real.log"; [ $rc -eq 0 ] || exit $rc
python3 - "$OUT/grade_real" <<'PY' || exit 1
import glob, json, os, sys
sys.path.insert(0, "grading")
from judge.classgen import TA_GRADES
reps = {}
for p in glob.glob(os.path.join(sys.argv[1], "students", "*", "report.json")):
    r = json.load(open(p))
    reps[r.get("display_name") or r["student"]] = r
bad = []
print(f"{'student':22s} {'version':18s} {'TA':10s} {'grader':10s} points  failing cases")
for kind, expected in TA_GRADES.items():
    for g in reps[kind]["grades"]:
        want = expected.get(g["version"], "correct")
        tests = [t for c in g["cases"] for t in c["tests"]]
        failing = [t["name"] for t in tests if t["status"] != "correct"]
        print(f"{kind:22s} {g['version']:18s} {want:10s} {g['status']:10s} {g['points']:g}/{g['points_max']:g}  "
              f"{len(tests) - len(failing)}/{len(tests)} passed {', '.join(failing[:4])}"
              + (f"  memcheck: {g['memcheck'][:80]}" if g.get("memcheck") else ""))
        if g["status"] != want:
            bad.append(f"{kind} {g['version']}: {g['status']} (a TA: {want}): {g['detail'][:200]}")
oob = next(g for g in reps["real_oob"]["grades"] if g["version"] == "scan_naive")
if "Invalid __global__" not in (oob.get("memcheck") or ""):
    bad.append(f"real_oob scan_naive: memcheck found nothing ({oob.get('memcheck')!r})")
clean = [g["version"] for g in reps["solution"]["grades"] if g.get("memcheck")]
if clean:
    bad.append(f"solution: memcheck reports errors in {clean}")
print("realistic class:", "; ".join(bad) or "every grade as a TA's")
sys.exit(1 if bad else 0)
PY
fi

if [[ $STAGES == *bench* ]]; then
step "benchmark: the four-sub-project handout, $COPIES distinct students per kind, one GPU"
python3 scripts/make_handout.py "$OUT/handout_all" --force >/dev/null || exit 1
(cd grading && python3 -m judge.classgen "$OUT/handout_all" "$OUT/class_all" --kinds solution,handout,partial --copies "$COPIES") || exit 1
python3 scripts/grade.py --students "$OUT/class_all" --handout "$OUT/handout_all" --out "$OUT/grade_all" \
  --gpus 1 --build-workers 2 > "$OUT/grade_all.log" 2>&1
rc=$?; tail -3 "$OUT/grade_all.log"; [ $rc -eq 0 ] || exit $rc
(cd grading && python3 -m judge.summary "$OUT/grade_all")
if [ "${SANDBOX_COMPARE:-0}" = 1 ]; then
  step "benchmark without the sandbox (--unsafe-no-sandbox), the same class and reference record"
  mkdir -p "$OUT/grade_all_unsafe/.grader" && cp -r "$OUT/grade_all/.grader/cache" "$OUT/grade_all_unsafe/.grader/"
  python3 scripts/grade.py --students "$OUT/class_all" --handout "$OUT/handout_all" --out "$OUT/grade_all_unsafe" \
    --gpus 1 --build-workers 2 --unsafe-no-sandbox > "$OUT/grade_all_unsafe.log" 2>&1
  rc=$?; tail -3 "$OUT/grade_all_unsafe.log"; [ $rc -eq 0 ] || exit $rc
  (cd grading && python3 -m judge.summary "$OUT/grade_all_unsafe")
fi
fi
