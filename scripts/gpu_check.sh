#!/usr/bin/env bash
# The GPU check: what proves a GPU version works (CI has no GPU). Builds Release for this GPU,
# runs every test (plus the 2^28+1 data tests), compute-sanitizer memcheck over the GPU tests and
# racecheck + synccheck over the shared-memory kernels, the course's own CIS 565 driver when its
# folder is given (CIS565_DRIVER_DIR), the roofline example and each driver's quick benchmark,
# then prints a summary table. Logs go to $LOG_DIR (default results/scratch/gpu_check).
# RUN_TESTS=0 / RUN_SANITIZER=0 / RUN_DRIVERS=0 / RUN_GRADING=0 leave a group of steps out (to split the work
# over several sessions on a lent GPU); the default runs everything.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build/gpu}
logs=${LOG_DIR:-$root/results/scratch/gpu_check}
jobs=${JOBS:-$(nproc)}
mkdir -p "$logs"
declare -a names results

step() {  # step NAME LOGFILE COMMAND...
  local name=$1 log=$2
  shift 2
  echo "== $name"
  local start=$SECONDS
  if "$@" >"$log" 2>&1; then results+=("PASS  $((SECONDS - start)) s"); else results+=("FAIL  $((SECONDS - start)) s  (see $log)"); tail -30 "$log"; fi
  names+=("$name")
}

extra=()
[ -n "${CIS565_DRIVER_DIR:-}" ] && extra+=("-DCIS565_DRIVER_DIR=$CIS565_DRIVER_DIR")
step "configure + build (Release, native arch)" "$logs/build.log" \
  bash -c "cmake -S '$root' -B '$build' -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_FLAGS=-lineinfo ${extra[*]:-} && cmake --build '$build' -j $jobs"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv > "$logs/nvidia-smi.csv" 2>&1

if [ "${RUN_TESTS:-1}" = 1 ]; then
step "all tests (ctest, with 2^28+1 data tests)" "$logs/ctest.log" \
  env SC_LARGE_TESTS=1 ctest --test-dir "$build" --output-on-failure -j 1

fi

if [ "${RUN_SANITIZER:-1}" = 1 ]; then
san() {  # san TOOL TESTBIN FILTER
  env SC_TEST_MAX_N=${3:-70000} compute-sanitizer --tool "$1" --error-exitcode 9 "$build/tests/$2" --gtest_filter="$4"
}
step "compute-sanitizer memcheck: common GPU tests" "$logs/memcheck_common.log" \
  compute-sanitizer --tool memcheck --error-exitcode 9 "$build/tests/common_tests" --gtest_filter='DeviceInfo*:Ceilings*:BlockPrimitives*'
step "compute-sanitizer memcheck: stream_compaction GPU tests" "$logs/memcheck_sc.log" \
  san memcheck stream_compaction_tests 2000000 'Gpu*:Sc/Gpu*:Cis565*:-GpuLarge*'
step "compute-sanitizer racecheck: shared-memory kernels" "$logs/racecheck_sc.log" \
  san racecheck stream_compaction_tests 70000 'Sc/GpuEveryVersion.*'
step "compute-sanitizer synccheck: shared-memory kernels" "$logs/synccheck_sc.log" \
  san synccheck stream_compaction_tests 70000 'Sc/GpuEveryVersion.*'
step "compute-sanitizer racecheck: block primitives" "$logs/racecheck_common.log" \
  compute-sanitizer --tool racecheck --error-exitcode 9 "$build/tests/common_tests" --gtest_filter='BlockPrimitives*'
step "compute-sanitizer memcheck: nbody GPU tests" "$logs/memcheck_nbody.log" \
  compute-sanitizer --tool memcheck --error-exitcode 9 "$build/tests/nbody_tests" --gtest_filter='Gpu*:-GpuMulti*'
# NCCL's set-up probes its kernels (cudaFuncGetAttributes -> "no kernel image") and enables peer
# access that may already be on, and handles both returned errors itself: report memory errors,
# not those API return codes. (Skipped inside the test with fewer than 2 GPUs.)
step "compute-sanitizer memcheck: multi-GPU test (NCCL)" "$logs/memcheck_nbody_multi.log" \
  compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 "$build/tests/nbody_tests" --gtest_filter='GpuMulti*'
step "compute-sanitizer racecheck: nbody force kernels" "$logs/racecheck_nbody.log" \
  compute-sanitizer --tool racecheck --error-exitcode 9 "$build/tests/nbody_tests" --gtest_filter='GpuForces.Every*'
