"""The course's pieces in step (no build needed): every exercise has a place on its sub-project's
path and rubric points, every rubric entry names real exercises and a registered version, the path
is in an order where nothing comes before what it builds on, the committed solution grade covers
the rubric, the worked example of docs/adding_a_version.md uses ids no version has, the device
stubs are generated where device functions are exercises, and the test summary counts stubs apart."""

import json
import os
import re
import textwrap
from pathlib import Path

import pytest

import exercise_markers as em
import handout_path
import test_summary
from conftest import ROOT
from judge import rubric as rubric_mod


@pytest.fixture(scope="module")
def path():
    return handout_path.Path.load(ROOT)


def exercises(path):
    return {k for k in path.exercise_files}


def registry_names(sub):
    """Version names and ids typed in a sub-project's registry: {"name": id}."""
    text = ""
    for d, _, names in os.walk(os.path.join(ROOT, sub)):
        for n in names:
            if n.startswith("registry") and n.endswith((".cpp", ".hpp")):
                text += Path(os.path.join(d, n)).read_text(encoding="utf-8")
    return {m.group(2): m.group(1) for m in re.finditer(r'\{"([A-Za-z0-9_-]+)", "([a-z0-9_]+)"', text)}


def test_every_exercise_is_on_its_path_once_and_nothing_else_is(path):
    for sub in em.SUBPROJECTS:
        on_path = [s["exercise"] for s in path.steps.get(sub, [])]
        assert len(on_path) == len(set(on_path)), f"{sub}: an exercise twice on the path"
        mine = {k.split("/", 1)[1] for k in exercises(path) if k.startswith(sub + "/")}
        assert set(on_path) == mine, f"{sub}: path {sorted(set(on_path) ^ mine)} differ from the markers"
        for s in path.steps[sub]:
            assert s.get("effort") and s.get("hints"), f"{sub}/{s['exercise']}: no effort or hints"


def test_every_exercise_earns_points_and_every_rubric_entry_names_real_exercises(path):
    rub = rubric_mod.load(os.path.join(ROOT, "grading", "rubric.toml"))
    known = exercises(path)
    for sub in em.SUBPROJECTS:
        for s in path.steps[sub]:
            assert path.versions_of(sub, s["exercise"]), f"{sub}/{s['exercise']}: no rubric entry is graded on it"
        names = registry_names(sub)
        for rule in rub.select([sub]):
            assert rule.version in names, f"rubric {rule.key}: no such version in {sub}'s registry"
            for req in rule.requires:
                key = req if "/" in req else f"{sub}/{req}"
                assert key in known, f"rubric {rule.key}: requires {req}, which is no exercise"
            assert rule.points_max > 0


def test_the_path_never_asks_for_an_exercise_before_what_it_builds_on(path):
    """An exercise needs what every version graded on it requires (a compaction's map-scan-scatter
    works with any scan: it needs none in particular; the fused compaction needs v5's look-back)."""
    for sub in em.SUBPROJECTS:
        order = {s["exercise"]: i for i, s in enumerate(path.steps[sub])}
        needs = {}
        for rule in path.rubric.get(sub, {}).values():
            if isinstance(rule, dict) and rule.get("requires"):
                first, rest = rule["requires"][0], {r for r in rule["requires"][1:] if "/" not in r}
                needs[first] = needs[first] & rest if first in needs else rest
        for ex, reqs in needs.items():
            for req in reqs:
                assert order[req] < order[ex], f"{sub}: {ex} comes before {req}, which it builds on, on the path"


def test_every_exercise_file_states_a_prediction(path):
    for key in exercises(path):
        sub, ex = key.split("/")
        if ex.startswith("cpu"):  # the CPU exercises port the reference: no speed to predict
            continue
        assert path.prediction_of(sub, ex), f"{key}: its file's header has no 'Prediction'"


