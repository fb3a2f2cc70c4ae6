"""The PST's bound on released histogram counts, ``max_nodes * (|I| + 1)``.

Regression: on Kosarak (21,145 items) a depth-3 tree's leaf histograms were 1.3e9 noisy
counts, drawn with no bound, no progress and no refusal, until the run was killed at 24 GB.
The bound is checked from public inputs (the vocabulary's size and max_nodes) before any
budget is charged or any data is counted; the default node cap is lowered to fit it.
"""

from __future__ import annotations

import importlib
import json
import logging

import numpy as np
import pytest

from dpgpu import InvalidParameter, SequenceDB
from dpgpu.cli import main
from dpgpu.progress import Step

pst_module = importlib.import_module("dpgpu.mechanisms.privtree.pst")
pst_command = importlib.import_module("dpgpu.commands.pst")
pst = pst_module.pst

NINE = [str(i) for i in range(9)]  # |I| = 9: histograms of 10 counts


class SplitAll:
    """A no-noise split test that splits every testable node above ``depth``."""

    def __init__(self, depth: int):
        self.depth, self.draws = depth, 0

    def decide(self, s, depth, ids, backend):
        self.draws += s.shape[0]
        return np.full(s.shape[0], depth < self.depth)


def nine_db(n: int = 200, seed: int = 0) -> SequenceDB:
    rng = np.random.default_rng(seed)
    return SequenceDB.from_sequences(
        [[NINE[x] for x in rng.integers(0, 9, 4)] for _ in range(n)], vocab=NINE)


@pytest.fixture
def split_all(monkeypatch):
    """Every testable node above depth 2 splits (the tree's size no longer depends on noise)."""
    monkeypatch.setattr(pst_module, "SplitTest", lambda params, key: SplitAll(2))


class Untouchable:
    """Stands in for what the refused run must never reach."""

    def __init__(self, *args, **kwargs):
        raise AssertionError("reached after the refusal should have happened")


def test_node_limit_defaults_and_lowers_the_cap():
    assert pst_module.node_limit(17) == pst_module.MAX_NODES  # msnbc-sized: unchanged
    kosarak = pst_module.node_limit(21_145)
    assert kosarak == pst_module.MAX_HISTOGRAM_CELLS // 21_146 < pst_module.MAX_NODES
    assert kosarak * 21_146 <= pst_module.MAX_HISTOGRAM_CELLS < (kosarak + 1) * 21_146
    assert kosarak < 2 + 21_145  # too few nodes for one split: Kosarak's tree is its root
    assert pst_module.node_limit(17, 5) == 5
    # the bound is "a few hundred million at most" (int64 counts held a few times over)
    assert 10 ** 7 <= pst_module.MAX_HISTOGRAM_CELLS <= 3 * 10 ** 8


def test_kosarak_sized_cap_is_refused_by_name():
    with pytest.raises(InvalidParameter, match=r"max_nodes: at most 4,729 with 21,145 items, "
                                               r"got 1,000,000.*--max-nodes.*smaller vocabulary"):
        pst_module.node_limit(21_145, pst_module.MAX_NODES)


def test_refusal_comes_before_the_ledger_and_the_data(monkeypatch):
    monkeypatch.setattr(pst_module, "MAX_HISTOGRAM_CELLS", 100)
    monkeypatch.setattr(pst_module, "PrivacyLedger", Untouchable)  # no budget charged
    monkeypatch.setattr(pst_module, "pst_symbols", Untouchable)  # no data counted
    monkeypatch.setattr(pst_module, "partition", Untouchable)
    for seed in (0, 1):  # public inputs only: any data on the vocabulary is refused alike
        with pytest.raises(InvalidParameter) as err:
            pst(nine_db(seed=seed), 1.0, max_nodes=11, seed=1)
        message = str(err.value)
        assert message.startswith("max_nodes: at most 10 with 9 items, got 11")
        assert "--max-nodes" in message and "smaller vocabulary" in message


def test_the_bound_itself_is_allowed_and_holds(monkeypatch, split_all):
    monkeypatch.setattr(pst_module, "MAX_HISTOGRAM_CELLS", 300)
    release = pst(nine_db(), 1.0, max_nodes=30, seed=1, synthetic=False)  # 30 x 10 = 300
    nodes = release.report["tree"]["nodes_per_depth"]
    assert nodes == [1, 10]  # the next level (81 more nodes) is cut
    assert sum(nodes) * 10 <= 300 and release.report["parameters"]["max_nodes"] == 30
    assert sum(len(n["hist"]) for n in release.nodes()) == sum(nodes) * 10


