"""Numeric timestamps order events by their exact decimal values, whatever else the file holds.

A privacy fix: the order of two events of a case must depend on their own
two timestamps only.  The readers once parsed every numeric timestamp as
float64 as soon as one value of the file was not an integer (or did not fit
int64): integer timestamps above 2**53 (nanoseconds since 1970, .NET ticks,
``yyyymmddhhmmssfff``) were then rounded, events of *other* people closer
than the rounding tied and fell back to file order, so that one added record
(``...999.5``, ``1e3``) reordered many other people's sequences, and a
release of the file and of the file with that record differed.  Now every
value is ordered by its exact decimal value: two values tie only when they
are equal numbers (``0.1`` and ``0.10000000000000001`` do not tie; ``1``,
``1.0``, ``1e0`` and ``+1`` do).

Expected orders are written by hand or computed with :class:`fractions.Fraction`,
never by the code under test.
"""

from __future__ import annotations

import io
import random
from fractions import Fraction

import numpy as np
import pytest

import dpgpu
from dpgpu.data import eventlog
from dpgpu.data.eventlog import (BadValue, _ChunkedTimes, _numeric_keys, parse_times,
                                 read_csv_log, read_parquet_log)

T0 = 1_700_000_000_000_000_000  # nanoseconds since 1970: well above 2**53


def sequences(db) -> dict[str, tuple[str, ...]]:
    """Each case's activities, by case name."""
    labels = db.vocab.labels
    return {name: tuple(labels[i] for i in db.items[lo:hi])
            for name, lo, hi in zip(db.source["cases"], db.offsets[:-1].tolist(),
                                    db.offsets[1:].tolist())}


def neighbour_logs(extra_stamp: str, n_cases: int = 50) -> tuple[str, str]:
    """A log of ``n_cases`` cases, each ``a`` at ``t`` and ``b`` at ``t + 1`` nanoseconds,
    written ``b`` first; and the same log with one more case holding ``extra_stamp``."""
    rows = ["case,activity,timestamp"]
    for k in range(n_cases):
        t = T0 + 1000 * k
        rows += [f"p{k},b,{t + 1}", f"p{k},a,{t}"]
    base = "\n".join(rows) + "\n"
    return base, base + f"extra,a,{extra_stamp}\nextra,b,{T0}\n"


def assert_neighbours_agree(one, other, n_cases: int = 50) -> None:
    """Every case of ``one`` is read alike in ``other`` and in time order (``a`` first)."""
    mine, theirs = sequences(one), sequences(other)
    assert len(mine) == n_cases
    for name, seq in mine.items():
        assert seq == ("a", "b"), name
        assert theirs[name] == seq, name


# ----------------------------------------------------------- the reproduction
@pytest.mark.parametrize("extra", [f"{T0 + 999}.5", "1e3", "99999999999999999999999",
                                   f"{T0}.000000000000000000000000000000000000000001"])
@pytest.mark.parametrize("arrow", [False, True])
def test_one_added_record_reorders_no_other_case_csv(extra, arrow):
    base, added = neighbour_logs(extra)
    with pytest.MonkeyPatch.context() as mp:
        if arrow:
            pytest.importorskip("pyarrow.csv")
            mp.setattr(eventlog, "_ARROW_MIN_BYTES", 0)
            mp.setattr(eventlog, "_ARROW_BLOCK_BYTES", 256)  # many blocks
        else:
            mp.setattr(eventlog, "_arrow_csv", lambda: None)
            mp.setattr(eventlog, "_BLOCK_ROWS", 7)
        d = read_csv_log("d.csv", base.encode())
        d_prime = read_csv_log("d2.csv", added.encode())
    assert_neighbours_agree(d, d_prime)
    assert sequences(d_prime)["extra"] == (("b", "a") if Fraction(extra) > T0 else ("a", "b"))


@pytest.mark.parametrize("extra", [f"{T0 + 999}.5", "1e3"])
def test_one_added_record_reorders_no_other_case_parquet(extra):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")

    def parquet(text: str) -> bytes:
        rows = [line.split(",") for line in text.splitlines()[1:]]
        table = pa.table({name: [row[k] for row in rows]
                          for k, name in enumerate(["case", "activity", "timestamp"])})
        out = io.BytesIO()
        pq.write_table(table, out, row_group_size=9)
        return out.getvalue()

    base, added = neighbour_logs(extra)
    d = read_parquet_log("d.parquet", parquet(base))
    d_prime = read_parquet_log("d2.parquet", parquet(added))
    assert_neighbours_agree(d, d_prime)


