"""``dpgpu em-top-k`` (PrivTree's EM baseline on the command line) and ``dpgpu evaluate`` /
``dpgpu report`` on its release directory, checked against plain-Python brute force."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest

import dpgpu
from dpgpu import InvalidParameter
from dpgpu.cli import OOM_OPTIONS, main
from dpgpu.commands.common import SEEDED_WARNING
from dpgpu.eval.evaluate import evaluate_release

# Occurrence counts (all contiguous strings), full data: a 57, b 49, d 48, a b 46, d d 42,
# c 41, d d d 36, ...; cut to 3 items: a 57, b 49, a b 46, c 41, b c 30, a b c 30, d 18, ...
# The top-4 differ (d is frequent only in long sequences, which the cut shortens).
SEQUENCES = (["a b c"] * 30 + ["a b"] * 16 + ["d d d d d d d d"] * 6 + ["c a"] * 11
             + ["e b"] * 3)
VOCAB = ["a", "b", "c", "d", "e", "f"]  # public: f never occurs
L_TOP = 3


# ------------------------------------------------------------------ plain-Python reference
def string_counts(seqs, l_top=None):
    """Occurrences of every contiguous string of items, in the sequences cut to ``l_top``."""
    counts = Counter()
    for line in seqs:
        items = line.split()[:l_top] if l_top else line.split()
        for i in range(len(items)):
            for j in range(i + 1, len(items) + 1):
                counts[tuple(items[i:j])] += 1
    return counts


def brute_top(seqs, k, l_top=None):
    """The top-k strings by count; ties to the shorter, then by the vocabulary's order."""
    rank = {x: i for i, x in enumerate(VOCAB)}
    counts = string_counts(seqs, l_top)
    order = sorted(counts, key=lambda s: (-counts[s], len(s), [rank[x] for x in s]))
    return order[:k]


def brute_precision(truth, released):
    """``|truth & released| / |truth|`` (None for an empty truth)."""
    return len(set(truth) & set(released)) / len(truth) if truth else None


# ------------------------------------------------------------------ helpers
@pytest.fixture
def files(tmp_path):
    data, vocab = tmp_path / "seqs.txt", tmp_path / "vocab.txt"
    data.write_text("\n".join(SEQUENCES) + "\n")
    vocab.write_text("\n".join(VOCAB) + "\n")
    return data, vocab


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def release(capsys, files, out, *extra, epsilon="60", k="4", seed="3"):
    data, vocab = files
    status, stdout, err = run(capsys, "em-top-k", data, "--vocab", vocab, "--epsilon", epsilon,
                              "--k", k, "--l-top", L_TOP, "--seed", seed, "--out", out, *extra)
    assert status == 0, err
    return stdout, err


def topk(out):
    """The strings of ``out/topk.tsv``, checked to be ranked 1, 2, ..."""
    lines = (out / "topk.tsv").read_text().splitlines()
    assert lines[0] == "rank\tstring"
    rows = [line.split("\t") for line in lines[1:]]
    assert [int(r) for r, _ in rows] == list(range(1, len(rows) + 1))
    return [tuple(s.split()) for _, s in rows]


def evaluate(capsys, files, rel, *extra):
    data, vocab = files
    status, out, err = run(capsys, "evaluate", "--original", data, "--vocab", vocab,
                           "--release", rel, "--json", *extra)
    assert status == 0, err
    result = json.loads(out)
    assert result == json.loads((rel / "evaluation.json").read_text())
    return result


# ------------------------------------------------------------------ the command
def test_release_end_to_end(capsys, caplog, files, tmp_path):
    out = tmp_path / "em"
    stdout, _ = release(capsys, files, out, "--json")
    summary = json.loads(stdout)
    assert summary["mechanism"] == "em-top-k" and summary["private"] is True
    assert summary["epsilon"] == pytest.approx(60) and summary["seeded"] is True
    assert summary["files"] == ["diagnostics.json", "report.json", "topk.tsv"]
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] \
        == [SEEDED_WARNING]
    report = json.loads((out / "report.json").read_text())
    assert report["parameters"] == {"epsilon": 60.0, "k": 4, "l_top": L_TOP}
    assert report["selection"]["rounds"] == 4 and report["vocabulary"]["public"] is True
    strings = topk(out)
    assert len(strings) == len(set(strings)) == 4
    # little noise and counts 3 or more apart: the greedy selection is the cut data's top-4
    assert set(strings) == set(brute_top(SEQUENCES, 4, L_TOP)) == {("a",), ("b",), ("a", "b"),
                                                                   ("c",)}
    assert strings[0] == ("a",)


