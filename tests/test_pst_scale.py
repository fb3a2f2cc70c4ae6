"""The PST's compact arrays at scale: int32 indices, block-wise level steps, the child table
walk of the model, and sampled items put in place step by step -- each against a plain
reference, since the release must stay the same bit for bit."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpgpu import SequenceDB
from dpgpu.ops.keys import index_dtype
from dpgpu.mechanisms.privtree.pst import grow, pst, pst_symbols
from dpgpu.mechanisms.privtree.sampling import concatenate
from dpgpu.data.generate import markov_sequences
from test_privtree_pst import SplitAll  # the same no-noise split test

pst_module = importlib.import_module("dpgpu.mechanisms.privtree.pst")


def test_index_dtype_is_int32_exactly_while_every_index_fits():
    assert index_dtype(0) is np.int32 and index_dtype(2 ** 31) is np.int32
    assert index_dtype(2 ** 31 + 1) is np.int64


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), max_size=9), max_size=12), st.integers(1, 6))
def test_pst_symbols_match_a_plain_construction(seqs, l_top):
    db = SequenceDB.from_sequences(seqs, vocab=list("0123"))
    end, start = 4, 5
    want = []
    for s in seqs:
        want += [start] + s[:l_top] + ([end] if len(s) < l_top else [])
    flat, events = pst_symbols(db, l_top)
    assert flat.dtype == np.int32 and flat.tolist() == want
    assert events.dtype == np.int32
    assert events.tolist() == [i for i, x in enumerate(want) if x != start]


def _tree(db, l_top, depth, n_trees=1):
    flat, events = pst_symbols(db, l_top)
    return grow(flat, events, db.vocab.size, SplitAll(depth), n_trees=n_trees, backend="numpy")


@pytest.mark.parametrize("n_trees", [1, 3])
def test_block_wise_levels_equal_one_block(monkeypatch, n_trees):
    db = markov_sequences(3_000, seed=3, n_items=6)
    whole = _tree(db, 7, 4, n_trees)
    monkeypatch.setattr(pst_module, "BLOCK", 5)  # many blocks, most ending inside a node's run
    blocks = _tree(db, 7, 4, n_trees)
    for (a, ha), (b, hb) in zip(zip(*whole), zip(*blocks)):
        assert np.array_equal(a.contexts, b.contexts) and np.array_equal(a.leaf, b.leaf)
        assert np.array_equal(a.child_start, b.child_start) and np.array_equal(ha, hb)
    assert len(whole[0]) == len(blocks[0]) == 5


def _brute_predictor(model, levels, ctx):
    """The deepest non-empty node whose context ends each row, found by context lookups."""
    rows = [{tuple(c): i for i, c in enumerate(lvl.contexts.tolist())} for lvl in levels]
    first = np.cumsum([0] + [lvl.contexts.shape[0] for lvl in levels])
    total = np.concatenate([lvl.hist for lvl in levels]).sum(axis=1)
    out = []
    for row in ctx.tolist():
        node = 0
        for d in range(1, min(len(row), len(levels) - 1) + 1):
            suffix = tuple(row[len(row) - d:])
            if suffix[0] < 0 or suffix not in rows[d]:
                break
            g = int(first[d] + rows[d][suffix])
            node = g if total[g] > 0 else node
        out.append(node)
    return out


def test_model_walk_finds_the_deepest_non_empty_suffix_node():
    db = markov_sequences(20_000, seed=5, n_items=4)
    release = pst(db, 20.0, l_top=8, seed=3, synthetic=False)
    levels, model = release.levels, release.model
    assert len(levels) > 3 and any((lvl.hist.sum(axis=1) == 0).any() for lvl in levels)
    rng = np.random.default_rng(0)
    ctx = rng.integers(0, model.start_id + 1, (3_000, 6)).astype(np.int32)
    ctx[rng.random(ctx.shape) < 0.2] = model.start_id
    pad = rng.integers(0, 7, ctx.shape[0])
    ctx[np.arange(6)[None, :] < pad[:, None]] = -1  # left padding
    got = model.be.to_numpy(model.predictor(model.be.asarray(ctx)))  # on the model's backend
    assert got.tolist() == _brute_predictor(model, levels, ctx)


def test_concatenate_puts_each_steps_symbols_in_place():
    rng = np.random.default_rng(1)
    seqs = [list(rng.integers(0, 9, rng.integers(0, 6))) for _ in range(200)]
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    going, symbols, active = [], [], np.arange(len(seqs))
    for t in range(int(lengths.max()) + 1):
        go = lengths[active] > t
        going.append(go)
        active = active[go]
        symbols.append(np.array([seqs[i][t] for i in active], dtype=np.int32))
    items = concatenate(lengths, going, symbols)
    assert items.tolist() == [x for s in seqs for x in s]
    assert all(g is None for g in going) and all(s is None for s in symbols)  # freed as written
