#!/usr/bin/env bash
# What builds for other GPUs do on this one: each architecture in the list gets its own build of
# the stream_compaction and ndt_graph drivers (and stream_compaction's tests), run here. A build
# that carries PTX for an older architecture is JIT-compiled by the driver for this GPU, so the
# versions run as they would on a T4 or an A100 as far as the code goes (not the speed or the
# memory): everything that does not need sm_90 must PASS, and the Hopper versions must say why they
# are skipped (never trap, FAIL or fall back silently). A build with no code for this GPU at all
# ("80-real") must say so in one line with the rebuild command.
#
#   scripts/arch_check.sh OUT_DIR [ARCH ...]     (default: 75 80 80-real; e.g. 86 for an RTX 30xx)
#
# Writes OUT_DIR/arch_<ARCH>_*.txt and prints a summary table: architecture, version, status.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${1:?usage: scripts/arch_check.sh OUT_DIR [ARCH ...]}
shift
archs=("$@")
[ ${#archs[@]} -eq 0 ] && archs=(75 80 80-real)
mkdir -p "$out"
jobs=${JOBS:-$(nproc)}
summary=()
status=0
for a in "${archs[@]}"; do
  tag=${a//[^0-9a-z]/_}
  b=build/arch_$tag
  log=$out/arch_${tag}_build.log
  echo "== build for $a"
  if ! { cmake -S . -B "$b" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$a" >"$log" 2>&1 &&
         cmake --build "$b" -j "$jobs" --target stream_compaction_driver ndt_graph_driver stream_compaction_tests >>"$log" 2>&1; }; then
    echo "arch_check: the build for $a failed (see $log)"
    summary+=("$a|(build)|FAIL: see $log")
    status=1
    continue
  fi
  sc=$out/arch_${tag}_stream_compaction
  "$b/stream_compaction/stream_compaction" --list > "$sc.list.txt" 2>&1
  "$b/stream_compaction/stream_compaction" --op scan,compact --n 2^20+3 --reps 5 --csv "$sc.csv" > "$sc.txt" 2>&1
  echo "stream_compaction (exit $?): $(grep -c ',pass,' "$sc.csv" 2>/dev/null) rows pass"
  ndt=$out/arch_${tag}_ndt_graph
  "$b/ndt_graph/ndt_graph" --quick --version cpu,v4_graph_batch,v8_programmatic_launch --csv "$ndt.csv" > "$ndt.txt" 2>&1
  echo "ndt_graph (exit $?)"
  tests=$out/arch_${tag}_tests.txt
  SC_TEST_MAX_N=70000 "$b/tests/stream_compaction_tests" --gtest_filter='Sc/GpuEveryVersion.*' > "$tests" 2>&1
  echo "stream_compaction_tests (exit $?): $(grep -c '^\[       OK \]' "$tests") passed, $(grep -c '^\[  SKIPPED \] Sc/.*(' "$tests") skipped, $(grep -c '^\[  FAILED  \] Sc/.*(' "$tests") failed"
  for csv in "$sc.csv" "$ndt.csv"; do
    [ -f "$csv" ] || { summary+=("$a|$(basename "$csv")|no CSV: see ${csv%.csv}.txt"); status=1; continue; }
    python3 - "$csv" "$a" <<'PY' >> "$out/arch_summary.tmp"
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    if r["kind"] == "meta" or r["role"] == "reference":
        continue
    if r["version"] in ("scan_tma", "compact_tma", "v8_programmatic_launch", "scan_lookback", "compact_fused", "v4_graph_batch", "scan_cub"):
        print(f'{sys.argv[2]}|{r["version"]}|{r["status"]}{": " + r["detail"] if r["detail"] else ""}')
PY
  done
  grep -h ",fail," "$sc.csv" "$ndt.csv" >/dev/null 2>&1 && status=1
  grep -q '^\[  FAILED  \]' "$tests" && status=1
done
echo
echo "| build | version | status on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) |"
echo "|---|---|---|"
[ -f "$out/arch_summary.tmp" ] && sort -u "$out/arch_summary.tmp" | awk -F'|' '{printf "| %s | %s | %s |\n", $1, $2, $3}'
for s in "${summary[@]}"; do echo "| ${s//|/ | } |"; done
rm -f "$out/arch_summary.tmp"
exit $status
