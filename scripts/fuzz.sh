#!/usr/bin/env bash
# Fuzz the host-side readers and the flag parser (PCD, KITTI .bin/.label, nbody snapshot CSV,
# command line) with libFuzzer under AddressSanitizer + UBSan, SECONDS each (default 60). The
# seeds are generated (fuzz/make_corpus.py: every format variant, synthetic) into
# build/fuzz/seeds/, plus the real sample scans of $COURSE_DATA_DIR when it has them (inputs are
# capped at 64 KiB, so a scan contributes its header and first points). New interesting inputs go
# to build/fuzz/corpus/<target>/. Needs clang (apt install clang).
# A finding stops the script with the target's report and the crashing input's path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${1:-60}
cmake -S fuzz -B build/fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/fuzz -j "${JOBS:-$(nproc)}"
seeds=build/fuzz/seeds
rm -rf "$seeds"
python3 fuzz/make_corpus.py "$seeds"
data=${COURSE_DATA_DIR:-data}
real=0
if [ -d "$data" ]; then  # each sample's first 64 KiB (-max_len): its header and first points
  while IFS= read -r f; do
    case "$f" in *.pcd) dir=pcd ;; *) dir=kitti ;; esac
    head -c 65536 "$f" > "$seeds/$dir/real_$real"
    real=$((real + 1))
  done < <(find "$data" -type f \( -name '*.pcd' -o -name '*.bin' -o -name '*.label' \))
fi
echo "seeds: synthetic, plus $real real sample files from $data (COURSE_DATA_DIR)"
for t in pcd kitti snapshot cli; do
  mkdir -p "build/fuzz/corpus/$t" "build/fuzz/findings/$t"
  echo "fuzz_$t: ${seconds} s"
  # -malloc_limit_mb: a reader must not allocate what a small input cannot justify
  if ! build/fuzz/fuzz_$t "build/fuzz/corpus/$t" "$seeds/$t" -max_total_time="$seconds" -max_len=65536 -malloc_limit_mb=1024 \
       -rss_limit_mb=2048 -artifact_prefix="build/fuzz/findings/$t/" -print_final_stats=1 >"build/fuzz/fuzz_$t.log" 2>&1; then
    tail -40 "build/fuzz/fuzz_$t.log"
    echo "fuzz_$t found a problem: the input is in build/fuzz/findings/$t/ (replay: build/fuzz/fuzz_$t FILE)"
    exit 1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "build/fuzz/fuzz_$t.log" | tr '\n' ' '
  echo
done
echo "fuzz: no finding in ${seconds} s per target"
