"""Parameters that set a mechanism's size or noise: bounded by public values, refused by name
(exit status 2) before the input is read; option values that look like negative numbers;
empty paths."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pytest

from dpgpu import InvalidParameter, SequenceDB, ngram, pst
from dpgpu.cli import main
from dpgpu.mechanisms.ngram.consistency import enforce_consistency
from dpgpu.mechanisms.ngram.tree import Level
from dpgpu.mechanisms.privtree import privtree_spatial
from dpgpu.mechanisms.privtree.pst import MAX_SYNTHETIC, check_synthetic
from dpgpu.mechanisms.privtree.spatial import check_fanout
from dpgpu.ops.lookup import GramIndex

pst_module = importlib.import_module("dpgpu.mechanisms.privtree.pst")

#: A path that does not exist: a command that refuses its options before reading its input
#: says so, not that the file is missing.
MISSING = "/nonexistent/dpgpu-test/data.txt"


def one_line_error(capsys, argv, start):
    """``dpgpu ARGV`` exits with 2, printing one line on stderr that starts with ``start``."""
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(start) and err.count("\n") == 1, err
    return err


# ------------------------------------------------------------------ privtree-spatial fanout
def test_default_fanout_halves_at_most_ten_dimensions_a_split():
    """Regression: the default fanout was 2**d, so 20 columns split the root into 2**20
    boxes (50 points: 110 s, 3.2 GB, an 870 MB release)."""
    points = np.random.default_rng(1).random((50, 11))
    release = privtree_spatial(points, 1.0, bounds=[[0, 1]] * 11, seed=1)
    assert release.report["split_test"]["beta"] == 1024
    assert release.report["tree"]["nodes_per_depth"][:2] == [1, 1024]
    assert [check_fanout(None, d) for d in (1, 2, 10, 11, 20, 1000)] == \
        [2, 4, 1024, 1024, 1024, 1024]


@pytest.mark.parametrize("d, fanout", [(11, 2048), (20, 2 ** 20), (3, 16), (3, 6)])
def test_a_fanout_past_the_cap_or_the_columns_is_refused(d, fanout):
    with pytest.raises(InvalidParameter, match=rf"^fanout: must be a power of two from 2 to "
                                               rf"{2 ** min(d, 10)} .* d = {d} columns"):
        privtree_spatial(np.zeros((3, d)), 1.0, bounds=[[0, 1]] * d, fanout=fanout)


def test_the_fanout_is_checked_before_the_points_are_read(capsys, tmp_path):
    columns = ",".join(f"c{j}" for j in range(12))
    one_line_error(capsys, ["privtree-spatial", MISSING, "--epsilon", "1", "--columns", columns,
                            "--fanout", "4096", "--out", str(tmp_path / "r")],
                   "dpgpu: error: fanout: must be a power of two from 2 to 1024 ")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ pst synthetic size
def sequences(vocab="abc"):
    """A small database over the public ``vocab``."""
    return SequenceDB.from_sequences([list("abcab"), list("bca"), list("cab")] * 10,
                                     vocab=list(vocab))


@pytest.mark.parametrize("most, max_length", [(MAX_SYNTHETIC, None), (20_000, 10_000)])
def test_a_synthetic_size_that_does_not_fit_in_memory_is_refused(most, max_length):
    """Regression: up to 1e9 synthetic sequences were accepted, at about 1 GB a 1e7 (1e8 was
    killed); the items, up to n_synthetic * max_length, were not bounded at all."""
    with pytest.raises(InvalidParameter, match=rf"^n_synthetic: at most {most} with max_length"):
        pst(sequences(), 1.0, seed=1, n_synthetic=most + 1, max_length=max_length)
    with pytest.raises(InvalidParameter, match=rf"^n_synthetic: at most {most} "):
        check_synthetic(20, max_length, most + 1)
    assert check_synthetic(20, max_length, most) == (20, max_length or 20, most)


def test_the_default_synthetic_size_is_held_to_the_item_limit(monkeypatch, caplog):
    monkeypatch.setattr(pst_module, "MAX_SYNTHETIC_ITEMS", 1_000)
    release = pst(sequences(), 1e-3, l_top=4, max_length=10, seed=1)
    assert len(release.synthetic) == 100 and "lowered to the limit of 100" in caplog.text


def test_the_synthetic_size_is_checked_before_the_data_is_read(capsys, tmp_path):
    one_line_error(capsys, ["pst", MISSING, "--epsilon", "1", "--n-synthetic", "100000000",
                            "--out", str(tmp_path / "r")],
                   "dpgpu: error: n_synthetic: at most 10000000 with max_length 20, got "
                   "100000000")


# ------------------------------------------------------------------ ngram synthetic size
def level(grams, noisy, theta=10.0):
    """A tree level of ``grams`` (rows) with ``noisy`` counts, all against ``theta``."""
    grams = np.asarray(grams, dtype=np.int32)
    n = grams.shape[0]
    return Level(grams=grams, noisy=np.asarray(noisy), eps=np.ones(n), spent=np.ones(n),
                 theta=np.full(n, theta), parent=np.full(n, -1, dtype=np.int64),
                 index=GramIndex(grams, 4))


def test_a_unigram_below_its_threshold_counts_what_level_2_says_of_its_item():
    """Regression: every unigram kept its clamped noisy count, below its threshold or not."""
    first = level([[0], [1], [2]], [50, 7, -4])  # items a, b, c ('&' is 3): only a passes
    enforce_consistency([first])
    assert first.count.tolist() == [50.0, 0.0, 0.0]
    first = level([[0], [1], [2]], [50, 7, -4])
    first.child_start[0] = 0
    second = level([[0, 0], [0, 1], [0, 2], [0, 3]], [0, 20, 0, 30])  # ab 20, a& 30 pass
    enforce_consistency([first, second])
    assert second.count.tolist() == [0.0, 20.0, 0.0, 30.0]
    assert first.count.tolist() == [50.0, 20.0, 0.0]  # b: its 20 occurrences after a


def test_a_large_public_vocabulary_does_not_make_the_synthetic_data_large():
    """Regression: the synthetic data held as many items as the unigram total, which the
    positive noise of every item of the vocabulary made about |I| * scale / 2 (30
    trajectories on a 1024x1024 grid: 52 million synthetic sequences, 5.4 GB)."""
    vocab = [f"i{j}" for j in range(10_000)]
    rng = np.random.default_rng(3)
    data = [[vocab[j] for j in rng.integers(0, 20, rng.integers(1, 6))] for _ in range(40)]
    release = ngram(SequenceDB.from_sequences(data, vocab=vocab), 1.0, seed=1)
    # about 100 items of the data and the noise of about one item that passes by chance
    # (the threshold's 1 / |I|), where the below-threshold noise alone was 500,000
    assert release.levels[0].count.sum() < 5_000
    assert len(release.synthetic) <= release.synthetic.items.size < 5_000


# ------------------------------------------------------------------ sensitivity at fault
@pytest.mark.parametrize("mechanism, option", [(ngram, "l_max"), (pst, "l_top")])
def test_a_noise_scale_past_the_samplers_limit_names_the_sensitivity(mechanism, option):
    """Regression: 'epsilon: too small; a noise scale of 5e+18 (sensitivity 1e+18 ...)' for
    an l_max or l_top of 1e18 at epsilon 1."""
    with pytest.raises(InvalidParameter, match=rf"^{option}: 1000000000000000000 makes the "
                                               rf"noise scale .* at most \d+: lower {option} "
                                               "or raise epsilon$"):
        mechanism(sequences(), 1.0, **{option: 10 ** 18})
    with pytest.raises(InvalidParameter, match=rf"^epsilon: too small; .* even at {option} = 1"):
        mechanism(sequences(), 1e-300, **{option: 10 ** 18})


def test_the_split_tests_scale_names_l_top_too():
    """Regression: the split test's scale, about 2 beta l_top / epsilon, passed the limit where
    the histograms' did not, and 'scale: must be at most ...' came from the sampler."""
    vocab = [f"i{j}" for j in range(8191)]  # beta = 2**13
    db = SequenceDB.from_sequences([vocab[:3], vocab[2:5]], vocab=vocab)
    with pytest.raises(InvalidParameter, match=r"^l_top: 1099511627776 makes the noise scale"):
        pst(db, 1.0, l_top=2 ** 40, synthetic=False)