def test_summary_line_names_what_was_released(capsys, files, tmp_path):
    stdout, _ = release(capsys, files, tmp_path / "em", epsilon="30", k="2")
    assert stdout.startswith("EM top-k: 2 strings, l_top 3; spent epsilon=30")


def test_defaults_and_config_file(capsys, files, tmp_path):
    data, vocab = files
    config = tmp_path / "run.toml"
    config.write_text('epsilon = 2.0\nk = 3\nseed = 5\n')
    status, _, err = run(capsys, "em-top-k", data, "--vocab", vocab, "--config", config,
                         "--out", tmp_path / "em", "-q")
    assert status == 0, err
    params = json.loads((tmp_path / "em" / "report.json").read_text())["parameters"]
    assert params == {"epsilon": 2.0, "k": 3, "l_top": 20}  # em_top_k's default l_top


def test_standard_input_and_a_fixed_seed_give_the_same_release(capsys, files, tmp_path):
    data, vocab = files
    release(capsys, files, tmp_path / "a", epsilon="2", k="6", seed="11")
    release(capsys, files, tmp_path / "b", epsilon="2", k="6", seed="11")
    done = subprocess.run([sys.executable, "-m", "dpgpu", "em-top-k", "-", "--vocab", str(vocab),
                           "--epsilon", "2", "--k", "6", "--l-top", str(L_TOP), "--seed", "11",
                           "--out", str(tmp_path / "c"), "-q"],
                          input=data.read_text(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert topk(tmp_path / "a") == topk(tmp_path / "b") == topk(tmp_path / "c")

    def report(d):
        r = json.loads((tmp_path / d / "report.json").read_text())
        r.pop("timings", None)
        r.pop("input", None)  # the path read: seqs.txt or /dev/stdin
        return r

    assert report("a") == report("b")
    # at epsilon 2 (noise scale 18 per round) other seeds select other strings
    others = set()
    for seed in range(5):
        release(capsys, files, tmp_path / f"s{seed}", epsilon="2", k="6", seed=str(seed))
        others.add(tuple(topk(tmp_path / f"s{seed}")))
    assert len(others) > 1


@pytest.mark.parametrize("extra, says", [
    (["--k", "0"], "error: k: must be an integer at least 1, got 0"),
    (["--k", "-2"], "error: k: must be an integer at least 1, got -2"),
    (["--k", "3", "--l-top", "0"], "error: l_top: must be an integer at least 1, got 0"),
    (["--k", "3", "--epsilon", "0"], "error: epsilon: must be finite and > 0"),
    (["--k", "3", "--epsilon", "-1"], "error: epsilon: must be finite and > 0"),
    (["--k", "3", "--epsilon", "nan"], "error: epsilon: must be finite and > 0"),
    (["--k", "3", "--epsilon", "inf"], "error: epsilon: must be finite and > 0"),
    (["--k", "3", "--epsilon", "1e-300"], "error: epsilon: too small"),
    (["--k", "1.5"], "argument --k: invalid int value: '1.5'"),
    (["--epsilon", "1"], "the following arguments are required: --k"),
    (["--k", "3", "--engine", "dask"], "unrecognized arguments: --engine dask"),
    (["--k", "3", "--scheduler", "tcp://x:1"], "unrecognized arguments: --scheduler"),
    (["--k", "3", "--k", "4"], "--k: given more than once"),
])
def test_bad_parameters_exit_2_naming_the_parameter(capsys, files, tmp_path, extra, says):
    data, vocab = files
    argv = ["em-top-k", data, "--vocab", vocab, "--out", tmp_path / "em", *extra]
    if "--epsilon" not in extra:
        argv += ["--epsilon", "1"]
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == "" and says in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "em").exists()


def test_too_many_draws_are_refused_before_the_data_is_read(capsys, tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"i{j}\n" for j in range(20_000)))
    status, out, err = run(capsys, "em-top-k", tmp_path / "missing.txt", "--vocab", vocab,
                           "--epsilon", "1", "--k", "1000", "--out", tmp_path / "em")
    assert status == 2 and out == "", err
    assert err.startswith("dpgpu: error: k: 1000 rounds over 20,000 items draw ") \
        and "missing.txt" not in err, err


