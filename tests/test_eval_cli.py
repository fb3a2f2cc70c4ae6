"""``dpgpu evaluate`` on hand-made release directories (expected values by hand)."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

import dpgpu
from dpgpu.cli import main
from dpgpu.data.io import current_umask
from dpgpu.release import vocabulary_fingerprint

# The original: s1 = a b c a b, s2 = a c b, s3 = b a, s4 = c   (|D| = 4)
ORIGINAL = "a b c a b\na c b\nb a\nc\n"


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def original(tmp_path):
    p = tmp_path / "orig.txt"
    p.write_text(ORIGINAL)
    return p


def make_release(tmp_path, original, files: dict[str, str], *, name="rel", sha=None,
                 parameters=None, vocabulary=True):
    """A release directory written by hand: report.json plus the given files."""
    d = tmp_path / name
    d.mkdir()
    db = dpgpu.load(original)
    report = {"mechanism": "handmade", "parameters": parameters or {}, "epsilon": 1.0,
              "delta": 0.0, "ledger": [], "backend": "numpy", "seeded": True,
              "input": {"path": str(original), "format": "lines"}, "files": sorted(files)}
    if vocabulary:
        report["vocabulary"] = {"size": db.vocab.size,
                                "sha256": sha or vocabulary_fingerprint(db.vocab)}
    (d / "report.json").write_text(json.dumps(report))
    for fname, text in files.items():
        (d / fname).write_text(text)
    return d


def evaluate(capsys, original, rel, *extra):
    status, out, err = run(capsys, "evaluate", "--original", str(original), "--release",
                           str(rel), "--json", *extra)
    assert status == 0, err
    result = json.loads(out)
    assert result == json.loads((rel / "evaluation.json").read_text())
    return result


def test_identical_synthetic_scores_perfectly(tmp_path, original, capsys):
    rel = make_release(tmp_path, original, {"synthetic.txt": ORIGINAL})
    r = evaluate(capsys, original, rel, "--queries", "300", "--k", "1,3")
    assert r["private"] is False and "not differentially private" in r["warning"].lower()
    assert r["settings"]["tasks"] == ["count-queries", "top-k", "lengths"]
    cq = r["tasks"]["count-queries"]
    assert cq["sanity_bound"] == pytest.approx(0.004)
    assert all(v["mean"] == 0.0 for v in cq["by_max_size"].values())
    for kind in ("strings", "subsequences"):
        for row in r["tasks"]["top-k"][kind]["by_k"].values():
            assert row["true_positive_ratio"] == 1.0 and row["utility_loss"] == 0.0
    assert r["tasks"]["lengths"]["total_variation_distance"] == 0.0


def test_synthetic_metrics_by_hand(tmp_path, original, capsys):
    # synthetic: a b / a b / c (its vocabulary is a, b, c again)
    rel = make_release(tmp_path, original, {"synthetic.txt": "a b\na b\nc\n"})
    r = evaluate(capsys, original, rel, "--task", "top-k", "--task", "lengths", "--k", "1,3")
    # lengths: P = (0, 1/4, 1/4, 1/4, 0, 1/4), Q = (0, 1/3, 2/3):
    # TVD = (1/12 + 5/12 + 1/4 + 0 + 1/4) / 2 = 1/2
    assert r["tasks"]["lengths"]["total_variation_distance"] == pytest.approx(0.5)
    strings = r["tasks"]["top-k"]["strings"]["by_k"]
    # original top-3 strings (length >= 2): ab 2, ac 1, ba 1; synthetic: ab 2 only
    assert strings["1"] == {"true_positive_ratio": 1.0, "utility_loss": 0.0, "available": 1}
    assert strings["3"]["true_positive_ratio"] == pytest.approx(1 / 3)
    assert strings["3"]["utility_loss"] == pytest.approx((0 + 1 + 1) / 3)
    subseq = r["tasks"]["top-k"]["subsequences"]["by_k"]
    # original top-3 subsequences: ab, ac, ba (support 2); synthetic: ab (support 2)
    assert subseq["3"]["true_positive_ratio"] == pytest.approx(1 / 3)
    assert subseq["3"]["utility_loss"] == pytest.approx(2 / 3)


def test_synthetic_with_fewer_labels(tmp_path, original, capsys):
    # the synthetic file's own vocabulary is only {a, b}; labels are matched, not ids
    rel = make_release(tmp_path, original, {"synthetic.txt": "a b\nb a\n"})
    r = evaluate(capsys, original, rel, "--queries", "200", "--k", "2")
    # strings: original top-2 ab (2), ac (1); synthetic ab (1), ba (1)
    row = r["tasks"]["top-k"]["strings"]["by_k"]["2"]
    assert row["true_positive_ratio"] == 0.5
    assert row["utility_loss"] == pytest.approx((1 / 2 + 1) / 2)


def test_ngrams_relative_errors_by_hand(tmp_path, original, capsys):
    # true counts: a b -> 2, b & -> 2 (s1, s2 end with b), c -> 3; sanity bound 0.004
    rel = make_release(tmp_path, original,
                       {"ngrams.tsv": "gram\tcount\na b\t3\nb &\t2\nc\t10\n"})
    r = evaluate(capsys, original, rel)
    t = r["tasks"]["ngrams"]
    assert t["released_grams"] == 3 and t["absent_from_original"] == 0
    assert t["overall"]["mean"] == pytest.approx((1 / 2 + 0 + 7 / 3) / 3)
    assert t["by_length"]["1"]["mean"] == pytest.approx(7 / 3)
    assert t["by_length"]["2"]["mean"] == pytest.approx(1 / 4)


def test_frequent_by_hand(tmp_path, original, capsys):
    # threshold 0.5 of 4 sequences -> support >= 2: a, b, c, ab, ac, ba, cb, acb (8 patterns)
    rel = make_release(tmp_path, original,
                       {"frequent.tsv": "pattern\tsupport\na b\t2\na c b\t3\nb b\t1\n"},
                       parameters={"threshold": 0.5})
    r = evaluate(capsys, original, rel)
    t = r["tasks"]["frequent"]
    assert t["min_support"] == 2
    rr = t["release"]
    # p = 2/3 (ab, acb of 3), r = 2/8, F = 2 (2/3)(1/4) / (2/3 + 1/4) = 4/11
    assert (rr["precision"], rr["recall"], rr["f_score"]) == pytest.approx((2 / 3, 1 / 4, 4 / 11))
    # RE: ab |2-2|/2 = 0, acb |3-2|/2 = 0.5, bb |1-1|/1 = 0 -> median 0, mean 1/6
    assert rr["relative_error"]["median"] == 0.0
    assert rr["relative_error"]["mean"] == pytest.approx(1 / 6)
    assert rr["by_length"]["3"] == {"precision": 1.0, "recall": 1.0, "f_score": 1.0,
                                    "true": 1, "released": 1}
    # --threshold overrides the report: 0.75 -> support >= 3: a, b, c
    r = evaluate(capsys, original, rel, "--threshold", "0.75")
    assert r["tasks"]["frequent"]["release"]["precision"] == 0.0


def test_frequent_with_nothing_to_compare_says_n_a(tmp_path, original, capsys):
    """Support >= 4 of 4 sequences: nothing is frequent and nothing is released."""
    rel = make_release(tmp_path, original, {"frequent.tsv": "pattern\tsupport\n"},
                       parameters={"threshold": 1.0})
    r = evaluate(capsys, original, rel)["tasks"]["frequent"]["release"]
    assert (r["precision"], r["recall"], r["f_score"]) == (None, None, None)
    status, out, err = run(capsys, "evaluate", "--original", str(original), "--release",
                           str(rel), "--force")
    assert status == 0, err
    assert "release: precision n/a  recall n/a  F-score n/a" in out


def test_frequent_on_synthetic_needs_a_threshold(tmp_path, original, capsys):
    rel = make_release(tmp_path, original, {"synthetic.txt": ORIGINAL})
    status, _, err = run(capsys, "evaluate", "--original", str(original), "--release", str(rel),
                         "--task", "frequent")
    assert status == 2 and "--threshold" in err and len(err.strip().splitlines()) == 1
    r = evaluate(capsys, original, rel, "--task", "frequent", "--threshold", "0.5")
    syn = r["tasks"]["frequent"]["synthetic"]
    assert (syn["precision"], syn["recall"], syn["f_score"]) == (1.0, 1.0, 1.0)


def test_coverage_by_hand(tmp_path, original, capsys):
    # each sequence is a user; 2-grams held: ab, bc, ca, ac, cb, ba (1 each);
    # 3-grams: abc, bca, cab, acb (1 each)
    rel = make_release(tmp_path, original, {"kgrams.tsv": "gram\na b\nb a\nc c\na c b\n"})
    r = evaluate(capsys, original, rel, "--coverage-k", "1,2")
    t = r["tasks"]["coverage"]
    assert t["by_k"]["2"]["released"] == 3
    assert t["by_k"]["2"]["coverage"]["1"] == pytest.approx(2 / 6)
    assert t["by_k"]["2"]["spurious_fraction"] == pytest.approx(1 / 3)       # c c
    assert t["by_k"]["3"]["coverage"]["1"] == pytest.approx(1 / 4)
    assert t["coverage"]["1"] == pytest.approx(3 / 10)
    assert t["coverage"]["2"] is None                                        # nothing held by 2
    assert t["spurious_fraction"] == pytest.approx(1 / 4)
    status, out, _ = run(capsys, "evaluate", "--original", str(original), "--release", str(rel),
                         "--coverage-k", "1,2", "--force")
    table = out[out.index("k-gram coverage"):].splitlines()
    assert status == 0 and table[2].split() == ["2", "3", "0.3333", "0.333", "n/a"]
    assert table[4].split() == ["all", "4", "0.2500", "0.300", "n/a"]
    assert table[5].strip() == "(n/a: no gram of the original is held by K or more)"


def test_table_output_and_release_untouched(tmp_path, original, capsys):
    rel = make_release(tmp_path, original, {"synthetic.txt": ORIGINAL,
                                            "ngrams.tsv": "gram\tcount\na b\t3\n"})
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in rel.iterdir()}
    status, out, err = run(capsys, "evaluate", "--original", str(original), "--release",
                           str(rel), "--queries", "100")
    assert status == 0, err
    assert "count queries" in out and "not differentially private" in out.lower()
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in rel.iterdir()}
    assert set(after) == set(before) | {"evaluation.json"}       # no temp files left
    assert all(after[k] == v for k, v in before.items())
    assert json.loads((rel / "evaluation.json").read_text())["private"] is False


def test_vocabulary_mismatch_is_refused(tmp_path, original, capsys):
    rel = make_release(tmp_path, original, {"ngrams.tsv": "gram\tcount\na b\t3\n"},
                       sha="0" * 64)
    status, _, err = run(capsys, "evaluate", "--original", str(original), "--release", str(rel))
    assert status == 2 and "vocabulary mismatch" in err and len(err.strip().splitlines()) == 1
    assert not (rel / "evaluation.json").exists()
    rel2 = make_release(tmp_path, original, {"ngrams.tsv": "gram\tcount\na b\t3\n"},
                        name="rel2", vocabulary=False)
    status, _, err = run(capsys, "evaluate", "--original", str(original), "--release", str(rel2))
    assert status == 2 and "vocabulary" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("files, message", [
    ({"ngrams.tsv": "gram\tnoisy\na b\t3\n"}, "header"),
    ({"ngrams.tsv": "gram\tcount\na z\t3\n"}, "ngrams.tsv:2"),
    ({"ngrams.tsv": "gram\tcount\na b\tnan\n"}, "finite"),
    ({"ngrams.tsv": "gram\tcount\na b\t1\na b\t2\n"}, "duplicate"),
    ({"kgrams.tsv": "gram\na &\n"}, "marker"),
    ({"notes.txt": "nothing to evaluate"}, "no release file"),
])
def test_bad_release_files(tmp_path, original, capsys, files, message):
    rel = make_release(tmp_path, original, files)
    status, _, err = run(capsys, "evaluate", "--original", str(original), "--release", str(rel))
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1


def test_usage_errors(tmp_path, original, capsys):
    rel = make_release(tmp_path, original, {"ngrams.tsv": "gram\tcount\na b\t3\n"})
    status, _, err = run(capsys, "evaluate", "--release", str(rel))
    assert status == 2 and "--original" in err
    status, _, err = run(capsys, "evaluate", "--original", str(original), "--release", str(rel),
                         "--task", "coverage")
    assert status == 2 and "ngrams.tsv of a DPNE release" in err
    status, _, err = run(capsys, "evaluate", "--original", str(original), "--release",
                         str(tmp_path / "missing"))
    assert status == 2 and "missing" in err


def test_plot_without_matplotlib(tmp_path, original, capsys, monkeypatch):
    rel = make_release(tmp_path, original, {"ngrams.tsv": "gram\tcount\na b\t3\n"})
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    status, _, err = run(capsys, "evaluate", "--original", str(original), "--release", str(rel),
                         "--plot", str(tmp_path / "fig.png"))
    assert status == 2 and "pip install dpgpu[plot]" in err
    assert not (rel / "evaluation.json").exists() and not (tmp_path / "fig.png").exists()


def test_plot(tmp_path, original, capsys):
    pytest.importorskip("matplotlib")
    rel = make_release(tmp_path, original, {"synthetic.txt": "a b\na b\nc\n",
                                            "ngrams.tsv": "gram\tcount\na b\t3\n",
                                            "kgrams.tsv": "gram\na b\n"})
    fig = tmp_path / "fig.png"
    status, _, err = run(capsys, "evaluate", "--original", str(original), "--release", str(rel),
                         "--queries", "100", "--plot", str(fig))
    assert status == 0, err
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and os.path.getsize(fig) > 1000


def test_a_private_data_vocabulary_is_not_checked_but_a_missing_fingerprint_is_an_error(caplog):
    from dpgpu import InputError, SequenceDB
    from dpgpu.eval.evaluate import check_vocabulary

    original = SequenceDB.from_sequences([["a", "b"]])
    with caplog.at_level("WARNING", logger="dpgpu"):
        check_vocabulary({"vocabulary": {"public": False}}, original, "rel", "d.txt")
    assert "kept private" in caplog.text and "the evaluation goes on" in caplog.text
    with pytest.raises(InputError, match="no vocabulary fingerprint"):
        check_vocabulary({"vocabulary": {"public": True}}, original, "rel", "d.txt")


def one_line_error(status, err, *words):
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and lines[0].startswith("dpgpu: error: "), err
    assert all(w in lines[0] for w in words), (words, lines[0])


def test_plot_replaces_a_file_only_with_force_and_is_checked_first(tmp_path, original, capsys):
    """Regression: --plot silently overwrote an existing file (there was no --force)."""
    pytest.importorskip("matplotlib")
    rel = make_release(tmp_path, original, {"ngrams.tsv": "gram\tcount\na b\t3\n"})
    fig = tmp_path / "keep.png"
    fig.write_bytes(b"keep")
    status, out, err = run(capsys, "evaluate", "--original", str(original), "--release",
                           str(rel), "--plot", str(fig))
    one_line_error(status, err, str(fig), "already exists", "--force")
    assert out == "" and fig.read_bytes() == b"keep"
    assert not (rel / "evaluation.json").exists()            # checked before any work
    status, _, err = run(capsys, "evaluate", "--original", str(original), "--release",
                         str(rel), "--plot", str(fig), "--force")
    assert status == 0, err
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in tmp_path.rglob(".*.part")]
    assert stat.S_IMODE(os.stat(fig).st_mode) == 0o666 & ~current_umask()


@pytest.mark.parametrize("inside", ["fig.png", "sub/fig.png"])
def test_plot_is_never_written_into_the_release_directory(tmp_path, original, capsys, inside):
    """Regression: the figure of the exact data could join the directory that is published."""
    pytest.importorskip("matplotlib")
    rel = make_release(tmp_path, original, {"ngrams.tsv": "gram\tcount\na b\t3\n"})
    (rel / "sub").mkdir()
    fig = rel / inside
    status, out, err = run(capsys, "evaluate", "--original", str(original), "--release",
                           str(rel), "--plot", str(fig), "--force")
    one_line_error(status, err, str(fig), "inside the release directory", "exact data")
    assert out == "" and not fig.exists() and not (rel / "evaluation.json").exists()


def test_plot_into_a_missing_folder_fails_before_any_work(tmp_path, original, capsys):
    """Regression: --plot /no/such/dir/x.png gave a FileNotFoundError traceback after
    evaluation.json was written."""
    rel = make_release(tmp_path, original, {"ngrams.tsv": "gram\tcount\na b\t3\n"})
    fig = tmp_path / "nodir" / "x.png"
    status, out, err = run(capsys, "evaluate", "--original", str(original), "--release",
                           str(rel), "--plot", str(fig))
    one_line_error(status, err, str(fig), "does not exist")
    assert out == "" and not (rel / "evaluation.json").exists()


def test_plot_is_written_atomically(tmp_path, original, capsys, monkeypatch):
    """Regression: the figure was drawn straight into its file, so a failed write left half a
    file (or half of it over the old one)."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    formats = []

    def broken_savefig(self, fname, **options):
        formats.append(options.get("format"))
        if hasattr(fname, "write"):
            fname.write(b"\x89PNG half")
        else:
            open(fname, "wb").write(b"\x89PNG half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", broken_savefig)
    rel = make_release(tmp_path, original, {"ngrams.tsv": "gram\tcount\na b\t3\n"})
    fig = tmp_path / "fig.png"
    fig.write_bytes(b"the old figure")
    status, _, _ = run(capsys, "evaluate", "--original", str(original), "--release", str(rel),
                       "--plot", str(fig), "--force")
    assert status != 0
    assert fig.read_bytes() == b"the old figure"
    assert not [p for p in tmp_path.rglob(".*.part")]
    assert formats == ["png"]                  # a file object: the format is passed explicitly


