#!/usr/bin/env bash
# Fuzz the host-side readers and the flag parser (PCD, KITTI .bin/.label, nbody snapshot CSV,
# command line) with libFuzzer under AddressSanitizer + UBSan, SECONDS each (default 60),
# starting from the committed corpus in fuzz/corpus/. New interesting inputs go to
# build/fuzz/corpus/<target>/ (the committed corpus is not modified). Needs clang (apt install clang).
# A finding stops the script with the target's report and the crashing input's path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${1:-60}
cmake -S fuzz -B build/fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/fuzz -j "${JOBS:-$(nproc)}"
for t in pcd kitti snapshot cli; do
  mkdir -p "build/fuzz/corpus/$t" "build/fuzz/findings/$t"
  echo "fuzz_$t: ${seconds} s"
  # -malloc_limit_mb: a reader must not allocate what a small input cannot justify
  if ! build/fuzz/fuzz_$t "build/fuzz/corpus/$t" "fuzz/corpus/$t" -max_total_time="$seconds" -malloc_limit_mb=1024 \
       -rss_limit_mb=2048 -artifact_prefix="build/fuzz/findings/$t/" -print_final_stats=1 >"build/fuzz/fuzz_$t.log" 2>&1; then
    tail -40 "build/fuzz/fuzz_$t.log"
    echo "fuzz_$t found a problem: the input is in build/fuzz/findings/$t/ (replay: build/fuzz/fuzz_$t FILE)"
    exit 1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "build/fuzz/fuzz_$t.log" | tr '\n' ' '
  echo
done
echo "fuzz: no finding in ${seconds} s per target"
