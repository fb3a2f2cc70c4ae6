"""The naive Python baseline every gram benchmark compares against."""

from __future__ import annotations

import time
from collections import Counter


def naive_grams(rows: list[list[int]], n_max: int, l_max: int) -> list[Counter]:
    """Count n-grams (n <= n_max) of each row's first l_max items with a Counter, one by one."""
    out = []
    for n in range(1, n_max + 1):
        c = Counter()
        for row in rows:
            row = row[:l_max]
            for i in range(len(row) - n + 1):
                c[tuple(row[i:i + n])] += 1
        out.append(c)
    return out


def naive_seconds(db, n_max: int = 5, l_max: int = 20) -> float:
    """Seconds :func:`naive_grams` takes on a SequenceDB (rows listed beforehand)."""
    rows = [db.sequence_ids(i)[:l_max].tolist() for i in range(len(db))]
    t0 = time.perf_counter()
    naive_grams(rows, n_max, l_max)
    return time.perf_counter() - t0