def test_evaluation_json_is_replaced_but_never_through_a_link(tmp_path, original, capsys):
    """evaluation.json is dpgpu's own file: a new evaluation replaces the last one (with the
    usual file mode, not 0600), but a link of that name is refused before the data is read."""
    rel = make_release(tmp_path, original, {"ngrams.tsv": "gram\tcount\na b\t3\n"})
    evaluate(capsys, original, rel)
    evaluate(capsys, original, rel)                          # replaced, no --force needed
    ev = rel / "evaluation.json"
    assert stat.S_IMODE(os.stat(ev).st_mode) == 0o666 & ~current_umask()
    ev.unlink()
    (tmp_path / "elsewhere.json").write_text("mine")
    ev.symlink_to(tmp_path / "elsewhere.json")
    status, _, err = run(capsys, "evaluate", "--original", str(original), "--release", str(rel))
    one_line_error(status, err, str(ev), "symbolic link")
    assert ev.is_symlink() and (tmp_path / "elsewhere.json").read_text() == "mine"


@pytest.mark.parametrize("state, message", [
    ("missing", "typo_dir: no such release directory"),
    ("file", "typo_dir: a file, not a release directory"),
    ("empty", "report.json: no such file"),
    ("not json", "report.json: not valid JSON"),
    ("list", "report.json: not a dpgpu report"),
])
@pytest.mark.parametrize("kind", ["sequences", "points"])
def test_a_mistyped_release_is_named_before_the_original_is_read(tmp_path, capsys, monkeypatch,
                                                                 state, message, kind):
    """Regression: --release typo_dir with a points file said 'no case column found'; with a
    sequence file the whole original was loaded before 'no such release directory'."""
    import dpgpu.commands.evaluate as command

    monkeypatch.setattr(command, "load_from_args",
                        lambda *a, **k: pytest.fail("the original was read first"))
    data = tmp_path / ("d.txt" if kind == "sequences" else "airports.csv")
    data.write_text(ORIGINAL if kind == "sequences" else "x,y\n1,2\n")
    rel = tmp_path / "typo_dir"
    if state == "file":
        rel.write_text(ORIGINAL)
    elif state != "missing":
        rel.mkdir()
    if state in ("not json", "list"):
        (rel / "report.json").write_text("{oops" if state == "not json" else "[]")
    status, _, err = run(capsys, "evaluate", "--original", str(data), "--release", str(rel))
    one_line_error(status, err, message)
    assert "case" not in err


