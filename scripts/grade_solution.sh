#!/usr/bin/env bash
# The solution graded by the course's grader as a student's submission would be: the handout of
# every sub-project with every STUDENT block filled from the solution, graded on this GPU against
# the whole rubric. Writes results/<gpu>/grade_solution.{json,md}, which tests/grader/test_path.py
# holds against the rubric (every version graded, all correct, the rubric's maximum).
#   scripts/grade_solution.sh WORK_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mkdir -p "${1:?usage: scripts/grade_solution.sh WORK_DIR}" && cd "$1" && pwd)
cd "$root"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
[ -n "$gpu" ] || { echo "grade_solution: needs a GPU (nvidia-smi lists none)" >&2; exit 2; }
slug=$(echo "$gpu" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\+/-/g; s/^-//; s/-$//')
python3 scripts/make_handout.py "$work/handout" --force >/dev/null
rm -rf "$work/students" && mkdir -p "$work/students"
python3 - "$work/handout" "$root" "$work/students/solution" <<'PY'
import sys
sys.path.insert(0, sys.argv[2] + "/grading")
from judge import classgen
classgen.make_student(sys.argv[1], sys.argv[2], sys.argv[3], "solution")
PY
python3 scripts/grade.py --students "$work/students" --handout "$work/handout" --out "$work/grade"
mkdir -p "results/$slug"
cp "$work/grade/students/solution/report.json" "results/$slug/grade_solution.json"
cp "$work/grade/students/solution/report.md" "results/$slug/grade_solution.md"
echo "grade_solution: results/$slug/grade_solution.{json,md}"
