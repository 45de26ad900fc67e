#!/usr/bin/env bash
# The main job: build (Release, this machine's GPU architecture), run every sub-project's driver
# on its default inputs, write the CSV, draw the plots and the README tables.
#
#   scripts/run_all.sh                     every driver's default run (about 3 minutes on an H100,
#                                          build excluded), then on a GPU each driver's --profile (every
#                                          GPU version under Nsight Compute; rows that say why not where
#                                          ncu is missing or may not read the counters); CSV, console logs
#                                          and plots into results/scratch/ (the README tables are left
#                                          alone), then your tables next to the committed reference run
#                                          of the closest GPU (scripts/compare.py)
#   scripts/run_all.sh --full              the full benchmark sweeps (every size, block sizes, end to
#                                          end, tile-shape and launch-shape tuning): what the
#                                          reference runs are made of; about 10 minutes on an H100
#   scripts/run_all.sh --update-reference  --full, and the reference results: CSV, logs and plots
#                                          into results/<gpu>/ (a second GPU's reference next to the
#                                          first's: compare.py and the grader pick the closest)
#   --readme                               with --update-reference: this GPU's run becomes the one the
#                                          READMEs show: plots into images/, README tables rewritten
#   scripts/run_all.sh --student           a student's handout: the default run into results/student/, the
#                                          plots into images/<sub>/ and the README's results block filled
#                                          with your tables next to the closest GPU's reference run
#   scripts/run_all.sh --quick             small sizes only (CI smoke run), no profiles; everything into
#                                          results/scratch/
#   --only nbody,ground_seg                with any of them: only those sub-projects' drivers and plots
#                                          (the others' results are left as they are)
#
# A FAIL row, an unsupported version or a crash never stops the job: every step runs, each prints
# its progress with an estimate of the time left (from this machine's previous run, else the
# H100's), and the job ends with the list of what failed and exit status 1 if anything did.
# Without a GPU the drivers run their CPU versions and list the GPU ones as skipped. Real inputs
# (the labelled SemanticKITTI scan for ground_seg) are read from $COURSE_DATA_DIR (default data/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
quick=0
update=0
full=0
readme=0
student=0
subprojects=""  # those this tree holds (a student's handout holds its assignment's only)
for s in stream_compaction nbody ground_seg ndt_graph; do [ -d "$s" ] && subprojects="$subprojects $s"; done
subprojects=${subprojects# }
only=$subprojects
usage="usage: scripts/run_all.sh [--quick | --full | --student | --update-reference [--readme]] [--only SUB[,SUB...]] (SUB: ${subprojects// /, })"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --update-reference) update=1; full=1 ;;
    --full) full=1 ;;
    --readme) readme=1 ;;
    --student) student=1 ;;
    --only)
      [ $# -ge 2 ] || { echo "run_all.sh: --only needs a list of sub-projects; $usage" >&2; exit 2; }
      only=${2//,/ }
      for s in $only; do
        case " $subprojects " in *" $s "*) ;; *) echo "run_all.sh: --only: unknown sub-project '$s'; $usage" >&2; exit 2 ;; esac
      done
      shift ;;
    *) echo "run_all.sh: unknown argument '$1'; $usage" >&2; exit 2 ;;
  esac
  shift