def test_an_existing_output_needs_force(capsys, files, tmp_path):
    release(capsys, files, tmp_path / "em", "-q")
    data, vocab = files
    status, _, err = run(capsys, "em-top-k", data, "--vocab", vocab, "--epsilon", "1",
                         "--k", "2", "--out", tmp_path / "em")
    assert status == 2 and "--force" in err, err
    release(capsys, files, tmp_path / "em", "-q", "--force", epsilon="30", k="2")
    assert len(topk(tmp_path / "em")) == 2


def test_the_command_is_listed_with_the_others(capsys):
    assert main(["--help"]) == 0
    assert "em-top-k" in capsys.readouterr().out
    assert main(["em-top-k", "--help"]) == 0
    text = capsys.readouterr().out
    assert "  --l-top L_TOP" in text and "  --k K" in text
    assert "  --engine" not in text and "  --scheduler" not in text  # counted here only
    assert text.rstrip().splitlines()[-1].startswith("  dpgpu em-top-k ")
    assert "em-top-k" in OOM_OPTIONS


# ------------------------------------------------------------------ evaluate and report
def test_evaluate_precision_is_the_brute_force_precision(capsys, files, tmp_path):
    rel = tmp_path / "em"
    release(capsys, files, rel, "-q", epsilon="2", k="6", seed="8")
    strings = topk(rel)
    result = evaluate(capsys, files, rel, "--k", "1,2,3,4,5,6")
    t = result["tasks"]["em"]
    assert result["settings"]["tasks"] == ["em"] and t["l_top"] == L_TOP and t["selected"] == 6
    for k in range(1, 7):
        true_k, cut_k = brute_top(SEQUENCES, k), brute_top(SEQUENCES, k, L_TOP)
        row = t["by_k"][str(k)]
        assert row["precision"] == pytest.approx(brute_precision(true_k, strings[:k]))
        assert row["precision_cut"] == pytest.approx(brute_precision(cut_k, strings[:k]))
        assert row["truncate_precision"] == pytest.approx(brute_precision(true_k, cut_k))
    counts = string_counts(SEQUENCES)
    assert t["released"] == [[" ".join(s), counts[s]] for s in strings]
    assert t["top"][:3] == [["a", 57], ["b", 49], ["d", 48]]


def test_evaluate_by_hand(capsys, files, tmp_path):
    rel = tmp_path / "em"
    release(capsys, files, rel, "-q")
    # a hand-made selection: d d is 5th in full, 8th cut; e is 11th / ...; a b 4th / 3rd
    (rel / "topk.tsv").write_text("rank\tstring\n1\ta\n2\td d\n3\te\n4\ta b\n")
    t = evaluate(capsys, files, rel)["tasks"]["em"]
    assert list(t["by_k"]) == ["4"]  # the release's own k by default
    row = t["by_k"]["4"]
    # true top-4: a, b, d, a b -> {a, a b} released: 2/4; cut top-4: a, b, a b, c: 2/4;
    # Truncate: {a, b, a b} of the true top-4: 3/4
    assert (row["precision"], row["precision_cut"], row["truncate_precision"]) == (0.5, 0.5, 0.75)
    assert row["available"] == 4
    status, out, err = run(capsys, "evaluate", "--original", files[0], "--vocab", files[1],
                           "--release", rel, "--k", "2")
    assert status == 0, err
    assert "EM top-K strings (4 selected on the data cut to l_top 3" in out
    assert "      2      0.500        0.500     1.000" in out


