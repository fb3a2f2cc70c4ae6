"""bench/bench_privtree.py --report-only: the Markdown comes from the JSON, nothing runs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def test_report_only_rewrites_the_markdown_from_the_json(tmp_path):
    shutil.copy(BENCH / "results" / "privtree-numpy.json", tmp_path)
    subprocess.run([sys.executable, str(BENCH / "bench_privtree.py"), "--report-only",
                    "--out", str(tmp_path)], check=True, capture_output=True, timeout=120)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["privtree-numpy.json",
                                                         "privtree-numpy.md"]
    text = (tmp_path / "privtree-numpy.md").read_text()
    for eps in ("0.1", "0.4", "1.6"):
        assert f"| {eps} | PrivTree |" in text and f"| {eps} | N-gram |" in text
    assert "| 0.05 | 0.579 | 0.537 |" in text  # build time, Table 4 epsilons
    assert "Airports (n = 3376" in text and "Skewed synthetic (n = 200000" in text


def test_report_only_without_json_fails(tmp_path):
    run = subprocess.run([sys.executable, str(BENCH / "bench_privtree.py"), "--report-only",
                          "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "does not exist" in run.stderr
    assert not list(tmp_path.iterdir())
