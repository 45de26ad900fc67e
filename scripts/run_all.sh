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
#
# Without a GPU the drivers run their CPU versions and list the GPU ones as skipped. Real inputs
# (the labelled SemanticKITTI scan for ground_seg) are read from $COURSE_DATA_DIR (default data/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
quick=0
update=0
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --update-reference) update=1 ;;
    *) echo "usage: scripts/run_all.sh [--quick] [--update-reference]" >&2; exit 2 ;;
  esac
done
if [ "$quick" = 1 ] && [ "$update" = 1 ]; then
  echo "run_all.sh: --quick runs are never the reference (drop one of the two flags)" >&2
  exit 2
fi

preset=${PRESET:-release}
cmake --preset "$preset"
cmake --build --preset "$preset" -j "${JOBS:-$(nproc)}"
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

echo "== ground_seg"
topdown="$scratch/ground_seg_topdown"  # derived from the scans: never committed (their licences)
mkdir -p "$images/ground_seg" "$topdown"
if [ "$quick" = 1 ]; then
  "$bin/ground_seg/ground_seg" --quick --topdown-out "$topdown" --csv "$out/ground_seg.csv"
else
  "$bin/ground_seg/ground_seg" --topdown-out "$topdown" --csv "$out/ground_seg.csv" | tee "$out/ground_seg.txt"
fi

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

echo "== plots and tables"
tune_args=()
[ -f "$out/stream_compaction_tune.csv" ] && [ "$quick" = 0 ] && tune_args=(--tune-csv "$out/stream_compaction_tune.csv")
readme_args=()
[ "$out" != "$scratch" ] && readme_args=(--readme stream_compaction/README.md)
python3 scripts/plot.py --csv "$out/stream_compaction.csv" "${tune_args[@]}" --out "$images/stream_compaction" \
  "${readme_args[@]}" || echo "(plots not drawn: see the message above; the CSV is in $out)"
nbody_tune=()
[ -f "$out/nbody_tune.csv" ] && [ "$quick" = 0 ] && nbody_tune=(--tune-csv "$out/nbody_tune.csv")
nbody_readme=()
[ "$out" != "$scratch" ] && nbody_readme=(--readme nbody/README.md)
python3 scripts/plot.py --csv "$out/nbody.csv" "${nbody_tune[@]}" --out "$images/nbody" "${nbody_readme[@]}" \
  || echo "(plots not drawn: see the message above; the CSV is in $out)"
gs_readme=()
[ "$out" != "$scratch" ] && gs_readme=(--readme ground_seg/README.md)
python3 scripts/plot.py --csv "$out/ground_seg.csv" --topdown-dir "$topdown" --out "$images/ground_seg" "${gs_readme[@]}" \
  || echo "(plots not drawn: see the message above; the CSV is in $out)"
ndt_readme=()
[ "$out" != "$scratch" ] && ndt_readme=(--readme ndt_graph/README.md)
python3 scripts/plot.py --csv "$out/ndt_graph.csv" --trace-csv "$out/ndt_graph_trace.csv" --out "$images/ndt_graph" \
  "${ndt_readme[@]}" || echo "(plots not drawn: see the message above; the CSV is in $out)"
echo "results: $out   plots: $images"
if [ "$update" = 0 ] && [ "$quick" = 0 ]; then
  echo "== your run next to the committed reference"
  for f in stream_compaction nbody ground_seg ndt_graph; do
    python3 scripts/compare.py "$out/$f.csv" || true
    echo
  done
fi
