"""Notebook API: ``.to_pandas()`` and ``.plot()`` on every release object."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import dpgpu  # noqa: E402
from dpgpu import InvalidParameter, SequenceDB  # noqa: E402

# A label with a space and one with '%': release files %-encode them, frames decode them.
VOCAB = ["a x", "b%", "c"]
SEQS = [["a x", "b%", "c"], ["a x", "b%"], ["b%", "c", "a x", "b%"], ["c"]] * 30


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def db():
    return SequenceDB.from_sequences(SEQS, vocab=VOCAB)


@pytest.fixture(scope="module")
def releases(db):
    users = SequenceDB(db.items, db.offsets, db.vocab, users=np.arange(len(db)) // 2)
    pts = np.random.default_rng(0).random((500, 2))
    return {
        "ngram": dpgpu.ngram(db, 1.0, l_max=4, n_max=3, seed=1),
        "pst": dpgpu.pst(db, 1.0, l_top=5, seed=1),
        "pfs2": dpgpu.pfs2(db, 1.0, 0.2, seed=1),
        "dpne": dpgpu.dpne(users, 2.0, 1e-5, max_n=3, contribution=3, seed=1),
        "spatial": dpgpu.privtree_spatial(pts, 1.0, bounds=[(0, 1), (0, 1)],
                                          columns=["lon", "lat"], seed=1),
    }


def test_ngram_frame_is_the_released_grams(releases):
    rel = releases["ngram"]
    frame = rel.to_pandas()
    assert list(frame.columns) == ["gram", "n", "noisy_count", "count"]
    expected = [(tuple(dpgpu.END if x == "&" else x for x in g), a, c)  # no item is '&'
                for g, a, c in rel.ngrams()]
    assert len(frame) == len(expected)
    assert list(frame.itertuples(index=False, name=None)) == \
        [(g, len(g), a, c) for g, a, c in expected]
    assert {x for g in frame["gram"] for x in g} <= set(VOCAB) | {dpgpu.END}


def test_pst_frame_has_every_node_and_next_symbol(releases):
    rel = releases["pst"]
    frame = rel.to_pandas()
    assert list(frame.columns) == ["context", "depth", "leaf", "symbol", "noisy_count"]
    symbols = VOCAB + [dpgpu.END]
    nodes = rel.nodes()
    assert len(frame) == len(nodes) * len(symbols)
    for i, node in enumerate(nodes):
        part = frame.iloc[i * len(symbols):(i + 1) * len(symbols)]
        assert set(part["context"]) == {tuple(dpgpu.START if x == "$" else x  # no item is '$'
                                              for x in node["context"])}
        assert set(part["depth"]) == {node["depth"]} and set(part["leaf"]) == {node["leaf"]}
        assert list(part["symbol"]) == symbols
        assert list(part["noisy_count"]) == node["hist"]


def test_spatial_frame_is_the_leaf_boxes(releases):
    rel = releases["spatial"]
    frame = rel.to_pandas()
    assert list(frame.columns) == ["lo_lon", "hi_lon", "lo_lat", "hi_lat", "count"]
    assert len(frame) == len(rel.leaves)
    np.testing.assert_array_equal(frame[["lo_lon", "lo_lat"]].to_numpy(), rel.leaves.lo)
    np.testing.assert_array_equal(frame[["hi_lon", "hi_lat"]].to_numpy(), rel.leaves.hi)
    np.testing.assert_array_equal(frame["count"].to_numpy(), rel.leaves.counts)


def test_pfs2_frame_is_the_frequent_patterns(releases):
    rel = releases["pfs2"]
    frame = rel.to_pandas()
    assert list(frame.columns) == ["pattern", "length", "support"]
    assert list(frame.itertuples(index=False, name=None)) == \
        [(p, len(p), s) for p, s in rel.frequent()]


def test_dpne_frame_is_the_released_sets_without_counts(releases):
    rel = releases["dpne"]
    frame = rel.to_pandas()
    assert list(frame.columns) == ["k", "gram"]
    assert list(frame["gram"]) == rel.grams()
    assert list(frame["k"]) == [len(g) for g in rel.grams()]
    assert frame["k"].value_counts().reindex(range(1, len(rel.counts()) + 1),
                                             fill_value=0).tolist() == rel.counts()


@pytest.mark.parametrize("name", ["ngram", "pst", "pfs2", "dpne", "spatial"])
def test_a_loaded_release_gives_the_same_frame(releases, tmp_path, name):
    rel = releases[name]
    loaded = dpgpu.load_release(rel.save(tmp_path / name))
    # ngrams.tsv keeps the consistent counts exactly (shortest round-trip decimals)
    pd.testing.assert_frame_equal(loaded.to_pandas(), rel.to_pandas(), check_exact=True)
    assert loaded.summary().startswith(f"release {tmp_path / name}: ")  # not "not saved yet"
    assert rel.summary().startswith("release (not saved yet): ")


# Items named as the markers: release files write them %26 and %24, frames keep them strings.
MARKER_VOCAB = ["&", "$", "Send Fine", "100%"]
MARKER_SEQS = [["&", "Send Fine", "$"], ["$", "&"], ["100%", "&", "&"], ["Send Fine"]] * 30


@pytest.fixture(scope="module")
def marker_releases():
    db = SequenceDB.from_sequences(MARKER_SEQS, vocab=MARKER_VOCAB)
    return {"ngram": dpgpu.ngram(db, 2.0, l_max=4, n_max=3, seed=1),
            "pst": dpgpu.pst(db, 2.0, l_top=4, seed=1)}


def _loaded_frame(release, path):
    loaded = dpgpu.load_release(release.save(path)).to_pandas()
    pd.testing.assert_frame_equal(loaded, release.to_pandas(), check_exact=False, atol=5e-4,
                                  rtol=0)
    return loaded


def test_ngram_frames_tell_an_item_named_and_from_the_end_marker(marker_releases, tmp_path):
    rel = marker_releases["ngram"]
    for frame in (rel.to_pandas(), _loaded_frame(rel, tmp_path / "r")):
        grams = list(frame["gram"])
        assert len(set(grams)) == len(grams)  # the item '&' and the end are two grams
        assert ("&",) in grams and ("$",) in grams and ("&", dpgpu.END) in grams
        assert ("Send Fine", "&") in grams and ("Send Fine", dpgpu.END) in grams
        assert all(dpgpu.END not in g[:-1] and dpgpu.START not in g for g in grams)
        ends = frame["gram"].map(lambda g: g[-1] is dpgpu.END)
        assert ends.sum() == sum(g[-1] == rel.vocab.end_id
                                 for lvl in rel.levels for g in lvl.grams.tolist())
        assert list(frame.sort_values("gram", kind="stable")["gram"]) == sorted(grams)


def test_pst_frames_tell_items_named_and_dollar_from_the_markers(marker_releases, tmp_path):
    rel = marker_releases["pst"]
    assert rel.start_marker == "$$"  # pst.json's name for the start, as an item is '$'
    for frame in (rel.to_pandas(), _loaded_frame(rel, tmp_path / "r")):
        for _, node in frame.groupby("context", sort=False):
            assert list(node["symbol"]) == MARKER_VOCAB + [dpgpu.END]
        contexts = set(frame["context"])
        assert (dpgpu.START,) in contexts and ("$",) in contexts and ("&",) in contexts
        assert all(dpgpu.START not in c[1:] and "$$" not in c for c in contexts)
        assert (frame["symbol"] != dpgpu.END).sum() == len(contexts) * len(MARKER_VOCAB)


def test_markers_are_singletons_that_sort_beside_labels():
    import copy
    import pickle

    assert repr(dpgpu.END) == "dpgpu.END" and str(dpgpu.START) == "<start>"
    assert pickle.loads(pickle.dumps(dpgpu.END)) is dpgpu.END
    assert copy.deepcopy((dpgpu.START,))[0] is dpgpu.START
    assert dpgpu.END != "&" and dpgpu.START != "$"
    grams = [("a", dpgpu.END), ("&",), ("a", "&"), (dpgpu.START, "a")]
    assert sorted(grams) == [(dpgpu.START, "a"), ("&",), ("a", "&"), ("a", dpgpu.END)]


def test_plot_leaves_out_the_end_marker_but_not_an_item_named_and(marker_releases):
    rel = marker_releases["ngram"]
    ax = rel.plot(k=100, min_length=2)
    labels = {t.get_text() for t in ax.get_yticklabels()}
    assert "Send Fine &" in labels and not any("<end>" in x for x in labels)


def test_a_damaged_release_file_is_an_input_error(releases, tmp_path):
    out = releases["pfs2"].save(tmp_path / "r")
    (out / "frequent.tsv").write_text("pattern\tsupport\nc\tmany\n")
    with pytest.raises(dpgpu.InputError, match="frequent.tsv|malformed"):
        dpgpu.load_release(out).to_pandas()
    (out / "frequent.tsv").write_text("pattern\n")
    with pytest.raises(dpgpu.InputError, match="lacks support"):
        dpgpu.load_release(out).to_pandas()


def _bars(ax):
    return [p for p in ax.patches if isinstance(p, matplotlib.patches.Rectangle)]


def test_plot_top_k_bars(releases):
    rel = releases["ngram"]
    items = [g for g, _, _ in rel.ngrams() if len(g) >= 2 and "&" not in g]
    ax = rel.plot(k=5, min_length=2)
    assert isinstance(ax, matplotlib.axes.Axes)
    assert len(_bars(ax)) == min(5, len(items))
    best = max(c for g, _, c in rel.ngrams() if len(g) >= 2 and "&" not in g)
    assert max(b.get_width() for b in _bars(ax)) == pytest.approx(best)

    rel = releases["pfs2"]
    ax = rel.plot(k=2)
    assert len(_bars(ax)) == min(2, len(rel.frequent()))
    assert sorted(b.get_width() for b in _bars(ax))[-1] == max(s for _, s in rel.frequent())


def test_plot_pst_root_histogram(releases):
    rel = releases["pst"]
    root = next(n for n in rel.nodes() if n["depth"] == 0)
    ax = rel.plot()
    assert len(_bars(ax)) == len(VOCAB) + 1
    assert sorted(b.get_width() for b in _bars(ax)) == sorted(root["hist"])


def test_plot_dpne_one_bar_per_level(releases):
    rel = releases["dpne"]
    ax = rel.plot()
    max_n = rel.report["parameters"]["max_n"]
    assert len(_bars(ax)) == max_n
    assert [b.get_height() for b in _bars(ax)] == \
        (rel.counts() + [0] * max_n)[:max_n]


def test_plot_spatial_draws_every_leaf(releases, tmp_path):
    rel = releases["spatial"]
    fig, ax = plt.subplots()
    assert rel.plot(ax) is ax
    (boxes,) = ax.collections
    assert len(boxes.get_paths()) == len(rel.leaves)
    loaded = dpgpu.load_release(rel.save(tmp_path / "s"))
    assert len(loaded.plot().collections[0].get_paths()) == len(rel.leaves)
    fig.savefig(tmp_path / "s.png")  # renders headlessly


def test_plot_spatial_one_dimension_draws_bars():
    pts = np.random.default_rng(1).random((300, 1))
    rel = dpgpu.privtree_spatial(pts, 1.0, bounds=[(0, 1)], seed=2)
    assert len(_bars(rel.plot())) == len(rel.leaves)


def test_missing_pandas_names_the_extra(releases, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # makes `import pandas` fail
    with pytest.raises(InvalidParameter, match=r"pip install dpgpu\[pandas\]"):
        releases["pfs2"].to_pandas()


def test_missing_matplotlib_names_the_extra(releases, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(InvalidParameter, match=r"pip install dpgpu\[plot\]"):
        releases["pfs2"].plot()


def test_plot_rejects_a_bad_k(releases):
    with pytest.raises(InvalidParameter, match="k"):
        releases["ngram"].plot(k=0)


@pytest.mark.parametrize("name, options, says", [
    ("ngram", {"dims": (5, 6)}, "dims: shapes the plot of privtree-spatial, uniform-grid, "
                                "adaptive-grid releases only, not of a ngram release"),
    ("pst", {"min_length": 3}, "min_length: shapes the plot of ngram, pfs2, em-top-k releases "
                               "only"),
    ("dpne", {"k": 5}, "k: shapes the plot of ngram, pfs2, privtree-pst, em-top-k releases "
                       "only")])
def test_plot_refuses_options_that_do_not_shape_it(releases, name, options, says):
    """Regression: ngram_release.plot(dims=(5, 6)) and pst_release.plot(min_length=3) ran, the
    options ignored."""
    with pytest.raises(InvalidParameter, match=re.escape(says)):
        releases[name].plot(**options)