step "compute-sanitizer synccheck: nbody force kernels" "$logs/synccheck_nbody.log" \
  compute-sanitizer --tool synccheck --error-exitcode 9 "$build/tests/nbody_tests" --gtest_filter='GpuForces.Every*'

step "compute-sanitizer memcheck: ground_seg GPU tests" "$logs/memcheck_ground_seg.log" \
  compute-sanitizer --tool memcheck --error-exitcode 9 "$build/tests/ground_seg_tests" --gtest_filter='GroundSegGpu*'
step "compute-sanitizer racecheck: ground_seg GPU tests" "$logs/racecheck_ground_seg.log" \
  compute-sanitizer --tool racecheck --error-exitcode 9 "$build/tests/ground_seg_tests" --gtest_filter='GroundSegGpu.Edge*:GroundSegGpu.EveryVersionMatchesTheCpuOnSim*'
step "compute-sanitizer memcheck: ndt_graph GPU tests" "$logs/memcheck_ndt_graph.log" \
  compute-sanitizer --tool memcheck --error-exitcode 9 "$build/tests/ndt_graph_tests" --gtest_filter='NdtGpu.*:Ndt/NdtGpuVersion.*:-NdtGpu.CooperativeLaunchTooLarge*'
step "compute-sanitizer memcheck: ndt_graph graph study (explicit nodes, graph updates)" "$logs/memcheck_ndt_graph_study.log" \
  compute-sanitizer --tool memcheck --error-exitcode 9 "$build/tests/ndt_graph_tests" --gtest_filter='GraphStudyGpu.*'
# This test provokes cudaErrorCooperativeLaunchTooLarge on purpose and asserts it; memory errors
# are still reported, the API return code it checks is not.
step "compute-sanitizer memcheck: ndt_graph oversized cooperative launch" "$logs/memcheck_ndt_graph_coop.log" \
  compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 "$build/tests/ndt_graph_tests" --gtest_filter='NdtGpu.CooperativeLaunchTooLarge*'
# racecheck (CUDA 13.0) kills the process on a graph with a conditional WHILE node (v5, v6, v7): it runs
# over the versions that launch the same evaluation/step kernels from streams, graphs and a
# cooperative launch, and v9's resident kernel; memcheck and synccheck cover v5/v6/v7 too.
step "compute-sanitizer racecheck: ndt_graph kernels" "$logs/racecheck_ndt_graph.log" \
  env NDT_TEST_VERSIONS=v1_naive,v2_device_step,v3_cooperative,v4_graph_batch,v8_programmatic_launch,v9_resident_clusters,v10_mapped_io compute-sanitizer --tool racecheck \
  --error-exitcode 9 "$build/tests/ndt_graph_tests" --gtest_filter='Ndt/NdtGpuVersion.MatchesTheReferenceOnASimulatedPair/*:NdtGpu.MapBuild*'
step "compute-sanitizer synccheck: ndt_graph kernels" "$logs/synccheck_ndt_graph.log" \
  compute-sanitizer --tool synccheck --error-exitcode 9 "$build/tests/ndt_graph_tests" --gtest_filter='Ndt/NdtGpuVersion.MatchesTheReferenceOnASimulatedPair/*:NdtGpu.Batched*'
step "compute-sanitizer memcheck: GroupByKey with both sorts, one-sweep sort" "$logs/memcheck_group_by_key.log" \
  compute-sanitizer --tool memcheck --error-exitcode 9 "$build/tests/common_tests" --gtest_filter='GroupByKey*:Onesweep*'
# The multi-GPU sort: both ranks under the tool (2 processes on 2 GPUs; 77 = fewer GPUs, skipped).
# NCCL's own probing returns API errors it handles: memory errors are reported, those codes not.
if [ -x "$build/stream_compaction/stream_compaction_multi_gpu" ]; then
  for tool in memcheck racecheck; do
    step "compute-sanitizer $tool: multi-GPU sort, 2 processes" "$logs/${tool}_multi_gpu_sort.log" \
      bash -c "compute-sanitizer --tool $tool --target-processes all --report-api-errors no --error-exitcode 9 \
        '$build/stream_compaction/stream_compaction_multi_gpu' --launch 2 --n 300007 --reps 1; rc=\$?; [ \$rc = 0 ] || [ \$rc = 77 ]"
  done
fi
fi

