"""Every sub-project's README follows one outline, and its ladder table comes from the registry."""

import os
import re

import pytest

from conftest import ROOT
from course_csv import SUBPROJECTS, CsvError, read_registry, read_rows
from plots.common import ladder_table

OUTLINE = ["Problem", "Versions", "Results", "Plots", "Questions", "References", "Glossary",
           "Platforms and run times", "How to run"]  # fmt: skip
# A student's handout (make_handout.py's student_readme): the kept sections around the student's path
HANDOUT_OUTLINE = ["Problem", "Your path", "Working on a step", "Questions", "Your results", "Plots", "Submitting"]
IS_HANDOUT = os.path.exists(os.path.join(ROOT, "HANDOUT.json"))


def check_outline(text, outline, ladder_in, ladder_before):
    assert re.findall(r"^## (.*)$", text, flags=re.M) == outline
    for section in ("LADDER", "RESULTS"):
        assert text.count(f"<!-- BEGIN GENERATED {section} -->") == 1
        assert text.count(f"<!-- END GENERATED {section} -->") == 1
    # the ladder's block sits in its section (run_all.sh fills it through plot.py --registry)
    section = text[text.index(f"## {ladder_in}") : text.index(f"## {ladder_before}")]
    assert "<!-- BEGIN GENERATED LADDER -->" in section


def subprojects_here():
    return [s for s in SUBPROJECTS if os.path.exists(os.path.join(ROOT, s, "README.md"))]


@pytest.mark.parametrize("sub", subprojects_here())
def test_readme_has_its_outline_and_both_generated_blocks(sub):
    with open(f"{ROOT}/{sub}/README.md", encoding="utf-8") as fh:
        text = fh.read()
    if IS_HANDOUT:
        check_outline(text, HANDOUT_OUTLINE, "Your results", "Plots")
    else:
        check_outline(text, OUTLINE, "Versions", "Results")


@pytest.mark.skipif(IS_HANDOUT, reason="the handout has no make_handout.py (the course tree tests its READMEs)")
@pytest.mark.parametrize("sub", SUBPROJECTS)
def test_the_handout_readme_has_the_handout_outline_and_both_generated_blocks(sub):
    import handout_path
    import make_handout

    with open(f"{ROOT}/{sub}/README.md", encoding="utf-8") as fh:
        text = make_handout.student_readme(fh.read(), sub, {}, handout_path.Path.load(ROOT))
    check_outline(text, HANDOUT_OUTLINE, "Your results", "Plots")


def write_registry(path, lines):
    header = "kind,id,version,file,idea,role,runs_on,needs\n"
    path.write_text(header + "".join("registry," + line + "\n" for line in lines))
    return str(path)


def test_ladder_lists_every_registry_entry_with_its_headline_row_or_its_verdict(tmp_path, sample_run):
    reg = write_registry(
        tmp_path / "versions.csv",
        [
            "cpu,scan_cpu,src/cpu.cpp,sequential,reference,cpu,",
            "v1,scan_naive,src/v1_naive.cu,Hillis-Steele,version,gpu,",
            'v6,scan_tma,src/v6_tma.cu,"bulk copies, a ring",version,gpu,sm_90+ (TMA bulk copy)',
            "v9,scan_never_run,src/v9.cu,new,version,gpu,",
        ],
    )
    table = ladder_table(read_registry(reg), read_rows(sample_run)).splitlines()
    assert len(table) == 2 + 4  # header, rule, one line per entry in registry order
    cpu = "| cpu | `scan_cpu` (reference) | [src/cpu.cpp](src/cpu.cpp) | sequential | 2^20 |  | 2 ms |"
    assert table[2].startswith(cpu)
    assert "fail: element 3 is 7, expected 8" in table[3]  # never a time for a failed row
    assert "bulk copies, a ring [needs sm_90+ (TMA bulk copy)]" in table[4] and "skipped: needs sm_90" in table[4]
    assert table[5].endswith("| not run |")


def test_a_file_that_is_not_a_registry_is_refused_by_name(tmp_path, sample_run):
    with pytest.raises(CsvError, match="stream_compaction.csv: not a registry"):
        read_registry(sample_run)
