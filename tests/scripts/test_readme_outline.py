"""Every sub-project's README follows one outline, and its ladder table comes from the registry."""

import re

import pytest

from conftest import ROOT
from course_csv import SUBPROJECTS, CsvError, read_registry, read_rows
from plots.common import ladder_table

OUTLINE = ["Problem", "Versions", "Results", "Plots", "Questions", "References", "Glossary",
           "Platforms and run times", "How to run"]  # fmt: skip


@pytest.mark.parametrize("sub", SUBPROJECTS)
def test_readme_has_the_one_outline_and_both_generated_blocks(sub):
    with open(f"{ROOT}/{sub}/README.md", encoding="utf-8") as fh:
        text = fh.read()
    assert re.findall(r"^## (.*)$", text, flags=re.M) == OUTLINE
    for section in ("LADDER", "RESULTS"):
        assert text.count(f"<!-- BEGIN GENERATED {section} -->") == 1
        assert text.count(f"<!-- END GENERATED {section} -->") == 1
    versions = text[text.index("## Versions") : text.index("## Results")]
    assert "<!-- BEGIN GENERATED LADDER -->" in versions


def write_registry(path, lines):
    path.write_text("id,version,file,idea,role,runs_on,needs\n" + "".join(line + "\n" for line in lines))
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
