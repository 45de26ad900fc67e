"""test_summary.py: a skipped test is never counted as passed, a stub is "not implemented"."""

import test_summary

JUNIT = """<?xml version="1.0"?>
<testsuite>
 <testcase name="a" status="run"><system-out>ok</system-out></testcase>
 <testcase name="b" status="fail"><failure message="x"/></testcase>
 <testcase name="c" status="notrun"><skipped/><system-out>skipped: not implemented: v5</system-out></testcase>
 <testcase name="d" status="notrun"><skipped/><system-out>skipped: no CUDA device</system-out></testcase>
</testsuite>
"""


def test_counts_each_outcome_apart(tmp_path):
    import xml.etree.ElementTree as ET

    cases = ET.fromstring(JUNIT).findall("testcase")
    got = [test_summary.classify(c)[0] for c in cases]
    assert got == ["passed", "failed", "not implemented", "skipped"]
    assert test_summary.classify(cases[3])[1] == "no CUDA device"