def test_one_added_record_reorders_no_other_trajectory(tmp_path):
    # the grid is public, so a trajectory release is marked private without --vocab
    rows = ["id,x,y,time"]
    for k in range(50):
        t = T0 + 1000 * k
        rows += [f"p{k},1,1,{t + 1}", f"p{k},0,0,{t}"]  # cell 1_1 later, written first
    base = "\n".join(rows) + "\n"
    added = base + f"extra,0,0,{T0 + 7}.5\n"
    options = dict(grid="2x2", bounds=[0, 2, 0, 2], repeats="keep")
    (tmp_path / "d.csv").write_text(base)
    (tmp_path / "d2.csv").write_text(added)
    d = dpgpu.load(tmp_path / "d.csv", "trajectory", **options)
    d_prime = dpgpu.load(tmp_path / "d2.csv", "trajectory", **options)
    mine, theirs = sequences(d), sequences(d_prime)
    assert len(mine) == 50
    for name, seq in mine.items():
        assert seq == ("0_0", "1_1"), name
        assert theirs[name] == seq, name


# -------------------------------------------------------------- exact order
def order_of(values: list[str]) -> list[int]:
    """Indices of ``values`` by exact value, ties in given order (the expected order)."""
    return sorted(range(len(values)), key=lambda i: (Fraction(values[i].strip()), i))


def assert_keys_order(values: list[str]) -> None:
    keys, kind = parse_times(np.array(values, dtype=str))
    assert kind == "numeric"
    assert np.argsort(keys, kind="stable").tolist() == order_of(values)
    exact = [Fraction(v.strip()) for v in values]
    for i in range(len(values)):  # ties exactly where the values are equal
        for j in range(len(values)):
            assert bool(keys[i] == keys[j]) is (exact[i] == exact[j]), (values[i], values[j])


def test_large_integers_mixed_with_one_fraction_order_exactly():
    values = [str(T0 + d) for d in (5, 3, 4, 1, 2, 0, 3)] + ["0.5"]
    assert_keys_order(values)
    values = [str(T0 + d) for d in (5, 3, 4, 1, 2, 0, 3)] + [f"{T0 + 3}.5", "1e3", f"{T0}.0"]
    assert_keys_order(values)


def test_fractions_order_by_exact_decimal_value():
    # 0.1 and 0.10000000000000001 are one float64, but two numbers: they do not tie
    assert_keys_order(["0.10000000000000001", "0.1", "0.1000000000000000000000000000000000001",
                       "0.10", "1e-1", ".1", "+0.1", "0.09999999999999999"])


def test_integers_beyond_int64_order_exactly():
    big = 2 ** 63
    values = [str(big + 1), str(big), str(big - 1), str(-big), str(-big - 1),
              "20240101120000123457", "20240101120000123456", "0"]
    assert_keys_order(values)


def test_equal_numbers_tie_and_keep_file_order():
    values = ["1", "1.0", "1e0", "+1", " 1 ", "1.000000000000000000000000000000000000000000",
              "0.1e1", "10e-1", "-0", "0", "-0.0", "0e5", "1_0", "10"]
    assert_keys_order(values)


def test_negative_and_exponent_forms_order_exactly():
    values = ["-1.5", "-1.25", "-1", "-0.5", "-0.0000000000000000000001", "0", "1e-22",
              "-1e-22", "-2e3", "-1999.99999999999999999999999", "-1999", "1e300", "-1e300",
              "1e-300", "-1e-300", "123456789012345678901234567890.123456789",
              "-123456789012345678901234567890.123456789", "\u0661\u0662.5", "12.5",
              "1_000.25", "1000.25", "7.", "-.5", "+.75"]
    assert_keys_order(values)


def test_many_random_values_order_exactly():
    rng = random.Random(7)
    forms = []
    for _ in range(3000):
        kind = rng.randrange(6)
        if kind == 0:
            v = str(rng.randrange(-10 ** 20, 10 ** 20))
        elif kind == 1:
            v = f"{rng.randrange(-10 ** 19, 10 ** 19)}.{rng.randrange(10 ** 25):025d}"
        elif kind == 2:
            v = f"{rng.choice('+-')}{rng.randrange(100)}.{rng.randrange(10 ** 45)}"
        elif kind == 3:
            v = f"{rng.randrange(1, 1000)}e{rng.randrange(-30, 30)}"
        elif kind == 4:
            v = str(rng.uniform(-1e6, 1e6))
        else:
            v = str(rng.randrange(-5, 5))
        forms.append(v)
    forms += forms[:300]  # repeated values
    rng.shuffle(forms)
    values = np.array(forms, dtype=str)
    keys = _numeric_keys(values)
    assert np.argsort(keys, kind="stable").tolist() == order_of(forms)
    # read a chunk at a time, each its distinct values: the same order
    times = _ChunkedTimes()
    for lo in range(0, len(forms), 97):
        times.add(forms[lo:lo + 97])
    chunked, kind = times.result()
    assert kind == "numeric"
    assert np.argsort(chunked, kind="stable").tolist() == order_of(forms)


