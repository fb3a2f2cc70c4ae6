"""DPNE and its DPSU baselines over Dask partitions by user: the release is bit-identical to
the local run."""

import numpy as np
import pytest

from dpgpu import SequenceDB
from dpgpu.cli import main
from dpgpu.mechanisms.dpne import dpne
from dpgpu.mechanisms.dpne.baselines import BOUNDING
from dpgpu.privacy import NoiseKey
from dpgpu.scale.partitions import LocalPartitions

distributed = pytest.importorskip("dask.distributed")


def user_db(seed=2, n_users=120, users=True):
    """Texts of a few users; each user writes several texts, interleaved in the rows."""
    rng = np.random.default_rng(seed)
    rows, owner = [], []
    for u in range(n_users):
        for _ in range(rng.integers(1, 5)):
            rows.append([f"w{x}" for x in rng.choice(6, size=rng.integers(2, 14),
                                                    p=[0.3, 0.25, 0.2, 0.12, 0.08, 0.05])])
            owner.append(u)
    order = rng.permutation(len(rows))  # a user's texts are spread over the input
    return SequenceDB.from_sequences([rows[i] for i in order], vocab=[f"w{x}" for x in range(6)],
                                     users=np.asarray(owner)[order] if users else None)


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client


@pytest.mark.parametrize("users", [True, False])
def test_dask_dpne_equals_local(client, users):
    db = user_db(users=users)
    # a small contribution cap makes most users keep a keyed random subset
    kw = dict(max_n=4, contribution=3, seed=13)
    local = dpne(db, 8.0, 1e-5, **kw)
    remote = dpne(db, 8.0, 1e-5, engine="dask", client=client, **kw)
    assert local.counts()[1] > 0  # the test reaches level 2 at least
    assert [g.tolist() for g in remote.levels] == [g.tolist() for g in local.levels]
    assert local.report["engine"] == "local" and remote.report["engine"] == "dask"


@pytest.mark.parametrize("policy", ["weighted", "laplace"])
@pytest.mark.parametrize("method", ["dpsu-all", "dpsu-even", "dpsu-single"])
def test_dask_baselines_equal_local(client, method, policy):
    db = user_db(n_users=300)
    # contribution 2: most users hold more grams and keep a keyed random subset
    kw = dict(max_n=3, contribution=2, seed=13, method=method, policy=policy)
    local = dpne(db, 8.0, 1e-5, **kw)
    remote = dpne(db, 8.0, 1e-5, engine="dask", client=client, **kw)
    assert sum(local.counts()) > 0
    assert [g.tolist() for g in remote.levels] == [g.tolist() for g in local.levels]
    assert local.report["engine"] == "local" and remote.report["engine"] == "dask"
    assert remote.report["ledger"] == local.report["ledger"]
    assert remote.report["calibration"] == local.report["calibration"]


@pytest.mark.parametrize("method", ["dpne", "dpsu-all"])
def test_dask_equals_local_with_a_vocabulary_taken_from_the_data(client, method):
    """Numeric and text labels taken from the data, and one user's token never released:
    both engines give the same release in the same release vocabulary."""
    base = user_db(n_users=200)
    rows = [[x[1:] if x in ("w0", "w2") else x for x in s] for s in base]
    db = SequenceDB.from_sequences(rows + [["secret"]],
                                   users=np.r_[base.users, base.users.max() + 1])
    assert not db.vocab.public and "secret" in db.vocab
    kw = dict(max_n=3, contribution=3, seed=13, method=method)
    local = dpne(db, 8.0, 1e-5, **kw)
    remote = dpne(db, 8.0, 1e-5, engine="dask", client=client, **kw)
    assert local.counts()[1] > 0 and "secret" not in local.vocab
    assert [g.tolist() for g in remote.levels] == [g.tolist() for g in local.levels]
    assert remote.vocab.labels == local.vocab.labels and remote.grams() == local.grams()


def test_baseline_partitions_get_only_the_bounding_key(monkeypatch):
    derived = []
    original = NoiseKey.derive

    def derive(self, label):
        child = original(self, label)
        derived.append((self, label, child))
        return child

    sent = []
    apply = LocalPartitions._apply

    def spy(self, fn, args, per_row):
        sent.extend(a for a in args if isinstance(a, NoiseKey))
        return apply(self, fn, args, per_row)

    monkeypatch.setattr(NoiseKey, "derive", derive)
    monkeypatch.setattr(LocalPartitions, "_apply", spy)
    dpne(user_db(n_users=30), 8.0, 1e-5, max_n=2, contribution=2, seed=1, method="dpsu-even",
         policy="laplace")
    bounding = [child for _, label, child in derived if label == BOUNDING]
    assert len(bounding) == 1 and sent and all(k is bounding[0] for k in sent)


def test_dask_baseline_cli_writes_the_local_release(client, tmp_path):
    data = tmp_path / "d.txt"
    data.write_text("\n".join(" ".join(s) for s in user_db(n_users=60)) + "\n")
    base = ["dpne", str(data), "--epsilon", "8", "--delta", "1e-5", "--max-n", "3",
            "--contribution", "2", "--method", "dpsu-all", "--seed", "5", "-q"]
    assert main(base + ["--out", str(tmp_path / "local")]) == 0
    assert main(base + ["--out", str(tmp_path / "dask"), "--engine", "dask",
                        "--scheduler", client.scheduler.address]) == 0
    local, remote = (tmp_path / d / "ngrams.tsv" for d in ("local", "dask"))
    assert local.read_bytes() == remote.read_bytes() and local.read_text().count("\n") > 1
