#!/usr/bin/env bash
# Follows docs/adding_a_version.md literally on a copy of this repository (steps 1-7 of the worked
# example) and checks the outcome: the new version is listed, its CTest case exists, and on a GPU
# it PASSes in the driver, in its test and in the grade report. Usage: scripts/guide_selftest.sh WORK_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:?usage: scripts/guide_selftest.sh WORK_DIR}
rm -rf "$work" && mkdir -p "$work"
python3 - "$root" "$work" <<'PY'
import os, shutil, sys
sys.path.insert(0, os.path.join(sys.argv[1], "scripts"))
from make_handout import tracked_files
for f in tracked_files(sys.argv[1]):
    os.makedirs(os.path.dirname(os.path.join(sys.argv[2], f)) or ".", exist_ok=True)
    shutil.copy2(os.path.join(sys.argv[1], f), os.path.join(sys.argv[2], f))
PY
cd "$work"
# 1. the file
cp docs/templates/stream_compaction_v7_one_block.cu stream_compaction/src/v7_one_block.cu
# 2. the declaration, after scan_lookback's
python3 - <<'PY'
import re
# the two lines exactly as docs/adding_a_version.md prints them (the guide is what is tested)
guide = open("docs/adding_a_version.md").read()
decl = re.search(r"^void scan_one_block\(.*\n", guide, flags=re.M).group(0)
row = re.search(r'^ *\{\{"v7", "scan_one_block".*\n', guide, flags=re.M).group(0)
p = "stream_compaction/include/stream_compaction/device.hpp"; s = open(p).read()
anchor = re.search(r"void scan_lookback\(std::int64_t n, int\* out.*\n", s)
s = s[:anchor.end()] + decl + s[anchor.end():]
open(p, "w").write(s)
p = "stream_compaction/src/registry.cpp"; s = open(p).read()
anchor = re.search(r'.*"scan_lookback".*\n', s)
s = s[:anchor.end()] + row + s[anchor.end():]
open(p, "w").write(s)
open("grading/rubric.toml", "a").write("\n[stream_compaction.scan_one_block]\ncorrect = 2\n")
PY
# 4. build and check
cmake --preset release > configure.log
cmake --build --preset release -j "$(nproc)" --target stream_compaction_driver > build.log
build/release/stream_compaction/stream_compaction --list | grep one_block
build/release/stream_compaction/stream_compaction --version scan_one_block --n 1,1000,2^20+3,2^24 | tail -8
# 5. its test
ctest --test-dir build/release -R 'stream_compaction[.]scan_one_block$' --output-on-failure | tail -4
# 6. time next to the others, plot, compare
mkdir -p results/scratch
build/release/stream_compaction/stream_compaction --version scan_lookback,scan_one_block,scan_cub \
  --n 2^20,2^24 --csv results/scratch/one_block.csv > /dev/null
python3 scripts/plot.py --csv results/scratch/one_block.csv --out results/scratch/images/one_block
python3 scripts/compare.py results/scratch/one_block.csv
# 7. grade
report=$(python3 scripts/grade.py --subproject stream_compaction --versions scan_one_block | tail -1 | sed 's/.* -> //')
grep scan_one_block "$report"
if nvidia-smi -L > /dev/null 2>&1; then
  grep -q '| `scan_one_block` | correct |' "$report" || { echo "guide_selftest: not correct"; exit 1; }
fi
echo "guide_selftest: the guide's steps add a working version"
