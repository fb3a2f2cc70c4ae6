"""dpgpu report renders every mechanism's release, with the guarantee and the ledger."""

from __future__ import annotations

import numpy as np
import pytest

import dpgpu
from dpgpu import SequenceDB
from dpgpu.cli import main

SEQS = [["a", "b", "c"], ["a", "b"], ["b", "c", "a", "b"], ["c"]] * 30


def releases(tmp_path):
    from dpgpu.mechanisms.dpne import dpne
    from dpgpu.mechanisms.privtree import privtree_spatial, pst

    db = SequenceDB.from_sequences(SEQS, vocab=list("abc"))
    out = {}
    out["ngram"] = dpgpu.ngram(db, 1.0, l_max=4, n_max=3, seed=1).save(tmp_path / "ngram")
    out["pst"] = pst(db, 1.0, l_top=5, seed=1).save(tmp_path / "pst")
    out["pfs2"] = dpgpu.pfs2(db, 1.0, 0.2, seed=1).save(tmp_path / "pfs2")
    users = SequenceDB(db.items, db.offsets, db.vocab, users=np.arange(len(db)) // 2)
    out["dpne"] = dpne(users, 1.0, 1e-5, max_n=2, seed=1).save(tmp_path / "dpne")
    pts = np.random.default_rng(0).random((500, 2))
    out["spatial"] = privtree_spatial(pts, 1.0, bounds=[(0, 1), (0, 1)], seed=1).save(
        tmp_path / "spatial")
    return out


def test_report_renders_every_release(tmp_path, capsys):
    for name, rel in releases(tmp_path).items():
        html_file = tmp_path / f"{name}.html"
        assert main(["report", str(rel), "--html", str(html_file)]) == 0, name
        text = capsys.readouterr().out
        assert "guarantee: (" in text and "differential privacy for one" in text, name
        assert "privacy ledger:" in text and "epsilon=" in text, name
        page = html_file.read_text()
        assert 'class="guarantee"' in page and "differential privacy" in page, name
        assert 'class="ledger"' in page and "<td>" in page, name


def test_report_of_a_non_release_is_a_clear_error(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "report.json" in capsys.readouterr().err


def test_baseline_is_flagged_not_private(tmp_path, capsys):
    db = SequenceDB.from_sequences(SEQS, vocab=list("abc"))
    rel = dpgpu.ngram(db, 1.0, l_max=4, n_max=3, variant="baseline").save(tmp_path / "b")
    assert main(["report", str(rel)]) == 0
    assert "NOT differentially private" in capsys.readouterr().out


@pytest.mark.parametrize("flag", ["--json"])
def test_report_json(tmp_path, capsys, flag):
    db = SequenceDB.from_sequences(SEQS, vocab=list("abc"))
    rel = dpgpu.ngram(db, 1.0, l_max=4, n_max=3, seed=2).save(tmp_path / "r")
    assert main(["report", str(rel), flag]) == 0
    assert '"mechanism": "ngram"' in capsys.readouterr().out


def test_report_includes_an_evaluation(tmp_path, capsys):
    db = SequenceDB.from_sequences(SEQS, vocab=list("abc"))
    data = tmp_path / "d.txt"
    db.save(data, format="lines")
    rel = dpgpu.ngram(dpgpu.load(data), 1.0, l_max=4, n_max=3, seed=3).save(tmp_path / "r")
    assert main(["evaluate", "--original", str(data), "--release", str(rel),
                 "--task", "lengths"]) == 0
    capsys.readouterr()
    assert main(["report", str(rel), "--html", str(tmp_path / "r.html")]) == 0
    assert "total variation distance" in capsys.readouterr().out
    assert "Utility" in (tmp_path / "r.html").read_text()


def test_notebook_display_and_load_release(tmp_path):
    db = SequenceDB.from_sequences(SEQS, vocab=list("abc"))
    release = dpgpu.ngram(db, 1.0, l_max=4, n_max=3, seed=4)
    page = release._repr_html_()
    assert 'class="guarantee"' in page and "<body>" not in page
    assert "guarantee: (1" in release.summary()
    out = release.save(tmp_path / "r")
    back = dpgpu.load_release(out)
    assert back.report["mechanism"] == "ngram" and "ngrams.tsv" in back.files
    assert sorted(back.synthetic()) == sorted(release.synthetic)
    assert 'class="ledger"' in back._repr_html_()
    with pytest.raises(dpgpu.InputError, match="no synthetic"):
        dpgpu.load_release(dpgpu.dpne(SequenceDB(db.items, db.offsets, db.vocab,
                                                 users=np.arange(len(db))), 1.0, 1e-5,
                                      max_n=2, seed=1).save(tmp_path / "d")).synthetic()


@pytest.mark.parametrize("release", [
    lambda db: dpgpu.ngram(db, 1.0, l_max=4, seed=1),
    lambda db: dpgpu.pst(db, 1.0, l_top=4, seed=1),
    lambda db: dpgpu.pfs2(db, 1.0, 0.2, seed=1),
])
def test_a_sequence_level_release_on_data_with_users_says_so(release, caplog):
    seqs = [["a", "b"], ["b", "c"], ["a", "c", "b"]] * 20
    plain = dpgpu.SequenceDB.from_sequences(seqs, vocab=["a", "b", "c"])
    users = dpgpu.SequenceDB.from_sequences(seqs, vocab=["a", "b", "c"],
                                            users=np.arange(60) // 3)
    assert "privacy_unit" not in release(plain).report
    with caplog.at_level("WARNING", logger="dpgpu"):
        report = release(users).report
    assert "protected at k * epsilon" in report["privacy_unit"] and "k * epsilon" in caplog.text
    assert report["private"] is True
    assert "Privacy unit: one sequence" in dpgpu.report.report_facts(report)["caveat"]


def test_saved_reports_of_neighbours_are_identical_and_timings_go_to_diagnostics(tmp_path,
                                                                                  capsys):
    """Regression: report.json held the run's wall-clock timings, which grow with the data
    (DESIGN: exact-value diagnostics go to a separate file that says it is not private)."""
    import json

    base = [["a", "b", "c"], ["b", "c"], ["c", "a", "b"]] * 200
    d0 = SequenceDB.from_sequences(base, vocab=list("abc"))
    d1 = SequenceDB.from_sequences(base * 50, vocab=list("abc"))  # same grams, 50x the data
    for i, db in enumerate((d0, d1)):
        dpgpu.dpne(db, 8.0, 1e-6, max_n=2, contribution=2, seed=3).save(tmp_path / f"r{i}")
    reports = [(tmp_path / f"r{i}" / "report.json").read_bytes() for i in (0, 1)]
    assert b"timings" not in reports[0] and b"_s\"" not in reports[0]
    diagnostics = json.loads((tmp_path / "r1" / "diagnostics.json").read_text())
    assert diagnostics["private"] is False and diagnostics["timings"]["total_s"] > 0
    assert "diagnostics.json" not in json.loads(reports[1])["files"]
    assert reports[0] == reports[1]         # the same grams released: nothing tells the size
    assert main(["report", str(tmp_path / "r1"), "--json"]) == 0
    assert "total_s" in capsys.readouterr().out             # shown to the data holder
