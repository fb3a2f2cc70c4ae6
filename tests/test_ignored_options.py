"""Options that would do nothing are refused (exit 2, one line naming the option and why), and
a refusal names the option the user typed at fault, with the numbers the user typed."""

from __future__ import annotations

import pytest

from dpgpu import SequenceDB
from dpgpu.cli import main
from dpgpu.commands import advise as advise_command
from dpgpu.commands import evaluate as evaluate_command
from dpgpu.commands.advise import advise
from dpgpu.errors import InvalidParameter
from dpgpu.eval import evaluate as E

SEQUENCES = "a b c\na b\nb c a\na b c d\nc a b\na b\nb c\na c b\n"
VOCAB = "a\nb\nc\nd\ne\n"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The tiny sequences (no users) and their public vocabulary: ``(data, vocab)`` paths."""
    d = tmp_path_factory.mktemp("ignored")
    (d / "seqs.txt").write_text(SEQUENCES)
    (d / "vocab.txt").write_text(VOCAB)
    return str(d / "seqs.txt"), str(d / "vocab.txt")


def refused(capsys, argv, *words):
    """Run ``dpgpu argv``: exit 2, nothing on stdout, one error line holding ``words``."""
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert status == 2 and out == "" and len(lines) == 1, (status, out, err)
    assert lines[0].startswith("dpgpu: error: ") and "Traceback" not in err, err
    assert all(w in lines[0] for w in words), (words, lines[0])
    return lines[0]


# ------------------------------------------------------------------------ pst
@pytest.mark.parametrize("extra, named", [
    (["--n-synthetic", "100"], "--n-synthetic: shapes the synthetic data"),
    (["--max-length", "100"], "--max-length: shapes the synthetic data"),
    (["--n-synthetic", "100", "--max-length", "100"],
     "--n-synthetic, --max-length: shape the synthetic data")])
def test_pst_refuses_synthetic_options_without_synthetic_data(tmp_path, capsys, data, extra,
                                                              named):
    """Regression: they were accepted (rc 0) and --max-length recorded in the report."""
    seqs, vocab = data
    out = tmp_path / "rel"
    refused(capsys, ["pst", seqs, "--vocab", vocab, "--epsilon", "1", "--l-top", "4",
                     "--no-synthetic", *extra, "--out", out], named, "--no-synthetic")
    assert not out.exists()
    assert main(["pst", seqs, "--vocab", vocab, "--epsilon", "1", "--l-top", "4", "--seed",
                 "1", *extra, "--out", str(out)]) == 0  # with synthetic data they apply
    assert (out / "synthetic.txt").exists()


@pytest.mark.parametrize("given, named", [({"n_synthetic": 10}, "n_synthetic: shape"),
                                          ({"max_length": 5}, "max_length: shape"),
                                          ({"n_synthetic": 10, "max_length": 5},
                                           "n_synthetic, max_length: shape")])
def test_pst_api_refuses_them_too(given, named):
    import dpgpu  # noqa: PLC0415

    db = SequenceDB.from_sequences([s.split() for s in SEQUENCES.splitlines()],
                                   vocab=VOCAB.split())
    with pytest.raises(InvalidParameter, match=f"^{named}.*synthetic=False skips"):
        dpgpu.pst(db, 1.0, l_top=4, synthetic=False, seed=1, **given)
    report = dpgpu.pst(db, 1.0, l_top=4, synthetic=False, seed=1).report
    assert report["parameters"]["max_length"] is None  # no synthetic data: no length
    assert report["parameters"]["n_synthetic"] is None


# --------------------------------------------------------------------- advise
@pytest.mark.parametrize("extra, named", [
    (["--contribution-share", "0.9"], "--contribution-share: applies"),
    (["--gram-length", "3"], "--gram-length: applies"),
    (["--contribution-upper", "50"], "--contribution-upper: applies"),
    (["--gram-length", "3", "--contribution-upper", "50", "--contribution-share", "0.9"],
     "--contribution-share, --gram-length, --contribution-upper: apply")])
def test_advise_refuses_contribution_options_on_data_without_users(capsys, data, extra, named):
    """Regression: rc 0, all of epsilon spent on l_max and "contribution": null."""
    refused(capsys, ["advise", data[0], "--epsilon", "1", *extra, "--json"], named,
            "data with users only", "seqs.txt has none")


def test_advise_without_users_and_without_those_options_still_runs(capsys, data):
    assert main(["advise", data[0], "--epsilon", "1", "--seed", "1"]) == 0
    assert "suggested l_max" in capsys.readouterr().out


def test_advise_api_refuses_them_too_and_takes_them_with_users():
    seqs = [line.split() for line in SEQUENCES.splitlines()] * 5
    plain = SequenceDB.from_sequences(seqs, vocab=list("abcde"))
    with pytest.raises(InvalidParameter, match=r"^gram_length, contribution_upper: apply to "):
        advise(plain, 1.0, gram_length=2, contribution_upper=64)
    assert advise(plain, 1.0, seed=1)["contribution"] is None
    users = SequenceDB.from_sequences(seqs, vocab=list("abcde"), users=list(range(len(seqs))))
    part = advise(users, 1.0, gram_length=2, contribution_upper=64, seed=1)["contribution"]
    assert part["gram_length"] == 2 and part["upper"] == 64


def test_advise_checks_the_values_before_the_data(monkeypatch, capsys, data):
    """A bad value is still named before reading, whatever the data turns out to hold."""
    def load(*args, **kw):
        raise AssertionError("advise read the data")

    monkeypatch.setattr(advise_command, "load_from_args", load)
    refused(capsys, ["advise", data[0], "--epsilon", "1", "--gram-length", "0"],
            "--gram-length: must be an integer")


# ------------------------------------------------------------------- evaluate
@pytest.fixture(scope="module")
def releases(tmp_path_factory, data):
    """A DPNE release, an N-gram release without synthetic data and one with, by name."""
    seqs, vocab = data
    d = tmp_path_factory.mktemp("releases")
    runs = {"dpne": ["dpne", seqs, "--epsilon", "1", "--delta", "1e-6", "--max-n", "3",
                     "--contribution", "5"],
            "ngram-tree": ["ngram", seqs, "--vocab", vocab, "--epsilon", "1", "--l-max", "4",
                           "--no-synthetic"],
            "ngram": ["ngram", seqs, "--vocab", vocab, "--epsilon", "1", "--l-max", "4"]}
    for name, argv in runs.items():
        assert main([*argv, "--seed", "1", "--quiet", "--out", str(d / name)]) == 0, name
    return d


@pytest.mark.parametrize("release, extra, words", [
    ("dpne", ["--k", "20"], ["--k: applies to the top-k, pst and em tasks only",
                             "this dpne release (ngrams.tsv) does not allow", "coverage"]),
    ("dpne", ["--threshold", "0.1"], ["--threshold: applies to the frequent task only",
                                      "this dpne release"]),
    ("dpne", ["--min-length", "2"], ["--min-length: applies to the top-k and pst tasks"]),
    ("dpne", ["--backend", "numpy"], ["--backend: applies to the count-queries, top-k, pst, "
                                      "em and ngrams tasks only", "this dpne release"]),
    ("ngram-tree", ["--coverage-k", "5"], ["--coverage-k: applies to the coverage task only",
                                           "this ngram release (ngrams.tsv)", "allows ngrams"]),
    ("ngram-tree", ["--query-sizes", "4"], ["--query-sizes: applies to the count-queries and "
                                            "pst tasks only", "this ngram release"]),
    ("ngram", ["--coverage-k", "5"], ["--coverage-k: applies to the coverage task only",
                                      "this ngram release (ngrams.tsv, synthetic.txt)"]),
    ("ngram", ["--task", "lengths", "--k", "20"],
     ["--k: applies to the top-k, pst and em tasks only, which --task leaves out (chosen: "
      "lengths)"]),
    ("ngram", ["--task", "lengths", "--threshold", "0.5"],
     ["--threshold: applies to the frequent task only, which --task leaves out"]),
    ("dpne", ["--seed", "3"], ["--seed: applies to the count-queries, pst and range-queries "
                               "tasks only", "this dpne release (ngrams.tsv)"]),
    ("ngram-tree", ["--queries", "20"], ["--queries: applies to the count-queries, pst and "
                                         "range-queries tasks only", "this ngram release"]),
    ("ngram", ["--task", "lengths", "--queries", "20"],
     ["--queries: applies to the count-queries, pst and range-queries tasks only, which "
      "--task leaves out (chosen: lengths)"])])
def test_evaluate_refuses_options_no_task_uses_before_reading(monkeypatch, capsys, data,
                                                              releases, release, extra, words):
    """Regression: --k/--threshold on a DPNE release, --coverage-k/--query-sizes on an
    N-gram release without synthetic data, and --seed/--queries where no random query is
    drawn, were accepted and ignored."""
    def load(*args, **kw):
        raise AssertionError("evaluate read the original")

    monkeypatch.setattr(evaluate_command, "load_from_args", load)
    rel = releases / release
    refused(capsys, ["evaluate", "--original", data[0], "--vocab", data[1], "--release", rel,
                     *extra], *words)
    assert not (rel / "evaluation.json").exists()


def test_evaluate_takes_the_options_its_tasks_use(capsys, data, releases):
    for release, extra in [("dpne", ["--coverage-k", "2"]),
                           ("ngram-tree", ["--backend", "numpy"]),
                           ("ngram", ["--k", "5", "--threshold", "0.5", "--query-sizes", "2",
                                      "--queries", "20", "--seed", "3"])]:
        assert main(["evaluate", "--original", data[0], "--vocab", data[1], "--release",
                     str(releases / release), "--json", *extra]) == 0, \
            capsys.readouterr().err
        capsys.readouterr()
        (releases / release / "evaluation.json").unlink()


def test_evaluate_release_api_refuses_them_by_keyword(data, releases):
    with pytest.raises(InvalidParameter, match=r"^k_values: applies to the top-k, pst and em "
                                               r"tasks only, which this dpne release"):
        E.evaluate_release(data[0], releases / "dpne", k_values=[5])
    with pytest.raises(InvalidParameter, match=r"^query_sizes: .* tasks leaves out"):
        E.evaluate_release(data[0], releases / "ngram", tasks=["lengths"], query_sizes=[2])
    with pytest.raises(InvalidParameter, match=r"^seed: applies to the count-queries, pst and "
                                               r"range-queries tasks only, which this dpne"):
        E.evaluate_release(data[0], releases / "dpne", seed=0)
    assert not (releases / "dpne" / "evaluation.json").exists()


# ------------------------------------------------------------------- messages
def test_ngram_epsilon_message_gives_the_epsilon_typed_and_its_share(tmp_path, capsys, data):
    """Regression: 'epsilon: too small; a budget of 2e-31 ...' for --epsilon 1e-30: 2e-31 is
    level 1's share, epsilon / n_max, a number the user never typed."""
    seqs, vocab = data
    line = refused(capsys, ["ngram", seqs, "--vocab", vocab, "--epsilon", "1e-30", "--out",
                            tmp_path / "x"],
                   "epsilon: too small; 1e-30 over the n_max = 5 levels gives level 1",
                   "1e-30 / 5 = 2e-31", "noise scale 5e+30 even at l_max = 1",
                   "raise epsilon or lower n_max")
    assert "a budget of 2e-31" not in line
    refused(capsys, ["ngram", seqs, "--vocab", vocab, "--epsilon", "1e-16", "--n-max", "1",
                     "--out", tmp_path / "x"],
            "epsilon: too small; a budget of 1e-16 makes the noise scale 1e+16")
    assert not (tmp_path / "x").exists()


def test_dpne_decay_at_fault_is_named(tmp_path, capsys, data):
    """Regression: --schedule geometric --decay 1e9 blamed epsilon."""
    base = ["dpne", data[0], "--delta", "1e-6", "--max-n", "3", "--contribution", "5",
            "--schedule", "geometric", "--out", tmp_path / "x"]
    for decay, k in [("1e9", 3), ("1e-9", 1)]:
        refused(capsys, [*base, "--epsilon", "1", "--decay", decay],
                f"error: decay: {float(decay):g} makes sigma_{k} = ", "above 512",
                "bring decay nearer 1")
    # where even equal sigmas pass the limit, no decay helps: epsilon is named
    line = refused(capsys, [*base, "--epsilon", "1e-6", "--decay", "2"],
                   "error: epsilon: 1e-06 needs sigma_k above 512 whatever the schedule")
    assert "decay" not in line
    assert not (tmp_path / "x").exists()
