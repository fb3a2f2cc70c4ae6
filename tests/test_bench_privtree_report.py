"""bench/bench_privtree.py --report-only: the Markdown comes from the JSON, nothing runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def test_report_only_rewrites_the_markdown_from_the_json(tmp_path):
    result = json.loads((BENCH / "results" / "privtree-numpy.json").read_text())
    result["pst_build_time"]["epsilon=0.05"] = {"median_s": 1.234, "min_s": 0.987}  # planted
    (tmp_path / "privtree-numpy.json").write_text(json.dumps(result))
    subprocess.run([sys.executable, str(BENCH / "bench_privtree.py"), "--report-only",
                    "--out", str(tmp_path)], check=True, capture_output=True, timeout=120)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["privtree-numpy.json",
                                                         "privtree-numpy.md"]
    text = (tmp_path / "privtree-numpy.md").read_text()
    for eps in ("0.1", "0.4", "1.6"):
        assert f"| {eps} | PrivTree |" in text and f"| {eps} | N-gram |" in text
    assert "| 0.05 | 1.234 | 0.987 |" in text  # the planted build time, from the JSON
    assert "Airports (n = 3376" in text and "Skewed synthetic (n = 200000" in text


def test_report_only_without_json_fails(tmp_path):
    run = subprocess.run([sys.executable, str(BENCH / "bench_privtree.py"), "--report-only",
                          "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "does not exist" in run.stderr
    assert not list(tmp_path.iterdir())
