"""Parquet event logs over many row groups, against a brute-force grouping.

The reader encodes each column with Arrow (distinct values numbered in order
of first appearance) instead of making one string per row; these tests check
the result against plain Python on logs split into many row groups, with
dictionary-typed, integer and string columns.
"""

from __future__ import annotations

import random
from datetime import datetime, timezone

import pytest

from dpgpu import InputError
from dpgpu.data.eventlog import read_parquet_log

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def brute_force(cases: list, activities: list, stamps: list | None, users: list | None):
    """Cases in order of first appearance, each its activities sorted stably by time."""
    order: dict[str, list[int]] = {}
    for i, case in enumerate(cases):
        order.setdefault(str(case), []).append(i)
    sequences, owners = {}, {}
    for case, rows in order.items():
        if stamps is not None:
            rows = sorted(rows, key=lambda i: stamps[i])
        sequences[case] = tuple(str(activities[i]) for i in rows)
        if users is not None:
            owners[case] = str(users[rows[0]])
    return sequences, owners


def random_log(rng: random.Random, n: int) -> dict:
    cases = [rng.choice(["c1", "c2", "c3", "case 4", "é5", "6"]) for _ in range(n)]
    user_of = {c: rng.choice(["u1", "u2"]) for c in set(cases)}
    return {"case": cases,
            "activity": [rng.choice(["a", "b", "c", "d e", "10", "9"]) for _ in range(n)],
            "stamp": [rng.randint(0, 50) for _ in range(n)],
            "user": [user_of[c] for c in cases]}


@pytest.mark.parametrize("seed", range(12))
def test_parquet_log_equals_brute_force_across_row_groups(tmp_path, seed):
    rng = random.Random(seed)
    log = random_log(rng, rng.randint(1, 200))
    stamp_kind = ["typed", "iso", "number", "none"][seed % 4]
    columns = {"case": pa.array(log["case"]), "activity": pa.array(log["activity"]),
               "user": pa.array(log["user"])}
    if seed % 3 == 0:  # dictionary-typed columns, as pandas categories are written
        columns["activity"] = columns["activity"].dictionary_encode()
        columns["case"] = columns["case"].dictionary_encode()
    if stamp_kind == "typed":
        columns["ts"] = pa.array(log["stamp"], pa.timestamp("s"))
    elif stamp_kind == "iso":
        columns["ts"] = pa.array([datetime.fromtimestamp(86400 * s, timezone.utc).isoformat()
                                  for s in log["stamp"]])
    elif stamp_kind == "number":
        columns["ts"] = pa.array([str(s) for s in log["stamp"]])
    path = tmp_path / "log.parquet"
    pq.write_table(pa.table(columns), path, row_group_size=rng.choice([1, 3, 17]))
    options = {"timestamp": None if stamp_kind == "none" else "ts"}
    db = read_parquet_log(path, case="case", activity="activity", user="user", **options)
    want, owners = brute_force(log["case"], log["activity"],
                               None if stamp_kind == "none" else log["stamp"], log["user"])
    assert db.source["cases"] == list(want)
    assert list(db) == list(want.values())
    users = db.source["user_labels"]
    assert [users[u] for u in db.users.tolist()] == list(owners.values())


def test_parquet_integer_case_ids_are_read_as_their_text(tmp_path):
    path = tmp_path / "ints.parquet"
    pq.write_table(pa.table({"case:concept:name": [7, 3, 7], "concept:name": [1, 2, 3]}),
                   path, row_group_size=1)
    db = read_parquet_log(path)
    assert db.source["cases"] == ["7", "3"]
    assert list(db) == [("1", "3"), ("2",)]


def test_parquet_first_bad_timestamp_is_named_across_row_groups(tmp_path):
    stamps = ["1", "2", "3", "later", "4", "soon", "later"]
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"case": ["c"] * 7, "activity": ["a"] * 7, "timestamp": stamps}),
                   path, row_group_size=2)
    with pytest.raises(InputError, match=r"row 4: column 'timestamp'.*'later'"):
        read_parquet_log(path)


def test_parquet_empty_activity_is_named_at_its_first_row(tmp_path):
    path = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"case": ["c", "c", "d", "d"], "activity": ["a", "b", " ", "b"]}),
                   path, row_group_size=1)
    with pytest.raises(InputError, match=r"row 3: empty activity"):
        read_parquet_log(path)
