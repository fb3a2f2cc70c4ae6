"""The partition layer of the engines (no cluster needed): splits, local calls, errors."""

import sys

import numpy as np
import pytest

from dpgpu import InvalidParameter, SequenceDB
from dpgpu.mechanisms.dpne import dpne
from dpgpu.mechanisms.pfs2 import pfs2
from dpgpu.mechanisms.privtree import pst
from dpgpu.scale.partitions import LocalPartitions, part_of, partition, split_rows


def db_of(n=50, users=None):
    rows = [["a", "b"][: 1 + i % 2] for i in range(n)]
    return SequenceDB.from_sequences(rows, vocab=["a", "b"], users=users)


def test_split_rows_keeps_each_user_in_one_partition():
    rng = np.random.default_rng(0)
    users = rng.integers(0, 17, 200)
    parts = split_rows(db_of(200, users), 4, by_user=True)
    assert 2 <= len(parts) <= 4 and all(p.size for p in parts)
    assert sorted(np.concatenate(parts).tolist()) == list(range(200))
    owners = [set(users[p].tolist()) for p in parts]
    assert sum(len(o) for o in owners) == len(set().union(*owners)) == 17


def test_split_rows_without_users_is_contiguous_and_balanced():
    parts = split_rows(db_of(10), 3)
    assert [p.tolist() for p in parts] == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    assert [p.tolist() for p in split_rows(db_of(2), 5)] == [[0], [1]]
    assert [p.tolist() for p in split_rows(db_of(0), 3)] == [[]]


def test_part_of_keeps_global_user_identities():
    db = db_of(6)
    part = part_of(db, np.array([4, 1]), by_user=True)
    assert part.users.tolist() == [4, 1] and part.lengths.tolist() == [1, 2]
    assert part_of(db, np.array([4, 1])).users is None


def test_local_partitions_run_inline_with_per_row_arguments():
    parts = partition(db_of(4))
    assert isinstance(parts, LocalPartitions) and len(parts) == 1
    doubled = parts.map(lambda db, k, w: w * k, 2, per_row=(np.arange(4),))
    assert doubled.gather(lambda s: s.tolist()) == [[0, 2, 4, 6]]
    assert doubled.sum(lambda s: s + 1).tolist() == [1, 3, 5, 7]


@pytest.mark.parametrize("release", [
    lambda db, **kw: pst(db, 1.0, **kw),
    lambda db, **kw: pfs2(db, 1.0, 0.1, **kw),
    lambda db, **kw: dpne(db, 1.0, 1e-6, **kw),
])
def test_engine_is_validated_and_dask_is_optional(release, monkeypatch):
    with pytest.raises(InvalidParameter, match="engine: must be one of local, dask"):
        release(db_of(), engine="spark")
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # as if not installed
    with pytest.raises(InvalidParameter, match=r"pip install dpgpu\[dist\]"):
        release(db_of(), engine="dask")