def test_the_committed_solution_grade_covers_the_rubric():
    """The newest results/<gpu>/grade_solution.json (scripts/gpu_check.sh grades the solution with
    the course's grader): every rubric version graded, all correct, the maximum the rubric's."""
    rub = rubric_mod.load(os.path.join(ROOT, "grading", "rubric.toml"))
    grades = [
        p
        for p in (
            os.path.join(ROOT, "results", d, "grade_solution.json") for d in os.listdir(os.path.join(ROOT, "results"))
        )
        if os.path.isfile(p)
    ]
    assert grades, "no results/<gpu>/grade_solution.json (scripts/gpu_check.sh writes it)"

    def when(p):
        g = json.loads(Path(p).read_text())
        return (g.get("provenance") or {}).get("graded_at", "")

    newest = max(grades, key=when)
    g = json.loads(Path(newest).read_text())
    rows = g.get("grades") or g.get("versions") or []
    graded = {f"{v['subproject']}/{v['version']}": v for v in rows}
    missing = {r.key for r in rub.versions} - set(graded)
    assert not missing, f"{os.path.relpath(newest, ROOT)} lacks {sorted(missing)}: rerun scripts/gpu_check.sh"
    wrong = {k: v["status"] for k, v in graded.items() if v["status"] != "correct"}
    assert not wrong, f"{os.path.relpath(newest, ROOT)}: the solution is not correct everywhere: {wrong}"
    total = sum(r.points_max for r in rub.versions)
    assert sum(v["points_max"] for v in graded.values()) == pytest.approx(total)


def test_the_guide_uses_free_ids():
    text = Path(os.path.join(ROOT, "docs", "adding_a_version.md")).read_text(encoding="utf-8")
    rows = re.findall(r'`?\{"([A-Za-z0-9_-]+)", "([a-z0-9_]+)"', text)
    assert rows
    subs = {"scan_one_block": "stream_compaction", "v20_template": None, "v6_template": "ground_seg"}
    for ident, name in rows:
        for sub in em.SUBPROJECTS:
            names = registry_names(sub)
            if sub == subs.get(name) or (subs.get(name) is None and name == "v20_template"):
                assert name not in names, f"the guide's {name} exists in {sub}"
                if sub != "stream_compaction":
                    assert ident not in names.values(), f"the guide's id {ident} is taken in {sub}"
        if name == "scan_one_block":
            assert ident not in [i for n, i in registry_names("stream_compaction").items() if n.startswith("scan_")]


def test_a_device_function_region_becomes_a_device_stub():
    text = textwrap.dedent("""\
        #pragma once
        #include <cuda_runtime.h>
        template <typename T>
        __device__ T twice(T v, int* unused_arg) {
          // EXERCISE BEGIN body device(v) unused(unused_arg) exercise=stream_compaction/v4_warp_shuffle,ndt_graph/-
          return 2 * v;
          // EXERCISE END
        }
        """)
    sc_only = em.parse("common/include/common/x.cuh", text, ["stream_compaction"])[0]
    assert em.role(sc_only, ["stream_compaction"], ["stream_compaction"]) == "assigned"
    assert em.role(sc_only, ["nbody"], ["nbody"]) == "withheld"
    assert em.role(sc_only, ["ndt_graph"], ["ndt_graph"]) == "solved"
    assert em.role(sc_only, ["ground_seg"], em.closure(["ground_seg"])) == "solved"  # stream_compaction built on
    new, removed = em.stub_text(
        "common/include/common/x.cuh",
        text,
        assigned=lambda r: em.role(r, ["stream_compaction"], ["stream_compaction"]) == "assigned",
    )
    assert removed and "return 2 * v" not in new
    assert "COURSE_DEVICE_STUB_FILE(x_cuh)" in new and '#include "common/exercise_device.cuh"' in new
    assert "(void)unused_arg; COURSE_DEVICE_NOT_IMPLEMENTED(x_cuh); return v;" in new
    assert "// STUDENT BEGIN v4_warp_shuffle:" in new


def test_test_summary_counts_not_implemented_apart(tmp_path):
    xml = tmp_path / "junit.xml"
    xml.write_text("""<?xml version="1.0"?><testsuite>
      <testcase name="a" status="run"/>
      <testcase name="b" status="fail"><failure message="x"/></testcase>
      <testcase name="c" status="notrun"><skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
        <system-out>x.cpp:3: Skipped\nnot implemented: this exercise is not written yet</system-out></testcase>
      <testcase name="d" status="notrun"><skipped/><system-out>Skipped\nno CUDA device</system-out></testcase>
      <testcase name="e" status="notrun"><skipped/><system-out>row: NOT IMPLEMENTED: stub</system-out></testcase>
    </testsuite>""")
    counts, reasons, failed = test_summary.summarize(str(xml))
    assert (counts["passed"], counts["failed"], counts["not implemented"], counts["skipped"]) == (1, 1, 2, 1)
    assert failed == ["b"] and reasons == {"no CUDA device": 1}
