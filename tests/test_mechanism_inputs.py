"""What the release objects of N-gram, PST, PFS² and spatial PrivTree take and give.

Options checked before any data is read (``progress``, booleans), release
objects that pickle and copy, and their ``repr``.
"""

from __future__ import annotations

import copy
import pickle
import re

import numpy as np
import pytest

import dpgpu
from dpgpu import SequenceDB
from dpgpu.errors import InvalidParameter
from dpgpu.mechanisms.privtree import uniform_grid
from dpgpu.privacy import NoiseKey, PrivacyLedger

DB = dpgpu.SequenceDB.from_sequences([["a", "b"], ["b"], ["a", "a"], ["b", "a", "b"]] * 60,
                                     vocab=["a", "b", "c"])
POINTS = np.random.default_rng(0).random((300, 2))

#: Each mechanism on a small input, with the options given as ``**options``.
RUNS = {
    "ngram": lambda **o: dpgpu.ngram(DB, 1.0, l_max=3, n_max=3, seed=1, **o),
    "pst": lambda **o: dpgpu.pst(DB, 1.0, l_top=3, seed=1, **o),
    "pfs2": lambda **o: dpgpu.pfs2(DB, 1.0, 0.2, l_upper=4, seed=1, **o),
    "privtree-spatial": lambda **o: dpgpu.privtree_spatial(POINTS, 1.0, bounds=[0, 1, 0, 1],
                                                           seed=1, **o),
}


@pytest.mark.parametrize("mechanism", ["ngram", "pst", "pfs2"])
def test_a_progress_that_is_not_callable_is_refused_naming_it(mechanism, monkeypatch):
    """Regression: ``ngram(..., progress="yes")`` failed with a TypeError at its first stage,
    after reading the data and charging the budget."""
    with monkeypatch.context() as m:
        m.setattr(PrivacyLedger, "charge", pytest.fail)  # refused before it
        for progress in ("yes", 1, True):
            with pytest.raises(InvalidParameter, match="^progress: expected a callable"):
                RUNS[mechanism](progress=progress)
    seen = []
    RUNS[mechanism](progress=seen.append)
    assert seen and all(isinstance(m, str) for m in seen)


@pytest.mark.parametrize("mechanism", ["ngram", "pst"])
def test_synthetic_must_be_a_bool(mechanism):
    """Regression: ``synthetic="False"`` (truthy) made synthetic data."""
    for synthetic in ("False", "no", 0, 1, None):
        with pytest.raises(InvalidParameter, match="^synthetic: expected True or False"):
            RUNS[mechanism](synthetic=synthetic)
    assert RUNS[mechanism](synthetic=np.bool_(False)).synthetic is None


def test_summarize_with_evaluation_must_be_a_bool(tmp_path):
    """``with_evaluation="no"`` added the exact statistics of ``evaluation.json``."""
    RUNS["pfs2"]().save(tmp_path / "rel")
    with pytest.raises(InvalidParameter, match="^with_evaluation: expected True or False"):
        dpgpu.report.summarize(tmp_path / "rel", with_evaluation="no")
    assert "evaluation" not in dpgpu.report.summarize(tmp_path / "rel", with_evaluation=False)


def _outputs(release):
    """What a release gives: its frame, its saved files' frame, and its own queries."""
    frame = release.to_pandas()
    out = {"frame": frame.to_dict("list"), "repr": repr(release)}
    if hasattr(release, "estimate"):
        out["estimate"] = [release.estimate(g) for g in (["a"], ["a", "b"], ["b", "a", "&"])]
        out["top_k"] = release.top_k(5)
    if getattr(release, "synthetic", None) is not None:
        out["synthetic"] = list(release.synthetic)
    return out


@pytest.mark.parametrize("mechanism", sorted(RUNS))
@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_releases_pickle_and_copy_to_equal_releases(mechanism, how):
    """Regression: N-gram and PST releases held array modules (in their gram indexes and
    their sampling model), so ``pickle`` and ``copy.deepcopy`` failed."""
    release = RUNS[mechanism]()
    twin = pickle.loads(pickle.dumps(release)) if how == "pickle" else copy.deepcopy(release)
    assert type(twin) is type(release) and twin.report == release.report
    assert _outputs(twin) == _outputs(release)


