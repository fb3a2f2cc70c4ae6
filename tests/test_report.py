"""dpgpu report renders every mechanism's release, with the guarantee and the ledger."""

from __future__ import annotations

import json

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
    out = capsys.readouterr().out
    assert '"mechanism": "ngram"' in out
    # regression: the summary, publishable with the release, carried diagnostics.json's
    # wall-clock timings (not private: they grow with the data)
    assert "timings" not in json.loads(out) and "total_s" not in out


def evaluated_release(tmp_path, capsys):
    """An N-gram release of SEQS (120 sequences) with the evaluation.json of dpgpu evaluate."""
    db = SequenceDB.from_sequences(SEQS, vocab=list("abc"))
    data = tmp_path / "d.txt"
    db.save(data, format="lines")
    rel = dpgpu.ngram(dpgpu.load(data), 1.0, l_max=4, n_max=3, seed=3).save(tmp_path / "r")
    assert main(["evaluate", "--original", str(data), "--release", str(rel),
                 "--task", "lengths"]) == 0
    capsys.readouterr()
    return rel


def test_report_shows_the_evaluation_only_when_asked_and_then_says_not_private(tmp_path,
                                                                                capsys):
    """Regression: with an evaluation.json beside the release, report always showed its exact
    statistics (the exact number of sequences, the exact mean length) under the privacy
    guarantee, in the text and in the HTML page."""
    rel = evaluated_release(tmp_path, capsys)
    assert main(["report", str(rel), "--html", str(tmp_path / "public.html")]) == 0
    text, page = capsys.readouterr().out, (tmp_path / "public.html").read_text()
    for shown in (text, page):
        assert "120 sequences" not in shown and "total variation distance" not in shown
        assert "Utility" not in shown and "utility" not in shown and "NOT PRIVATE" not in shown
    assert main(["report", str(rel), "--json"]) == 0
    assert '"evaluation"' not in capsys.readouterr().out

    assert main(["report", str(rel), "--with-evaluation", "--html",
                 str(tmp_path / "internal.html")]) == 0
    text, page = capsys.readouterr().out, (tmp_path / "internal.html").read_text()
    assert text.startswith("NOT PRIVATE: ") and "exact original data" in text.splitlines()[0]
    assert "total variation distance" in text and "120 sequences" in text
    body = page[page.index("<body>") + len("<body>"):].lstrip()
    assert body.startswith('<p class="not-private"') and "do not publish it" in body[:400]
    assert "<title>NOT PRIVATE" in page and "Utility" in page and "120 sequences" in page
    assert main(["report", str(rel), "--with-evaluation", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"banner": "NOT PRIVATE' in out and '"evaluation"' in out


@pytest.mark.parametrize("content, message", [
    ('{"private": false}', "no 'release' object"),
    ("[1, 2]", "expected a JSON object, got list"),
    ("{not json", "not valid JSON"),
    ('{"release": {}, "original": {"path": "d"}, "tasks": {}}', "KeyError"),
    ('{"release": {"path": "r"}, "original": {"path": "d", "sequences": 4}, '
     '"tasks": {"lengths": {"total_variation_distance": "x"}}}', "not an evaluation"),
    ('{"release": {"path": "r"}, "original": {"path": "d", "sequences": 4}, '
     '"tasks": {"magic": {}}}', "unknown task 'magic'"),
])
def test_a_malformed_evaluation_is_an_input_error(tmp_path, capsys, content, message):
    """Regression: report crashed on an evaluation.json without the expected keys (KeyError
    'release') or that is not an object (TypeError), with a traceback."""
    rel = evaluated_release(tmp_path, capsys)
    (rel / "evaluation.json").write_text(content)
    assert main(["report", str(rel)]) == 0                  # not read unless asked for
    capsys.readouterr()
    assert main(["report", str(rel), "--with-evaluation"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "evaluation.json: " in err[0] and message in err[0], err


def test_with_evaluation_needs_an_evaluation(tmp_path, capsys):
    db = SequenceDB.from_sequences(SEQS, vocab=list("abc"))
    rel = dpgpu.ngram(db, 1.0, l_max=4, n_max=3, seed=3).save(tmp_path / "r")
    assert main(["report", str(rel), "--with-evaluation"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "evaluation.json: no such file" in err[0] and "dpgpu evaluate" \
        in err[0]


def test_a_report_that_is_not_an_object_is_an_input_error(tmp_path, capsys):
    """Regression: a report.json holding a JSON list crashed report and load_release."""
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "report.json").write_text("[]")
    assert main(["report", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "report.json: not a dpgpu report" in err[0]
    with pytest.raises(dpgpu.InputError, match="expected a JSON object"):
        dpgpu.load_release(tmp_path / "r")


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
    assert dpgpu.load_release(tmp_path / "r1").report["timings"]["total_s"] > 0  # for the holder
    assert main(["report", str(tmp_path / "r1"), "--json"]) == 0
    assert "total_s" not in capsys.readouterr().out  # the summary may be published


def _snapshot(root):
    return {str(p.relative_to(root)): (p.is_symlink(), p.is_file() and p.read_bytes())
            for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("page, force", [
    ("r/ngrams.tsv", True),          # a release file, replaced with --force before the fix
    ("r/new.html", False),           # a new file among the release files
    ("link/ngrams.tsv", True),       # the release reached through a link to it
    ("r/report.json", True),         # the report itself (refused before the fix too)
])
def test_the_page_may_not_be_written_inside_the_release(tmp_path, capsys, page, force):
    """Regression: report --html r/leaves.csv --force replaced a file of the release it
    summarises (exit 0)."""
    db = SequenceDB.from_sequences(SEQS, vocab=list("abc"))
    rel = dpgpu.ngram(db, 1.0, l_max=4, n_max=3, seed=3).save(tmp_path / "r")
    (tmp_path / "link").symlink_to(rel)
    before = _snapshot(tmp_path)
    status = main(["report", str(rel), "--html", str(tmp_path / page),
                   *(["--force"] if force else [])])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and out == "", err
    assert f"{tmp_path / page}: is inside the release directory {rel}" in lines[0]
    assert "the page summarises the release" in lines[0] and "even with --force" in lines[0]
    assert _snapshot(tmp_path) == before


def test_the_page_is_checked_before_the_summary_is_printed(tmp_path, capsys):
    db = SequenceDB.from_sequences(SEQS, vocab=list("abc"))
    rel = dpgpu.ngram(db, 1.0, l_max=4, n_max=3, seed=3).save(tmp_path / "r")
    (tmp_path / "page.html").write_text("keep")
    assert main(["report", str(rel), "--html", str(tmp_path / "page.html")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "already exists" in err and "--force" in err
    assert (tmp_path / "page.html").read_text() == "keep"
    assert main(["report", str(rel), "--html", str(tmp_path / "page.html"), "--force"]) == 0
    assert 'class="guarantee"' in (tmp_path / "page.html").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html", "r"]   # no temp files


def _strict_json(text):
    """json.loads that refuses Infinity and NaN, as JSON itself (and other readers) do."""
    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def test_a_release_that_is_not_private_writes_standard_json(tmp_path, capsys):
    # a vocabulary taken from the data: epsilon is infinite in memory, null on disk
    data = tmp_path / "d.txt"
    data.write_text("a b c\na b\nb c\n" * 20)
    assert main(["ngram", str(data), "--epsilon", "1", "--seed", "1", "--json", "-q",
                 "--out", str(tmp_path / "rel")]) == 0
    summary = _strict_json(capsys.readouterr().out)
    report = _strict_json((tmp_path / "rel" / "report.json").read_text())
    assert report["private"] is False and report["epsilon"] is None and report["delta"] == 1.0
    assert summary["private"] is False and summary["epsilon"] is None
    assert main(["evaluate", "--original", str(data), "--release", str(tmp_path / "rel")]) == 0
    _strict_json((tmp_path / "rel" / "evaluation.json").read_text())
    capsys.readouterr()
    assert main(["report", str(tmp_path / "rel")]) == 0
    assert "NOT differentially private" in capsys.readouterr().out


@pytest.mark.parametrize("change", [{"epsilon": "one"}, {"mechanism": ""}, {"delta": 2}])
def test_a_malformed_report_is_named_field_by_field(tmp_path, capsys, change):
    """From a CLI review: dpgpu report crashed on fields of the wrong type."""
    out = _saved(tmp_path)
    report = json.loads((out / "report.json").read_text())
    (out / "report.json").write_text(json.dumps({**report, **change}))
    field = next(iter(change))
    assert main(["report", str(out)]) == 2
    assert f"report.json: {field}: expected" in capsys.readouterr().err


@pytest.mark.parametrize("ledger", [None, [], {"steps": 3}])
def test_a_ledger_without_steps_shows_none(tmp_path, capsys, ledger):
    """From a CLI review: a null ledger crashed dpgpu report with AttributeError."""
    out = _saved(tmp_path)
    report = json.loads((out / "report.json").read_text())
    (out / "report.json").write_text(json.dumps({**report, "ledger": ledger}))
    assert main(["report", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["steps"] == []


def _saved(tmp_path):
    db = SequenceDB.from_sequences([["a", "b"], ["b"]] * 50, vocab=["a", "b"])
    return dpgpu.ngram(db, 1.0, seed=1).save(tmp_path / "rel")