done
want() { case " $only " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
if [ "$readme" = 1 ] && [ "$update" = 0 ]; then
  echo "run_all.sh: --readme puts a reference run into the READMEs: use it with --update-reference" >&2
  exit 2
fi
if [ "$student" = 1 ] && [ "$((quick + full + update))" -gt 0 ]; then
  echo "run_all.sh: --student is the default run with your README filled in: use it alone (with --only at most)" >&2
  exit 2
fi
if [ "$quick" = 1 ] && [ "$full" = 1 ]; then
  echo "run_all.sh: --quick is the small smoke run, never the full sweep or the reference (drop one of the flags)" >&2
  exit 2
fi

# no GPU visible: the ci preset's one architecture (nothing runs on a GPU here anyway)
if [ -z "${PRESET:-}" ]; then
  if nvidia-smi -L >/dev/null 2>&1; then PRESET=release; else PRESET=ci; fi
fi
preset=$PRESET
cmake --preset "$preset"
targets=()  # with --only: the drivers of those sub-projects (and what their sections run) only
if [ "$only" != "$subprojects" ]; then
  want stream_compaction && targets+=(stream_compaction_driver stream_compaction_tune gpu_means_roofline group_by_key_bench)
  # the multi-GPU sort exists where CMake found NCCL
  want stream_compaction && [ "$quick" = 0 ] && grep -q '^NCCL_LIBRARY:[A-Z]*=.*[^D]$' "build/$preset/CMakeCache.txt" \
    && targets+=(stream_compaction_multi_gpu)
  want nbody && targets+=(nbody_driver)
  want ground_seg && targets+=(ground_seg_driver)
  want ndt_graph && targets+=(ndt_graph_driver)
fi
cmake --build --preset "$preset" -j "${JOBS:-$(nproc)}" ${targets[@]+--target "${targets[@]}"}
bin=build/$preset
export COURSE_GIT_SHA=${COURSE_GIT_SHA:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
scratch=results/scratch
mkdir -p "$scratch"
if [ "$update" = 1 ] && [ -z "$gpu" ]; then
  echo "run_all.sh: --update-reference needs a GPU (nvidia-smi lists none)" >&2
  exit 2
fi
if [ "$student" = 1 ]; then
  out=results/student
  images=images
elif [ "$update" = 0 ]; then
  out=$scratch
  images=$scratch/images
else
  slug=$(echo "$gpu" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\+/-/g; s/^-//; s/-$//')
  out=results/$slug
  images=$out/images
  [ "$readme" = 1 ] && images=images
fi
mkdir -p "$out"
topdown="$scratch/ground_seg_topdown"  # derived from the scans: never committed (their licences)
mode=default
[ "$quick" = 1 ] && mode=quick
[ "$full" = 1 ] && mode=full

# ---- the steps: NAME|SECONDS|COMMAND (SECONDS: the H100's time for this mode, the estimate when this
# machine has no earlier run of its own; a command's stdout also goes to its console log in $out)
steps=()
add() { steps+=("$1|$2|$3"); }
sc=$bin/stream_compaction
if want stream_compaction; then
  case $mode in
    quick) add stream_compaction 2 "$sc/stream_compaction --quick --csv $out/stream_compaction.csv" ;;
    default) add stream_compaction 35 "$sc/stream_compaction --csv $out/stream_compaction.csv" ;;
    full)
      add stream_compaction 280 "$sc/stream_compaction --sweep --block-sweep --end-to-end --csv $out/stream_compaction.csv"
      add stream_compaction_tune 60 "$sc/stream_compaction_tune --csv $out/stream_compaction_tune.csv"
      add gpu_means_roofline 3 "$bin/common/gpu_means_roofline"
      [ -n "$gpu" ] && add group_by_key 10 "$bin/common/group_by_key_bench --csv $out/group_by_key.csv"
      gpus=$(nvidia-smi -L 2>/dev/null | wc -l || echo 0)
      if [ "$gpus" -ge 2 ] && [ -x "$sc/stream_compaction_multi_gpu" ]; then  # one process per GPU
        add stream_compaction_multi_gpu 30 "$sc/stream_compaction_multi_gpu --launch 2 --csv $out/stream_compaction_multi_gpu.csv"
      fi ;;
  esac
fi
if want nbody; then
  case $mode in
    quick) add nbody 3 "$bin/nbody/nbody --quick --csv $out/nbody.csv" ;;
    default) add nbody 40 "$bin/nbody/nbody --csv $out/nbody.csv" ;;
    full)
      add nbody 40 "$bin/nbody/nbody --csv $out/nbody.csv"
      [ -n "$gpu" ] && add nbody_tune 60 "$bin/nbody/nbody --mode tune --csv $out/nbody_tune.csv"
      if command -v cuobjdump >/dev/null; then  # the instruction mix the README's issue ceiling is read from
        add nbody_sass 5 "bash -c 'for o in $bin/nbody/CMakeFiles/nbody.dir/src/v*.cu.o; do cuobjdump --dump-sass \$o; done | python3 scripts/sass_mix.py'"
      fi ;;
  esac
fi
if want ground_seg; then
  mkdir -p "$images/ground_seg" "$topdown"
  q=""; [ "$mode" = quick ] && q=--quick
  add ground_seg 30 "$bin/ground_seg/ground_seg $q --topdown-out $topdown --csv $out/ground_seg.csv"
fi
if want ndt_graph; then
  mkdir -p "$images/ndt_graph"
  q=""; [ "$mode" = quick ] && q=--quick
  add ndt_graph 40 "$bin/ndt_graph/ndt_graph $q --images $images/ndt_graph --trace-csv $out/ndt_graph_trace.csv --csv $out/ndt_graph.csv"
  add ndt_graph_launch 10 "$bin/ndt_graph/ndt_graph --launch-bench $q --csv $out/ndt_graph_launch.csv"
  # the CUDA-graph plan measured (unroll sweep, graph build/update, kernel split, cooperative grids):
  # 7 s on an H200, so in every mode but the smoke run
  [ "$mode" != quick ] && add ndt_graph_study 15 "$bin/ndt_graph/ndt_graph --graph-study --csv $out/ndt_graph_graph_study.csv"