if [ "${RUN_DRIVERS:-1}" = 1 ]; then
if [ -x "$build/stream_compaction/cis565_driver" ]; then
  step "course's own CIS 565 test driver" "$logs/cis565_driver.log" \
    bash -c "'$build/stream_compaction/cis565_driver' | tee /dev/stderr | { ! grep -q FAIL; }"
fi
step "roofline worked example (gpuMeans)" "$logs/gpu_means_roofline.log" "$build/common/gpu_means_roofline"
step "stream_compaction driver, quick" "$logs/stream_compaction_quick.log" \
  "$build/stream_compaction/stream_compaction" --quick --csv "$logs/stream_compaction_quick.csv"
step "nbody driver, quick" "$logs/nbody_quick.log" "$build/nbody/nbody" --quick --csv "$logs/nbody_quick.csv"
if command -v ncu >/dev/null; then  # the instruction counts behind nbody's cost model (registry)
  step "nbody dynamic instruction mix (ncu, n = 2^16)" "$logs/nbody_ncu_mix.log" bash -c \
    "ncu --metrics \$('$root/scripts/ncu_mix.py' --metrics) --csv --page raw --launch-count 100 \
       --kernel-name regex:'^(naive|tiled|rsqrt|tuned|warp_split|multi_body)_kernel' \
       '$build/nbody/nbody' --mode step --n 65536 --reps 1 > '$logs/ncu_nbody.csv' && \
     '$root/scripts/ncu_mix.py' --n 65536 '$logs/ncu_nbody.csv'"
fi
step "ground_seg driver, quick" "$logs/ground_seg_quick.log" "$build/ground_seg/ground_seg" --quick --csv "$logs/ground_seg_quick.csv"
step "ndt_graph driver, quick" "$logs/ndt_graph_quick.log" "$build/ndt_graph/ndt_graph" --quick --csv "$logs/ndt_graph_quick.csv"
step "ndt_graph graph study, quick" "$logs/ndt_graph_study_quick.log" "$build/ndt_graph/ndt_graph" --graph-study --quick --csv "$logs/ndt_graph_study_quick.csv"
# as the grader runs them: every timed run on a new input, its output checked (a replay fails)
for sub in stream_compaction nbody ground_seg ndt_graph; do
  step "$sub driver, quick, fresh inputs" "$logs/${sub}_fresh.log" "$build/$sub/$sub" --quick --fresh-inputs \
    --csv "$logs/${sub}_fresh.csv"
done
fi

# Teaching and grading: the per-version cases, the grader on this GPU (a generated class with the
# kernels recorded, the four-sub-project students-per-hour benchmark) and the handout cycle with a
# GPU exercise filled in
if [ "${RUN_GRADING:-1}" = 1 ]; then
step "per-version CTest cases (label version)" "$logs/ctest_version.log" ctest --test-dir "$build" -L version
step "grader: a tampered class and the students-per-hour benchmark" "$logs/grading_check.log" \
  scripts/grading_check.sh "$logs/grading_check"
step "builds for other GPUs on this one (75, 80 JIT from PTX; 80-real: no code)" "$logs/arch_check.log" \
  scripts/arch_check.sh "$logs/arch" 75 80 80-real
step "handout selftest (v1_naive filled: scan_naive alone correct)" "$logs/handout_selftest.log" \
  python3 scripts/handout_selftest.py "$logs/handout" --fill stream_compaction/v1_naive --expect stream_compaction/scan_naive
step "handout of stream_compaction alone (the others left out, common/'s scans its v4)" "$logs/handout_sc_selftest.log" \
  python3 scripts/handout_selftest.py "$logs/handout_sc" --subproject stream_compaction \
    --fill stream_compaction/v1_naive --expect stream_compaction/scan_naive
# the solution graded by the course's grader on this GPU, as a submission: the committed grade
# (results/<gpu>/grade_solution.*) that tests/grader/test_path.py holds against the rubric
step "the solution graded against the whole rubric" "$logs/grade_solution.log" scripts/grade_solution.sh "$logs/grade_solution"
fi

echo
echo "GPU check on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1):"
fail=0
for i in "${!names[@]}"; do
  printf '  %-55s %s\n' "${names[$i]}" "${results[$i]}"
  case "${results[$i]}" in FAIL*) fail=1 ;; esac
done
grep -h "tests passed\|tests failed" "$logs/ctest.log" 2>/dev/null | sed 's/^/  ctest: /'
grep -h "ERROR SUMMARY" "$logs"/memcheck_*.log "$logs"/racecheck_*.log "$logs"/synccheck_*.log 2>/dev/null | sort | uniq -c | sed 's/^/  sanitizer:/'
exit $fail