def test_evaluate_refuses_a_k_past_the_release_before_reading_the_original(capsys, files,
                                                                             tmp_path):
    rel = tmp_path / "em"
    release(capsys, files, rel, "-q", k="3")
    status, out, err = run(capsys, "evaluate", "--original", tmp_path / "missing.txt",
                           "--release", rel, "--k", "2,5")
    assert status == 2 and out == "", err
    assert err == ("dpgpu: error: --k: 5 is more than the 3 strings this EM release selected "
                   "(its k); its top-K precision compares the first K strings selected: give "
                   "K values up to 3\n")
    with pytest.raises(InvalidParameter, match=r"^k_values: 5 is more than the 3 strings"):
        evaluate_release(str(files[0]), rel, k_values=[5], reader_options={"vocab": str(files[1])})
    for option, value in (("--min-length", "2"), ("--queries", "10"), ("--threshold", "0.1")):
        status, _, err = run(capsys, "evaluate", "--original", tmp_path / "missing.txt",
                             "--release", rel, option, value)
        assert status == 2 and f"error: {option}: applies to" in err and "allows em" in err, err


@pytest.mark.parametrize("content, says", [
    ("rank\tstring\n1\ta\n2\tzz\n", "topk.tsv:3: 'zz' is not a sequence of labels"),
    ("rank\tstring\n1\ta\n1\tb\n", "topk.tsv: the ranks must be 1, 2, ... in order"),
    ("rank\tstring\n1\ta\n2\ta\n", "topk.tsv:3: duplicate gram 'a'"),
    ("rank\tstring\n1\ta &\n", "holds a marker"),
    ("rank\tstring\n", "topk.tsv: no string"),
    ("string\n1\n", "topk.tsv:1: expected a header with the columns"),
])
def test_a_malformed_topk_file_is_named(capsys, files, tmp_path, content, says):
    rel = tmp_path / "em"
    release(capsys, files, rel, "-q")
    (rel / "topk.tsv").write_text(content)
    status, out, err = run(capsys, "evaluate", "--original", files[0], "--vocab", files[1],
                           "--release", rel, "--k", "1")
    assert status == 2 and says in err and "Traceback" not in err, err


def test_evaluate_a_vocabulary_mismatch_is_refused(capsys, files, tmp_path):
    rel = tmp_path / "em"
    release(capsys, files, rel, "-q")
    status, _, err = run(capsys, "evaluate", "--original", files[0], "--release", rel)
    assert status == 2 and "vocabulary mismatch" in err, err


def test_report_and_plot(capsys, files, tmp_path):
    pytest.importorskip("matplotlib")
    rel = tmp_path / "em"
    release(capsys, files, rel, "-q")
    status, out, err = run(capsys, "report", rel)
    assert status == 0, err
    assert "em-top-k" in out and "for one sequence" in out and "first l_top items" in out
    assert "topk.tsv" in out and "NOT PRIVATE" not in out
    status, _, err = run(capsys, "evaluate", "--original", files[0], "--vocab", files[1],
                         "--release", rel, "--plot", tmp_path / "eval.png")
    assert status == 0 and (tmp_path / "eval.png").stat().st_size > 0, err
    status, out, err = run(capsys, "report", rel, "--with-evaluation")
    assert status == 0, err
    assert out.startswith("NOT PRIVATE") and "EM top-K strings" in out
    assert dpgpu.load_release(rel).report["mechanism"] == "em-top-k"


def test_an_l_top_past_every_sequence_is_no_memory_error(capsys, files, tmp_path):
    """Regression: --l-top 10**12 (accepted: it sets the noise, which is then huge) made the
    counting loops allocate buffers of that size: 'out of memory' (exit 1) on short lines."""
    data, vocab = files
    status, _, err = run(capsys, "em-top-k", data, "--vocab", vocab, "--epsilon", "1", "--k", "4",
                         "--l-top", 10 ** 12, "--out", tmp_path / "huge")
    assert status == 0, err
    assert len(topk(tmp_path / "huge")) == 4


def test_too_many_draws_without_a_public_vocabulary_do_not_name_the_data_item_count():
    """The refusal is about k; without a public vocabulary the number of items is the data's,
    which an error message must not show."""
    db = dpgpu.SequenceDB.from_sequences([[f"i{j}" for j in range(257)]])
    assert not db.vocab.public
    with pytest.raises(InvalidParameter) as err:
        dpgpu.em_top_k(db, 1.0, 10 ** 6)
    assert str(err.value).startswith("k: 1000000 rounds over the data's items draw")
    assert "257" not in str(err.value)