def test_a_copied_pst_samples_as_the_original():
    release = RUNS["pst"]()
    twin = pickle.loads(pickle.dumps(release))
    key = NoiseKey.from_seed_or_fresh(3)
    assert [a.tolist() for a in twin.model.sample(50, 3, key)] == \
        [a.tolist() for a in release.model.sample(50, 3, key)]


@pytest.mark.parametrize("mechanism, name, sizes", [
    ("ngram", "NGramRelease", r"grams=\d+, synthetic=\d+"),
    ("pst", "PSTRelease", r"nodes=\d+, synthetic=\d+"),
    ("pfs2", "PFS2Release", r"patterns=\d+"),
    ("privtree-spatial", "SpatialRelease", r"leaves=\d+"),
])
def test_releases_show_mechanism_privacy_and_sizes(mechanism, name, sizes, tmp_path):
    """Regression: release objects showed the default ``<... object at 0x...>``."""
    release = RUNS[mechanism]()
    mech = release.report["mechanism"]
    assert re.fullmatch(rf"{name}\({mech}, epsilon=[\d.]+, delta=\d\.\d+e-\d+, seeded=True, "
                        rf"{sizes}\)", repr(release)), repr(release)
    release.save(tmp_path / "rel")
    loaded = repr(dpgpu.load_release(tmp_path / "rel"))
    assert loaded.startswith(f"LoadedRelease({mech}, epsilon={release.report['epsilon']}, "
                             "delta=") and \
        "seeded=True, files=[" in loaded


def test_the_repr_of_a_release_that_is_not_private_says_so():
    release = dpgpu.privtree_spatial(POINTS, 1.0, seed=1)
    assert repr(release).startswith("SpatialRelease(privtree-spatial, NOT private, seeded=True")
    assert "synthetic" not in repr(RUNS["ngram"](synthetic=False))


def test_uniform_grid_without_bounds_is_flagged_not_private():
    """Regression (privacy review F4): UG took the data's bounding box, which its output
    reveals, and only logged a warning; privtree_spatial's report says so."""
    grid = uniform_grid(POINTS, 1.0, n=300, seed=1)
    assert grid.report["private"] is False and grid.report["epsilon"] == np.inf
    assert grid.report["delta"] == 1.0 and "NOT differentially private" in grid.report["warning"]
    assert grid.report["domain"]["from_data"] is True
    public = uniform_grid(POINTS, 1.0, n=300, bounds=[[0, 1], [0, 1]], seed=1)
    assert public.report["private"] is True and public.report["epsilon"] == 1.0
    assert public.report["domain"] == {"bounds": [[0.0, 1.0], [0.0, 1.0]], "from_data": False}
    assert public.report["mechanism"] == "uniform-grid" and "warning" not in public.report



def test_save_force_must_be_a_bool(tmp_path):
    """From a review: save(force="no") replaced an existing release."""
    db = SequenceDB.from_sequences([["a", "b"], ["b"]] * 50, vocab=["a", "b"])
    dpgpu.ngram(db, 1.0, seed=1).save(tmp_path / "rel")
    with pytest.raises(InvalidParameter, match="^force: expected True or False"):
        dpgpu.pst(db, 1.0, seed=2).save(tmp_path / "rel", force="no")
    assert dpgpu.load_release(tmp_path / "rel").report["mechanism"] == "ngram"


def test_dpne_checks_progress_and_shows_its_sizes():
    db = SequenceDB.from_sequences([["a", "b"], ["b"]] * 50, vocab=["a", "b"])
    with pytest.raises(InvalidParameter, match="^progress: "):
        dpgpu.dpne(db, 1.0, 1e-6, progress="yes")
    r = dpgpu.dpne(db, 4.0, 1e-6, max_n=2, seed=1)
    assert repr(r).startswith("DPNERelease(dpne, epsilon=4.0") and f"grams={sum(r.counts())}" \
        in repr(r)
