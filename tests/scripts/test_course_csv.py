"""The one CSV reader: the status column, the refusal of files that are not a driver's CSV, params
and metrics."""

import math
import shutil

import pytest

import course_csv
from conftest import COLUMNS, row, write_csv


def test_status_and_detail_are_read_as_a_type_and_printed_like_the_console(sample_run):
    rows = course_csv.read_rows(sample_run)
    by = {r["version"]: r for r in rows if r["kind"] != "meta"}
    assert by["scan_cpu"]["status"] is course_csv.Status.PASS
    assert course_csv.status_text(by["scan_cpu"]) == "PASS"
    assert course_csv.status_text(by["scan_naive"]) == "FAIL: element 3 is 7, expected 8"
    assert course_csv.status_text(by["scan_tma"]) == "skipped: needs sm_90"
    assert by["scan_lookback"]["status"] is course_csv.Status.NOT_IMPLEMENTED
    assert course_csv.is_pass(by["scan_cpu"]) and not course_csv.is_pass(by["scan_naive"])
    assert by["scan_cpu"]["n"] == 1 << 20 and by["scan_cpu"]["median_ms"] == 2.0
    assert math.isnan(by["scan_naive"]["median_ms"])


def test_an_unknown_status_word_is_an_error_not_a_guess(tmp_path):
    p = write_csv(tmp_path / "x.csv", [row(version="v", n=1, status="PASS")])
    with pytest.raises(course_csv.CsvError, match="unknown status 'PASS'"):
        course_csv.read_rows(p)
    raw = course_csv.read_raw(p)  # the raw rows still read; the status is judged where it is used
    with pytest.raises(course_csv.CsvError):
        course_csv.status_of(raw[0])


def test_a_csv_of_the_old_passed_column_or_another_file_is_refused_with_its_name(tmp_path):
    old = [c if c != "status" else "passed" for c in COLUMNS if c != "detail"]
    p = write_csv(tmp_path / "old.csv", [row(version="v", n=1, passed="PASS")], columns=old)
    with pytest.raises(course_csv.CsvError, match=r"old\.csv: not a driver's CSV: no column status, detail .*run the"):
        course_csv.read_raw(p)
    other = tmp_path / "notes.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(course_csv.CsvError, match="notes.csv"):
        course_csv.read_rows(str(other))


def test_journal_is_read_when_the_final_csv_is_missing(tmp_path, sample_run):
    assert course_csv.read_journal(str(tmp_path / "none.csv")) == ([], False)
    journal = tmp_path / "crashed.csv.partial"
    shutil.copy(sample_run, journal)
    rows, from_journal = course_csv.read_journal(str(tmp_path / "crashed.csv"))
    assert from_journal and len(rows) == 5


def test_params_and_metrics():
    assert course_csv.parse_params("shape=128x4 min8 op=scan") == {"shape": "128x4 min8", "op": "scan"}
    assert course_csv.parse_params("") == {}
    m = course_csv.parse_metrics("precision[%]=97.5;latency[ms]=;bad;x[u]=notanumber")
    assert m["precision"] == 97.5 and math.isnan(m["latency"]) and math.isnan(m["x"]) and "bad" not in m


def test_meta_record(sample_run):
    rows = course_csv.read_rows(sample_run)
    assert course_csv.meta(rows) == {"copy_bandwidth": 1000.0}
    assert course_csv.meta([r for r in rows if r["kind"] != "meta"]) == {}