@pytest.mark.parametrize("epsilon,shown", [(0.9999999999999999, "epsilon 1)"),
                                           (0.25, "epsilon 0.25)"),
                                           (None, "epsilon inf (not private))")])
def test_the_table_shows_epsilon_for_people(epsilon, shown):
    """A budget split rounded down sums to just under its total; the table says 1."""
    from dpgpu.eval.evaluate import format_table  # noqa: PLC0415

    result = {"release": {"path": "rel", "mechanism": "pfs2", "epsilon": epsilon},
              "original": {"path": "d.txt", "sequences": 3}, "tasks": {}}
    assert shown in format_table(result).splitlines()[0]


@pytest.mark.parametrize("written", [None, "lines", "spmf"])
def test_synthetic_data_is_read_in_the_format_it_was_written_in(tmp_path, capsys, written):
    """A text input's synthetic sentences are lines, not JSON; a fallback format is recorded."""
    original = tmp_path / "orig.jsonl"
    original.write_text('{"author": "u1", "content": "a b c a b. a c b."}\n'
                        '{"author": "u2", "content": "b a. c."}\n')
    db = dpgpu.load(original)
    assert [list(s) for s in db] == [s.split() for s in ORIGINAL.splitlines()]
    name = "synthetic.txt"
    rel = make_release(tmp_path, original, {})
    (rel / name).write_text(ORIGINAL)
    if written == "spmf":
        db.save(rel / name, format="spmf", force=True)
    report = json.loads((rel / "report.json").read_text())
    report["input"]["format"] = "jsonl"
    if written is not None:
        report["synthetic_format"] = written
    (rel / "report.json").write_text(json.dumps(report))
    r = evaluate(capsys, original, rel, "--queries", "100")
    assert r["tasks"]["lengths"]["total_variation_distance"] == 0.0


