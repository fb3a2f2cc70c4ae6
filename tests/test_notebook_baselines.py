"""Notebook API of the baselines' releases: EM top-k, UG and AG give frames and plots.

Regression: ``.to_pandas()`` and ``.plot()`` of an EM release, and of a UG or AG release read
back with ``dpgpu.load_release``, failed with "no table for mechanism"; UG and AG objects
(``SpatialHistogram``) had neither method.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import dpgpu  # noqa: E402
from dpgpu import InvalidParameter, SequenceDB  # noqa: E402
from dpgpu.mechanisms.privtree import SpatialHistogram, adaptive_grid, uniform_grid  # noqa: E402

# Items named as the end and start markers, with a space and with '%': topk.tsv %-encodes them,
# frames decode them back to the same strings (never to dpgpu.END / dpgpu.START).
VOCAB = ["&", "$", "a x", "b%"]
SEQS = [["&", "a x", "&", "b%"], ["&", "$"], ["a x", "&", "b%", "&"], ["$", "&"]] * 40
BOUNDS = [(0, 1), (0, 1)]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def releases():
    db = SequenceDB.from_sequences(SEQS, vocab=VOCAB)
    pts = np.random.default_rng(0).random((2000, 2))
    return {
        "em": dpgpu.em_top_k(db, 20.0, 6, l_top=4, seed=1),
        "ug": uniform_grid(pts, 1.0, n=len(pts), bounds=BOUNDS, columns=["lon", "lat"], seed=1),
        "ag": adaptive_grid(pts, 1.0, n=len(pts), bounds=BOUNDS, columns=["lon", "lat"], seed=1),
        "privtree": dpgpu.privtree_spatial(pts, 1.0, bounds=BOUNDS, columns=["lon", "lat"],
                                           seed=1),
    }


def _both(rel, path):
    """The release object and the release read back from its saved directory."""
    return rel, dpgpu.load_release(rel.save(path))


def _bars(ax):
    return [p for p in ax.patches if isinstance(p, matplotlib.patches.Rectangle)]


def _labels_top_down(ax):
    ticks = sorted(ax.get_yticklabels(), key=lambda t: -t.get_position()[1])
    return [t.get_text() for t in ticks]


# ------------------------------------------------------------------ EM top-k
def test_em_frame_is_the_ranked_strings(releases, tmp_path):
    rel = releases["em"]
    strings = rel.strings()
    assert ("&",) in strings and len(strings) == 6  # an item '&', not the end marker
    for release in _both(rel, tmp_path / "em"):
        frame = release.to_pandas()
        assert list(frame.columns) == ["rank", "string", "length"]
        assert frame.dtypes.tolist() == [np.int64, object, np.int64]
        assert list(frame.itertuples(index=False, name=None)) == \
            [(i, s, len(s)) for i, s in enumerate(strings, 1)]
        assert all(isinstance(x, str) for s in frame["string"] for x in s)


def test_em_loaded_frame_decodes_topk_tsv(releases, tmp_path):
    out = releases["em"].save(tmp_path / "em")
    rows = (out / "topk.tsv").read_text(encoding="utf-8").splitlines()[1:]
    frame = dpgpu.load_release(out).to_pandas()
    assert [int(r.split("\t")[0]) for r in rows] == list(frame["rank"])
    assert [dpgpu.notebook.decode_gram(r.split("\t")[1]) for r in rows] == list(frame["string"])
    assert "%26" in (out / "topk.tsv").read_text(encoding="utf-8")  # the item '&', encoded


def test_em_plot_lists_the_strings_in_rank_order_without_counts(releases, tmp_path):
    rel = releases["em"]
    expected = [f"{i}. " + " ".join(s) for i, s in enumerate(rel.strings(), 1)]
    for release in _both(rel, tmp_path / "em"):
        ax = release.plot(k=4)
        assert isinstance(ax, matplotlib.axes.Axes)
        assert len(_bars(ax)) == 4
        assert {b.get_width() for b in _bars(ax)} == {1.0}  # no invented counts
        assert list(ax.get_xticks()) == []
        assert _labels_top_down(ax) == expected[:4]
    longer = [f"{i}. " + " ".join(s) for i, s in enumerate(rel.strings(), 1) if len(s) >= 2]
    assert _labels_top_down(rel.plot(min_length=2)) == longer


# ------------------------------------------------------------------ UG and AG
@pytest.mark.parametrize("name, dtype", [("ug", np.int64), ("ag", np.float64)])
def test_grid_frames_are_the_leaf_boxes(releases, tmp_path, name, dtype):
    rel = releases[name]
    privtree = releases["privtree"].to_pandas()
    for release in (*_both(rel, tmp_path / name), SpatialHistogram.load(tmp_path / name)):
        frame = release.to_pandas()
        assert list(frame.columns) == list(privtree.columns) == \
            ["lo_lon", "hi_lon", "lo_lat", "hi_lat", "count"]
        assert frame.dtypes.tolist() == [np.float64] * 4 + [dtype]
        assert len(frame) == len(rel)
        np.testing.assert_array_equal(frame[["lo_lon", "lo_lat"]].to_numpy(), rel.lo)
        np.testing.assert_array_equal(frame[["hi_lon", "hi_lat"]].to_numpy(), rel.hi)
        np.testing.assert_array_equal(frame["count"].to_numpy(), rel.counts)
    if name == "ag":  # constrained inference: counts a frame of integers would truncate
        assert np.any(rel.counts != np.round(rel.counts))


def test_a_privtree_release_read_as_a_histogram_gives_its_frame(releases, tmp_path):
    rel = releases["privtree"]
    back = SpatialHistogram.load(rel.save(tmp_path / "p"))
    pd.testing.assert_frame_equal(back.to_pandas(), rel.to_pandas(), check_exact=True)


@pytest.mark.parametrize("name", ["ug", "ag"])
def test_grid_plot_draws_every_leaf(releases, tmp_path, name):
    rel = releases[name]
    for release in _both(rel, tmp_path / name):
        fig, ax = plt.subplots()
        assert release.plot(ax, dims=(1, 0)) is ax
        (boxes,) = ax.collections
        assert len(boxes.get_paths()) == len(rel)
        assert ax.get_xlabel() == "lat" and ax.get_ylabel() == "lon"
        fig.savefig(tmp_path / f"{name}.png")  # renders headlessly


def test_ug_plot_of_one_dimension_draws_bars():
    pts = np.random.default_rng(1).random((300, 1))
    rel = uniform_grid(pts, 1.0, n=300, bounds=[(0, 1)], seed=2)
    assert len(_bars(rel.plot())) == len(rel)


def test_baseline_reprs_name_the_mechanism(releases):
    assert repr(releases["ug"]).startswith("SpatialHistogram(uniform-grid, epsilon=1.0")
    assert repr(releases["ag"]).endswith(f"leaves={len(releases['ag'])})")
    assert releases["ag"].summary().startswith("release (not saved yet): adaptive-grid")


def test_a_histogram_made_by_hand_has_no_frame_or_summary():
    hand = SpatialHistogram([[0, 0]], [[1, 1]], [3])
    assert repr(hand) == "SpatialHistogram(no report, leaves=1)"
    assert hand._repr_html_() is None  # a notebook falls back to the repr
    with pytest.raises(InvalidParameter, match="no release report"):
        hand.to_pandas()
    with pytest.raises(InvalidParameter, match="no release report"):
        hand.plot()
    with pytest.raises(InvalidParameter, match="no release report.*no summary"):
        hand.summary()
    empty = SpatialHistogram([[0, 0]], [[1, 1]], [3], report={})
    with pytest.raises(InvalidParameter, match="no release report"):
        empty.to_pandas()


def test_the_leaves_of_a_privtree_release_point_to_the_release(releases):
    with pytest.raises(InvalidParameter, match=r"\.leaves of a PrivTree release"):
        releases["privtree"].leaves.to_pandas()
    assert len(releases["privtree"].to_pandas()) == len(releases["privtree"].leaves)


@pytest.mark.parametrize("name, options, says", [
    ("em", {"dims": (0, 1)}, "dims: shapes the plot of privtree-spatial, uniform-grid, "
                             "adaptive-grid releases only, not of a em-top-k release"),
    ("ug", {"k": 5}, "k: shapes the plot of ngram, pfs2, privtree-pst, em-top-k releases only, "
                     "not of a uniform-grid release"),
    ("ag", {"min_length": 2}, "min_length: shapes the plot of ngram, pfs2, em-top-k releases "
                              "only, not of a adaptive-grid release")])
def test_plot_options_are_refused_where_they_shape_nothing(releases, tmp_path, name, options,
                                                          says):
    for release in _both(releases[name], tmp_path / name):
        with pytest.raises(InvalidParameter, match=re.escape(says)):
            release.plot(**options)


def test_plot_options_are_checked_for_the_baselines(releases):
    with pytest.raises(InvalidParameter, match="k"):
        releases["em"].plot(k=0)
    with pytest.raises(InvalidParameter, match="dims"):
        releases["ag"].plot(dims=(0, 2))


@pytest.mark.parametrize("name", ["ug", "privtree", "ag"])
def test_a_loaded_spatial_release_saved_again_reads_back_the_same(releases, tmp_path, name):
    """Regression: SpatialHistogram.load gave float counts whatever the mechanism, so a UG or
    PrivTree release loaded and saved again wrote '7.0', which its frame failed to read."""
    rel = releases[name]
    first = rel.save(tmp_path / "first")
    loaded = SpatialHistogram.load(first)
    integer = name != "ag"
    assert np.issubdtype(loaded.counts.dtype, np.integer) == integer
    again = dpgpu.load_release(loaded.save(tmp_path / "again"))
    assert (tmp_path / "again" / "leaves.csv").read_text() == (first / "leaves.csv").read_text()
    frame, want = again.to_pandas(), dpgpu.load_release(first).to_pandas()
    pd.testing.assert_frame_equal(frame, want)
    assert (frame["count"].dtype == np.int64) == integer