def test_vectorized_and_one_at_a_time_readings_agree(monkeypatch):
    """Plain numbers are read vectorized (in slices), others one at a time: the same keys."""
    rng = random.Random(11)
    forms = []
    for _ in range(2000):
        sign = rng.choice(["", "-", "+"])
        mantissa = rng.choice([str(rng.randrange(10 ** rng.randrange(1, 40))),
                               f"{rng.randrange(10 ** 20)}.{rng.randrange(10 ** 20)}",
                               f".{rng.randrange(10 ** 5)}", f"{rng.randrange(99)}.",
                               "0" * rng.randrange(45) + str(rng.randrange(9))])
        power = rng.choice(["", "", f"e{rng.randrange(-45, 45)}", f"E+{rng.randrange(40)}",
                            f"e-{rng.randrange(10 ** 4):04d}"])
        space = rng.choice(["", " ", "\t", "\n"])
        forms.append(f"{space}{sign}{mantissa}{power}{space}")
    values = np.array(forms, dtype=str)
    vectorized = _numeric_keys(values)
    assert np.argsort(vectorized, kind="stable").tolist() == order_of(forms)
    monkeypatch.setattr(eventlog, "_PLAIN_CHARS", 0)  # every value read by itself
    assert _numeric_keys(values).tolist() == vectorized.tolist()
    monkeypatch.setattr(eventlog, "_PLAIN_CHARS", 30)  # some of each
    monkeypatch.setattr(eventlog, "_PLAIN_ROWS", 13)
    assert _numeric_keys(values).tolist() == vectorized.tolist()


def test_integer_files_keep_their_numbers():
    keys, kind = parse_times(np.array(["3", "-4", " 12 ", "+7", str(2 ** 63 - 1)]))
    assert keys.dtype == np.int64 and kind == "numeric"
    assert keys.tolist() == [3, -4, 12, 7, 2 ** 63 - 1]


def test_keys_are_scaled_numbers_where_int64_holds_them_else_ranks():
    keys = _numeric_keys(np.array(["1.5", "-2.25", "3", "-0.0", "1e-2"]))
    assert keys.dtype == np.int64 and keys.tolist() == [150, -225, 300, 0, 1]
    keys = _numeric_keys(np.array([str(T0 + 1), f"{T0}.5", str(T0), "-1"]))
    assert keys.dtype == np.int64 and keys.tolist() == [3, 2, 1, 0]


def test_chunks_of_integers_then_fractions_order_exactly():
    times = _ChunkedTimes()
    times.add([str(T0 + 2), str(T0 + 1)])
    times.add([str(T0 + 3), "0.5"])
    times.add([str(T0)])
    keys, kind = times.result()
    assert kind == "numeric"
    assert np.argsort(keys, kind="stable").tolist() == [3, 4, 1, 0, 2]


@pytest.mark.parametrize("bad, index", [(["1", "2.5", "nan"], 2), (["1e400", "1"], 0),
                                        (["1.5", "x", "inf"], 1), (["1", "", "2"], 1),
                                        (["1.5", "1__0"], 1), (["-inf", "0.5"], 0)])
def test_bad_numbers_are_still_refused(bad, index):
    with pytest.raises(BadValue) as info:
        _numeric_keys(np.array(bad, dtype=str))
    assert info.value.index == index
    times = _ChunkedTimes()
    times.add(["0.25"])
    times.add(bad)
    with pytest.raises(BadValue) as info:
        times.result()
    assert info.value.index == 1 + index


def test_a_long_number_among_many_orders_exactly():
    long = "5." + "0" * 3000 + "1"  # beyond the fixed-width keys: compared exactly
    values = [str(k) for k in range(10)] + [long, "5.5", "5", long, "5." + "0" * 3001]
    assert_keys_order(values)


# ------------------------------------------------------------------- ISO dates
def test_iso_sub_microsecond_digits_agree_on_both_parsing_paths(tmp_path):
    """ISO dates order at microsecond resolution, NumPy's path and datetime's alike: a value
    NumPy cannot read (which sends every value to datetime) reorders no other case."""
    rows = ["case,activity,timestamp"]
    for k in range(20):
        rows += [f"p{k},b,2021-03-01T10:00:{k:02d}.1234569Z",
                 f"p{k},a,2021-03-01T10:00:{k:02d}.1234561Z",
                 f"p{k},c,2021-03-01T10:00:{k:02d}.123457Z"]
    base = "\n".join(rows) + "\n"
    added = base + "extra,a,2021-03-01T12:00:00+0200\n"  # NumPy cannot read +0200
    d = read_csv_log("d.csv", base.encode())
    d_prime = read_csv_log("d2.csv", added.encode())
    mine, theirs = sequences(d), sequences(d_prime)
    for name, seq in mine.items():
        assert seq == ("b", "a", "c"), name  # .1234569 and .1234561 tie: file order
        assert theirs[name] == seq, name