def test_an_empty_synthetic_file_is_evaluated_as_no_sequences(tmp_path, original, capsys):
    """A tiny input's release may hold no synthetic sequence: an empty file, not an error."""
    rel = make_release(tmp_path, original, {"synthetic.txt": ""})
    r = evaluate(capsys, original, rel, "--queries", "50")
    assert r["tasks"]["lengths"]["synthetic"]["sequences"] == 0


def test_a_release_of_user_level_csv_data_is_evaluated_with_the_user_option(tmp_path, capsys):
    rows = [(f"c{i}", "abc"[(i * j) % 3], f"u{i % 4}") for i in range(40) for j in range(1, 4)]
    log = tmp_path / "log.csv"
    log.write_text("case,activity,who\n" + "".join(",".join(r) + "\n" for r in rows))
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("a\nb\nc\n")
    assert main(["ngram", str(log), "--user", "who", "--vocab", str(vocab), "--epsilon", "1",
                 "--seed", "1", "--out", str(tmp_path / "rel"), "-q"]) == 0
    capsys.readouterr()
    r = evaluate(capsys, log, tmp_path / "rel", "--user", "who", "--vocab", str(vocab),
                 "--task", "count-queries")
    assert r["original"]["sequences"] == 40 and "count-queries" in r["tasks"]