fi
# the profiles (every mode but the smoke run, on a GPU): each GPU version under ncu, one process a
# version, each bounded by the driver (common/profile.hpp), the whole driver by PROFILE_TIMEOUT
# seconds; a CSV left by an earlier run is removed first, so the plots never show a stale profile.
# SECONDS: measured on an H200 (the next run on this machine times its own)
profiled=0
if [ -n "$gpu" ] && [ "$mode" != quick ]; then
  profiled=1
  for entry in stream_compaction:120 nbody:40 ground_seg:40 ndt_graph:65; do
    sub=${entry%%:*}
    want "$sub" || continue
    add "${sub}_profile" "${entry#*:}" "rm -f $out/${sub}_profile.csv $out/${sub}_profile.csv.partial; timeout --kill-after=10 ${PROFILE_TIMEOUT:-1800} $bin/$sub/$sub --profile --csv $out/${sub}_profile.csv"
  done
fi
# the registries (the README's ladder table), the plots and README tables (from the CSVs only)
for sub in stream_compaction nbody ground_seg ndt_graph; do
  want $sub && add ${sub}_versions 1 "$bin/$sub/$sub --list --csv $out/${sub}_versions.csv"
done
readme_flag=$readme
plot_cmd() {  # SUB [extra plot.py args]: one sub-project's plots (and README tables for the reference)
  local sub=$1; shift
  local readme=""
  [ "$readme_flag" = 1 ] && readme="--readme $sub/README.md --registry $out/${sub}_versions.csv"
  [ "$student" = 1 ] && readme="--readme $sub/README.md --registry $out/${sub}_versions.csv --compare results"
  # the profile where its step wrote one (a profile killed before its CSV leaves the README's as it was)
  local prof="$out/${sub}_profile.csv" profile=""
  [ "$profiled" = 1 ] && profile="\$([ -f $prof ] && echo --profile-csv $prof)"
  echo "python3 scripts/plot.py --csv $out/$sub.csv --out $images/$sub $readme $profile $*"
}
if want stream_compaction; then
  tune=""; [ "$mode" = full ] && tune="--tune-csv $out/stream_compaction_tune.csv"
  add stream_compaction_plots 15 "$(plot_cmd stream_compaction "$tune")"
fi
if want nbody; then
  tune=""; [ "$mode" = full ] && [ -n "$gpu" ] && tune="--tune-csv $out/nbody_tune.csv"
  add nbody_plots 10 "$(plot_cmd nbody "$tune")"
fi
want ground_seg && add ground_seg_plots 15 "$(plot_cmd ground_seg --topdown-dir "$topdown")"
if want ndt_graph; then
  study=""; [ "$mode" != quick ] && study="--tune-csv $out/ndt_graph_graph_study.csv"
  add ndt_graph_plots 10 "$(plot_cmd ndt_graph --trace-csv "$out/ndt_graph_trace.csv" "$study")"
fi

# ---- run them: each step's time is kept for the next run's estimates
times=$scratch/run_all_times_$mode.txt
declare -A took
[ -f "$times" ] && while IFS='|' read -r k v; do took[$k]=$v; done < "$times"
estimate() { local n=${1%%|*} rest=${1#*|}; echo "${took[$n]:-${rest%%|*}}"; }
left=0
for st in "${steps[@]}"; do left=$((left + $(estimate "$st"))); done
failed=()
new_times=()
k=0
start_all=$SECONDS
for st in "${steps[@]}"; do
  k=$((k + 1))
  name=${st%%|*}
  cmd=${st#*|}; cmd=${cmd#*|}
  est=$(estimate "$st")
  printf '\n== [%d/%d] %s (about %ds; about %ds left in all)\n' "$k" "${#steps[@]}" "$name" "$est" "$left"
  t0=$SECONDS
  set +e
  case $name in
    *_plots) eval "$cmd" ;;
    *) eval "$cmd" 2>&1 | tee "$out/$name.txt"; (exit "${PIPESTATUS[0]}") ;;
  esac
  rc=$?
  set -e
  dt=$((SECONDS - t0))
  new_times+=("$name|$dt")
  left=$((left - est)); [ "$left" -lt 0 ] && left=0
  if [ "$rc" -ne 0 ]; then
    case $name in
      *_plots) failed+=("$name (exit $rc: plots not drawn; the CSV is in $out; pip install -r requirements.txt if matplotlib is missing)") ;;
      *) failed+=("$name (exit $rc; its rows and log are in $out/$name.txt)") ;;
    esac
    echo "== $name: exit $rc after ${dt}s; going on with the next step"
  fi
done
printf '%s\n' "${new_times[@]}" > "$times"
echo
echo "results: $out   plots: $images   ($((SECONDS - start_all))s)"
[ "$student" = 1 ] && echo "your results and plots are in your README's results block (and images/): commit them with your code"
if [ "$update" = 0 ] && [ "$quick" = 0 ] && [ "$student" = 0 ]; then
  echo "== your run next to the committed reference"
  for f in $only; do
    [ -f "$out/$f.csv" ] && { python3 scripts/compare.py "$out/$f.csv" || true; }
    echo
  done
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "run_all.sh: ${#failed[@]} step(s) failed:"
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
echo "run_all.sh: every step passed"
