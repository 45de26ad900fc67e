#!/usr/bin/env bash
# The main job: build (Release, this machine's GPU architecture), run every sub-project's driver
# on its default inputs, write the CSV, draw the plots and the README tables.
#
#   scripts/run_all.sh                     full benchmark sweeps; CSV, console logs and plots into
#                                          results/scratch/ (the README tables are left alone), then
#                                          your tables next to the committed reference run of the
#                                          closest GPU (scripts/compare.py)
#   scripts/run_all.sh --update-reference  the same, but the reference results: CSV into
#                                          results/<gpu>/, plots into images/, README tables rewritten
#   scripts/run_all.sh --quick             small sizes only (CI smoke run); everything into results/scratch/
#   --only nbody,ground_seg                with either: only those sub-projects' drivers and plots
#                                          (the others' results are left as they are)
#
# Without a GPU the drivers run their CPU versions and list the GPU ones as skipped. Real inputs
# (the labelled SemanticKITTI scan for ground_seg) are read from $COURSE_DATA_DIR (default data/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
quick=0
update=0
subprojects="stream_compaction nbody ground_seg ndt_graph"
only=$subprojects
usage="usage: scripts/run_all.sh [--quick] [--update-reference] [--only SUB[,SUB...]] (SUB: ${subprojects// /, })"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --update-reference) update=1 ;;
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
if [ "$quick" = 1 ] && [ "$update" = 1 ]; then
  echo "run_all.sh: --quick runs are never the reference (drop one of the two flags)" >&2
  exit 2
fi

preset=${PRESET:-release}
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
if [ "$update" = 0 ]; then
  out=$scratch
  images=$scratch/images
else
  slug=$(echo "$gpu" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\+/-/g; s/^-//; s/-$//')
  out=results/$slug
  images=images
fi
mkdir -p "$out"

if want stream_compaction; then
echo "== stream_compaction"
if [ "$quick" = 1 ]; then
  "$bin/stream_compaction/stream_compaction" --quick --csv "$out/stream_compaction.csv"
else
  "$bin/stream_compaction/stream_compaction" --sweep --block-sweep --end-to-end --csv "$out/stream_compaction.csv" \
    | tee "$out/stream_compaction.txt"
  "$bin/stream_compaction/stream_compaction_tune" --csv "$out/stream_compaction_tune.csv" | tee "$out/stream_compaction_tune.txt"
  "$bin/common/gpu_means_roofline" | tee "$out/gpu_means_roofline.txt"
  [ -n "$gpu" ] && "$bin/common/group_by_key_bench" --csv "$out/group_by_key.csv" | tee "$out/group_by_key.txt"
  # the multi-GPU sort, one process per GPU, where there are two GPUs
  gpus=$(nvidia-smi -L 2>/dev/null | wc -l || echo 0)
  if [ "$gpus" -ge 2 ] && [ -x "$bin/stream_compaction/stream_compaction_multi_gpu" ]; then
    "$bin/stream_compaction/stream_compaction_multi_gpu" --launch 2 --csv "$out/stream_compaction_multi_gpu.csv" \
      | tee "$out/stream_compaction_multi_gpu.txt"
  fi
fi
fi

if want nbody; then
echo "== nbody"
if [ "$quick" = 1 ]; then
  "$bin/nbody/nbody" --quick --csv "$out/nbody.csv"
else
  "$bin/nbody/nbody" --csv "$out/nbody.csv" | tee "$out/nbody.txt"
  [ -n "$gpu" ] && "$bin/nbody/nbody" --mode tune --csv "$out/nbody_tune.csv" | tee "$out/nbody_tune.txt"
  if command -v cuobjdump >/dev/null; then  # the instruction mix the README's issue ceiling is read from
    for obj in "$bin"/nbody/CMakeFiles/nbody.dir/src/v*.cu.o; do cuobjdump --dump-sass "$obj"; done \
      | python3 scripts/sass_mix.py | tee "$out/nbody_sass.txt"
  fi
fi
fi

topdown="$scratch/ground_seg_topdown"  # derived from the scans: never committed (their licences)
if want ground_seg; then
echo "== ground_seg"
mkdir -p "$images/ground_seg" "$topdown"
if [ "$quick" = 1 ]; then
  "$bin/ground_seg/ground_seg" --quick --topdown-out "$topdown" --csv "$out/ground_seg.csv"
else
  "$bin/ground_seg/ground_seg" --topdown-out "$topdown" --csv "$out/ground_seg.csv" | tee "$out/ground_seg.txt"
fi
fi

if want ndt_graph; then
echo "== ndt_graph"
mkdir -p "$images/ndt_graph"
if [ "$quick" = 1 ]; then
  "$bin/ndt_graph/ndt_graph" --quick --images "$images/ndt_graph" --trace-csv "$out/ndt_graph_trace.csv" --csv "$out/ndt_graph.csv"
else
  "$bin/ndt_graph/ndt_graph" --images "$images/ndt_graph" --trace-csv "$out/ndt_graph_trace.csv" --csv "$out/ndt_graph.csv" \
    | tee "$out/ndt_graph.txt"
fi
quick_flag=()
[ "$quick" = 1 ] && quick_flag=(--quick)
"$bin/ndt_graph/ndt_graph" --launch-bench "${quick_flag[@]}" --csv "$out/ndt_graph_launch.csv" | tee "$out/ndt_graph_launch.txt"
fi

echo "== plots and tables"
if want stream_compaction; then
tune_args=()
[ -f "$out/stream_compaction_tune.csv" ] && [ "$quick" = 0 ] && tune_args=(--tune-csv "$out/stream_compaction_tune.csv")
readme_args=()
[ "$out" != "$scratch" ] && readme_args=(--readme stream_compaction/README.md)
python3 scripts/plot.py --csv "$out/stream_compaction.csv" "${tune_args[@]}" --out "$images/stream_compaction" \
  "${readme_args[@]}" || echo "(plots not drawn: see the message above; the CSV is in $out)"
fi
if want nbody; then
nbody_tune=()
[ -f "$out/nbody_tune.csv" ] && [ "$quick" = 0 ] && nbody_tune=(--tune-csv "$out/nbody_tune.csv")
nbody_readme=()
[ "$out" != "$scratch" ] && nbody_readme=(--readme nbody/README.md)
python3 scripts/plot.py --csv "$out/nbody.csv" "${nbody_tune[@]}" --out "$images/nbody" "${nbody_readme[@]}" \
  || echo "(plots not drawn: see the message above; the CSV is in $out)"
fi
if want ground_seg; then
gs_readme=()
[ "$out" != "$scratch" ] && gs_readme=(--readme ground_seg/README.md)
python3 scripts/plot.py --csv "$out/ground_seg.csv" --topdown-dir "$topdown" --out "$images/ground_seg" "${gs_readme[@]}" \
  || echo "(plots not drawn: see the message above; the CSV is in $out)"
fi
if want ndt_graph; then
ndt_readme=()
[ "$out" != "$scratch" ] && ndt_readme=(--readme ndt_graph/README.md)
python3 scripts/plot.py --csv "$out/ndt_graph.csv" --trace-csv "$out/ndt_graph_trace.csv" --out "$images/ndt_graph" \
  "${ndt_readme[@]}" || echo "(plots not drawn: see the message above; the CSV is in $out)"
fi
echo "results: $out   plots: $images"
if [ "$update" = 0 ] && [ "$quick" = 0 ]; then
  echo "== your run next to the committed reference"
  for f in $only; do
    python3 scripts/compare.py "$out/$f.csv" || true
    echo
  done
fi