def test_default_cap_is_lowered_for_a_large_vocabulary(monkeypatch, split_all, caplog):
    db = nine_db()
    unbounded = pst(db, 1.0, seed=1, synthetic=False)
    assert unbounded.report["tree"]["nodes_per_depth"] == [1, 10, 90]
    monkeypatch.setattr(pst_module, "MAX_HISTOGRAM_CELLS", 100)
    with caplog.at_level(logging.WARNING, logger="dpgpu"):
        release = pst(db, 1.0, seed=1, synthetic=False)
    assert release.report["parameters"]["max_nodes"] == 10
    assert release.report["tree"]["nodes_per_depth"] == [1]  # one split would make 11 nodes
    assert "root only" in caplog.text and "smaller vocabulary" in caplog.text


def test_a_vocabulary_past_the_bound_is_refused_even_by_default(monkeypatch):
    monkeypatch.setattr(pst_module, "MAX_HISTOGRAM_CELLS", 9)  # the root alone has 10 counts
    monkeypatch.setattr(pst_module, "PrivacyLedger", Untouchable)
    with pytest.raises(InvalidParameter, match=r"^vocabulary: 9 items.*smaller vocabulary"):
        pst(nine_db(), 1.0, seed=1)


def test_small_runs_are_unaffected():
    db = nine_db()
    default = pst(db, 2.0, seed=3, synthetic=False)
    explicit = pst(db, 2.0, seed=3, synthetic=False, max_nodes=pst_module.MAX_NODES)
    assert default.report["parameters"]["max_nodes"] == pst_module.MAX_NODES
    assert default.report["ledger"] == explicit.report["ledger"]
    assert [n["hist"] for n in default.nodes()] == [n["hist"] for n in explicit.nodes()]


def test_histogram_stage_reports_progress_and_blocks_change_nothing(monkeypatch, split_all):
    db = nine_db()
    quiet = []
    whole = pst(db, 1.0, seed=5, synthetic=False, progress=quiet.append)
    assert quiet and not any(s.startswith("noisy histograms") for s in quiet)  # one block
    steps = []
    monkeypatch.setattr(pst_module, "HIST_BLOCK", 25)  # two leaves (20 counts) a block
    blocked = pst(db, 1.0, seed=5, synthetic=False, progress=steps.append)
    assert [n["hist"] for n in whole.nodes()] == [n["hist"] for n in blocked.nodes()]
    hist_steps = [s for s in steps if s.startswith("noisy histograms")]
    assert blocked.report["tree"]["leaves"] == 91  # the '$' child of the root, and depth 2
    # plain messages: the tree's levels stay the run's only counted stage (Steps 1, 2, ...)
    assert not any(isinstance(s, Step) for s in hist_steps)
    assert [s.done for s in steps if isinstance(s, Step)] == [1, 2, 3]
    # depth 1: one leaf, one block; depth 2: 90 leaves, two a block
    assert hist_steps == [f"noisy histograms: {done} of 910 counts"
                          for done in [10] + list(range(30, 911, 20))]


def test_cli_refuses_max_nodes_before_reading_the_input(tmp_path, monkeypatch, capsys):
    data = tmp_path / "toy.txt"
    data.write_text("0 1 2\n3 4\n" * 20)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(NINE) + "\n")
    monkeypatch.setattr(pst_module, "MAX_HISTOGRAM_CELLS", 100)
    monkeypatch.setattr(pst_command, "run_mechanism", Untouchable)  # nor --out, nor the data
    out = tmp_path / "rel"
    assert main(["pst", str(data), "--epsilon", "1", "--vocab", str(vocab), "--max-nodes", "11",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "at most 10 with 9 items, got 11" in err and "--max-nodes" in err
    assert "Traceback" not in err
    # without --vocab only the bound of every vocabulary (|I| >= 1) is known in advance
    assert main(["pst", str(data), "--epsilon", "1", "--max-nodes", "51", "--out", str(out)]) == 2
    assert "at most 50 with any vocabulary, got 51" in capsys.readouterr().err
    assert not out.exists()


def test_cli_max_nodes_reaches_the_release(tmp_path, monkeypatch):
    data = tmp_path / "toy.txt"
    data.write_text("0 1 2\n3 4\n" * 20)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(NINE) + "\n")
    monkeypatch.setattr(pst_module, "MAX_HISTOGRAM_CELLS", 100)
    # passes the public check (|I| unknown: 50), then is refused on the data's 9 items
    assert main(["pst", str(data), "--epsilon", "1", "--max-nodes", "20", "--out",
                 str(tmp_path / "no")]) == 2
    assert not (tmp_path / "no").exists()
    assert main(["pst", str(data), "--epsilon", "1", "--vocab", str(vocab), "--max-nodes", "10",
                 "--seed", "1", "--no-synthetic", "--out", str(tmp_path / "rel")]) == 0
    report = json.loads((tmp_path / "rel" / "report.json").read_text())
    assert report["parameters"]["max_nodes"] == 10