def test_l_max_is_checked_before_the_data_is_read(capsys, tmp_path):
    one_line_error(capsys, ["ngram", MISSING, "--epsilon", "1", "--l-max", str(10 ** 18),
                            "--out", str(tmp_path / "r")],
                   "dpgpu: error: l_max: 1000000000000000000 makes the noise scale 5e+18 "
                   "(over a budget of 0.2)")


# ------------------------------------------------------------------ negative option values
def test_negative_numbers_in_any_notation_are_option_values(capsys, tmp_path):
    """Regression: '--bounds -1e3 1 0 1' said 'expected 4 arguments' and '--epsilon -inf'
    'expected one argument': argparse took them for options."""
    data = tmp_path / "tr.csv"
    data.write_text("traj,t,x,y\n1,0,-500,0.5\n1,1,0.5,0.2\n2,0,-0.25,0.7\n")
    for bounds in (["-1e3", "1", "0", "1"], ["-1E3", "1", "-.5", "1"]):
        assert main(["stats", str(data), "--format", "trajectory", "--grid", "4", "--bounds",
                     *bounds, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["sequences"] == 2
    out = str(tmp_path / "r")
    for value, shown in [("-inf", "-inf"), ("-nan", "nan"), ("-.5", "-0.5"), ("-1e3", "-1000.0")]:
        one_line_error(capsys, ["ngram", str(data), "--epsilon", value, "--out", out],
                       f"dpgpu: error: epsilon: must be finite and > 0, got {shown}\n")
    one_line_error(capsys, ["privtree-spatial", str(data), "--epsilon", "1", "--columns", "x,y",
                            "--bounds", "-inf,0,0,1", "--out", out], "dpgpu: error: bounds: ")


# ------------------------------------------------------------------ empty paths
@pytest.mark.parametrize("argv, option", [
    (["stats", "DATA", "--vocab", ""], "--vocab"),
    (["stats", ""], "data"),
    (["ngram", "DATA", "--epsilon", "1", "--out", ""], "--out"),
    (["ngram", "DATA", "--epsilon", "1", "--out", "OUT", "--config", ""], "--config"),
    (["privtree-spatial", "", "--epsilon", "1", "--columns", "x", "--out", "OUT"], "points"),
    (["evaluate", "--original", "", "--release", "OUT"], "--original"),
])
def test_an_empty_path_is_refused_naming_its_option(capsys, tmp_path, argv, option):
    """Regression: '--vocab ""' read the current folder ('.: is a directory'), '--out ""'
    gave an odd message."""
    data = tmp_path / "s.txt"
    data.write_text("a b\nb a\n")
    argv = [str(data) if a == "DATA" else str(tmp_path / "r") if a == "OUT" else a
            for a in argv]
    one_line_error(capsys, argv, f"dpgpu {argv[0]}: error: argument {option}: empty path\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.txt"]
