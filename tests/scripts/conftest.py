"""Fixtures of the scripts' tests: fake driver CSVs written the way common/results.cpp writes them."""

import csv
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# common/src/results.cpp's csv_columns(), in order
COLUMNS = [
    *("subproject", "kind", "version", "role", "idea", "n", "params", "median_ms", "min_ms", "max_ms", "noise"),
    *("samples", "metric", "metric_unit", "pct_of_ceiling", "ceiling", "speedup_vs_cpu", "speedup_vs_prev"),
    *("speedup_vs_library", "predicted_ms", "metrics", "status", "detail", "device", "cuda", "git_sha"),
]


def row(**kw):
    r = dict.fromkeys(COLUMNS, "")
    r.update(subproject="stream_compaction", kind="version", samples="0", cuda="13.0", git_sha="abc1234")
    r.update({k: str(v) for k, v in kw.items()})
    return r


def write_csv(path, rows, columns=COLUMNS):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(columns), lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return str(path)


@pytest.fixture
def sample_run(tmp_path):
    """A stream_compaction run on a fake GPU: a meta row, a passing CPU row, a FAIL row, a skip and a stub."""
    dev = "NVIDIA Fake GPU"
    rows = [
        row(kind="meta", idea="the run's device", n=0, metrics="copy_bandwidth[GB/s]=1000", status="pass", device=dev),
        row(version="scan_cpu", role="reference", idea="sequential", n=1 << 20, params="op=scan", median_ms=2.0,
            samples=20, metric=4.2, metric_unit="GB/s", status="pass", device=dev),
        row(version="scan_naive", role="version", idea="Hillis-Steele", n=1 << 20, params="op=scan block=256",
            status="fail", detail="element 3 is 7, expected 8", device=dev),
        row(version="scan_tma", role="version", idea="bulk copies", n=1 << 20, params="op=scan",
            status="skipped", detail="needs sm_90", device=dev),
        row(version="scan_lookback", role="version", idea="decoupled look-back", n=1 << 20, params="op=scan",
            status="not_implemented", detail="stream_compaction/src/v5_lookback.cu:40", device=dev),
    ]  # fmt: skip
    return write_csv(tmp_path / "stream_compaction.csv", rows)