@pytest.mark.parametrize("text", ["\n", "\n\n\n"])
def test_an_original_without_items_is_refused_by_name(tmp_path, original, capsys, text):
    rel = make_release(tmp_path, original, {"ngrams.tsv": "gram\tcount\na b\t3\n"},
                       vocabulary=False)
    empty = tmp_path / "empty.txt"
    empty.write_text(text)
    status, out, err = run(capsys, "evaluate", "--original", str(empty), "--format", "lines",
                           "--release", str(rel))
    one_line_error(status, err, f"{empty}: holds no items", "nothing to compare")
    assert out == ""


def test_a_k_beyond_the_patterns_that_exist_scores_a_perfect_release_1(tmp_path, original,
                                                                       capsys):
    """Regression: the ratio was divided by K even when the original has fewer patterns (here
    7 strings of length >= 2), so identical data scored 7/100 beside a utility loss of 0."""
    rel = make_release(tmp_path, original, {"synthetic.txt": ORIGINAL})
    r = evaluate(capsys, original, rel, "--task", "top-k", "--k", "3,100")
    for kind in ("strings", "subsequences"):
        row = r["tasks"]["top-k"][kind]["by_k"]["100"]
        assert row["available"] < 100
        assert row["true_positive_ratio"] == 1.0 and row["utility_loss"] == 0.0


