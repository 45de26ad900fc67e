#!/usr/bin/env bash
# Build and run every test. On a machine with a GPU: the release preset, built for that GPU
# ("native"), JUnit report in build/release/junit.xml. Without a visible GPU (a laptop, CI) the GPU
# tests can only skip, so the build is the `ci` preset's single architecture (sm_90), which keeps
# it fast (JUnit report in build/ci/junit.xml); `cmake --preset release` there builds the portable
# set of architectures instead. PRESET=<name> picks a preset. Every test that may use the GPU holds
# CTest's lock `gpu` (tests/CMakeLists.txt): those run one at a time, since the ceilings and the
# drivers' timings are measured; the release preset runs the CPU-only tests beside them (4 at once).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ -z "${PRESET:-}" ]; then
  if nvidia-smi -L >/dev/null 2>&1; then
    PRESET=release
  else
    PRESET=ci
    echo "run_tests: no GPU visible (nvidia-smi): building for sm_90 only into build/ci; the GPU tests will say skipped"
  fi
fi
cmake --preset "$PRESET"
cmake --build --preset "$PRESET" -j "${JOBS:-$(nproc)}"
# CTest reports a skipped test as passed: the last line counts not implemented and skipped apart
set +e
ctest --preset "$PRESET"
rc=$?
set -e
junit=$(python3 -c 'import json,sys; p=[t for t in json.load(open("CMakePresets.json"))["testPresets"] if t["name"]==sys.argv[1]]; print(p[0].get("output",{}).get("outputJUnitFile","").replace("${sourceDir}/","") if p else "")' "$PRESET")
if [ -n "$junit" ] && [ -f "$junit" ]; then
  python3 scripts/test_summary.py "$junit" || true
fi
exit $rc