def test_ties_are_broken_alike_whatever_order_the_public_vocabulary_lists(tmp_path, capsys):
    """Regression: the true top-K broke ties by the original's (public, unsorted) item ids and
    the synthetic top-K by its own file's sorted ids, so identical data scored 0 here."""
    text = "a b\nb a\nc d\nd c\n"  # every 2-gram occurs once: all four tie
    data, vocab = tmp_path / "o.txt", tmp_path / "vocab.txt"
    data.write_text(text)
    vocab.write_text("d\nc\nb\na\n")
    db = dpgpu.load(data, vocab=["d", "c", "b", "a"])
    rel = make_release(tmp_path, data, {"synthetic.txt": text},
                       sha=vocabulary_fingerprint(db.vocab))
    r = evaluate(capsys, data, rel, "--vocab", str(vocab), "--task", "top-k", "--k", "2")
    row = r["tasks"]["top-k"]["strings"]["by_k"]["2"]
    assert row["true_positive_ratio"] == 1.0 and row["utility_loss"] == 0.0


def test_coverage_warns_when_a_user_level_release_is_evaluated_without_users(tmp_path, capsys,
                                                                            caplog):
    """Regression: evaluating a DPNE release of user-level data on the original read without
    --user silently counted K-anonymity coverage by sequences."""
    rows = [(f"c{i}", "abc"[(i * j) % 3], f"u{i % 4}") for i in range(40) for j in range(1, 4)]
    log = tmp_path / "log.csv"
    log.write_text("case,activity,who\n" + "".join(",".join(r) + "\n" for r in rows))
    assert main(["dpne", str(log), "--user", "who", "--epsilon", "8", "--delta", "1e-5",
                 "--max-n", "2", "--seed", "1", "--out", str(tmp_path / "rel"), "-q"]) == 0
    assert json.loads((tmp_path / "rel" / "report.json").read_text())["input"]["users"] is True
    capsys.readouterr()
    with caplog.at_level("WARNING", logger="dpgpu"):
        r = evaluate(capsys, log, tmp_path / "rel", "--task", "coverage")
    assert r["tasks"]["coverage"]["count_by"] == "distinct sequences"
    assert "release counted users" in caplog.text and "--user" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="dpgpu"):
        r = evaluate(capsys, log, tmp_path / "rel", "--user", "who", "--task", "coverage")
    assert r["tasks"]["coverage"]["count_by"] == "distinct users"
    assert "release counted users" not in caplog.text
