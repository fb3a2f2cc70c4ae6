"""User-level text read a block at a time: same sequences, users and errors as record by record.

The readers join a block's texts and tokenize them in one pass; these tests
compare them, with blocks forced tiny, against a brute-force reference that
follows the documented rules character by character.
"""

from __future__ import annotations

import csv
import gc
import io
import json
import logging
import random

import pytest

from dpgpu import InputError
from dpgpu.data import reading, users
from dpgpu.data.sequencedb import sort_labels
from dpgpu.data.users import read_jsonl, read_text_csv, read_text_parquet, tokenize

#: Characters of the random texts: letters with and without case (a capital
#: sigma, whose lower case depends on its neighbours), marks the case mapping
#: skips, digits, every kind of white space and punctuation the rules name,
#: and the characters the readers put between texts.
CHARS = ("abcXYZ_019" "ΣΑσςİßǅ\u0301\u00ad'\u2019-" ".!?,;:\"()" "  \t\n\r\x0b\x0c\x1c\x85\xa0"
         "\u2028\u3000" "\x00\x01" "٣²中😀")
WORD_JOINERS = "'\u2019-"


def brute_tokenize(text: str, lowercase: bool = True) -> list[list[str]]:
    """The documented rules, one character at a time.

    A word is a run of letters, digits and ``_`` (``str.isalnum``), joined
    through single inner apostrophes or hyphens; a sentence ends at white
    space after ``.``, ``!`` or ``?``, or at a line break.
    """
    if lowercase:
        text = text.lower()

    def is_word(k: int) -> bool:
        return k < len(text) and (text[k].isalnum() or text[k] == "_")

    sentences: list[list[str]] = [[]]
    i = 0
    while i < len(text):
        if is_word(i):
            j = i
            while is_word(j) or (j < len(text) and text[j] in WORD_JOINERS and is_word(j + 1)):
                j += 1
            sentences[-1].append(text[i:j])
            i = j
            continue
        if text[i].isspace() and (text[i] in "\r\n" or (i and text[i - 1] in ".!?")):
            sentences.append([])
        i += 1
    return [s for s in sentences if s]


def reference(records: list[tuple[object, str]], lowercase: bool = True) -> dict:
    """What a reader gives for ``(user, text)`` records, built record by record."""
    ids: dict[str, int] = {}
    sequences, owners = [], []
    for user, text in records:
        uid = ids.setdefault(str(user), len(ids))
        for sentence in brute_tokenize(text, lowercase):
            sequences.append(sentence)
            owners.append(uid)
    return {"sequences": sequences, "users": owners, "user_labels": list(ids),
            "vocab": sort_labels({w for s in sequences for w in s})}


def as_read(db) -> dict:
    labels, ids, ends = db.vocab.labels, db.items.tolist(), db.offsets.tolist()
    return {"sequences": [[labels[i] for i in ids[a:b]] for a, b in zip(ends, ends[1:])],
            "users": db.users.tolist(),
            "user_labels": db.source["user_labels"], "vocab": list(labels)}


def random_text(rng: random.Random) -> str:
    return "".join(rng.choice(CHARS) for _ in range(rng.randrange(30)))


def random_records(seed: int, n: int = 60) -> list[tuple[object, str]]:
    rng = random.Random(seed)
    return [(rng.choice(["ann", "Bob", "Σ", 7, " x "]), random_text(rng))
            for _ in range(n)]


def jsonl(records: list[tuple[object, str]], rng: random.Random) -> bytes:
    """JSON lines of the records, some ASCII-escaped, with blank lines between."""
    lines = []
    for user, text in records:
        lines.append(json.dumps({"author": user, "x": 1, "content": text},
                                ensure_ascii=rng.random() < 0.5))
        if rng.random() < 0.1:
            lines.append(rng.choice(["", "  ", "\r", "\u2028"]))
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture(params=[0, 1, 200, None], ids=["line", "byte", "few-lines", "default"])
def block_size(request, monkeypatch):
    """Blocks of one line (or record) each, a few, or the default size."""
    if request.param is not None:
        monkeypatch.setattr(users, "BLOCK_BYTES", request.param)
        monkeypatch.setattr(users, "BLOCK_RECORDS", max(request.param // 40, 1))
    return request.param


def test_brute_force_reference_is_tokenize():
    rng = random.Random(0)
    for _ in range(3000):
        text = random_text(rng)
        for lowercase in (True, False):
            assert tokenize(text, lowercase=lowercase) == brute_tokenize(text, lowercase)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("lowercase", [True, False])
def test_jsonl_in_blocks_is_record_by_record(block_size, seed, lowercase):
    records = random_records(seed)
    data = jsonl(records, random.Random(seed))
    assert as_read(read_jsonl("f.jsonl", data, lowercase=lowercase)) == \
        reference(records, lowercase)


def test_text_with_the_block_separator_reads_as_on_its_own(block_size):
    records = [("a", "x\x00y. \x00"), ("b", "ΑΣ\x00ΑΣ\x00"), ("c", "\x00")] * 3
    data = jsonl(records, random.Random(1))
    assert b"\\u0000" in data
    assert as_read(read_jsonl("f.jsonl", data)) == reference(records)


@pytest.mark.parametrize("seed", range(4))
def test_text_csv_in_blocks_is_record_by_record(block_size, seed):
    rng = random.Random(seed)
    records = [(str(u), t.replace("\x00", "")) for u, t in random_records(seed)]
    out = io.StringIO(newline="")
    writer = csv.writer(out, delimiter=";", lineterminator=rng.choice(["\n", "\r\n"]),
                        quoting=csv.QUOTE_ALL)  # a lone "\r" must be quoted
    writer.writerow(["id", "content", "author"])
    for k, (user, text) in enumerate(records):
        writer.writerow([k, text, user])
        if rng.random() < 0.1:
            out.write(rng.choice(["\n", " ; ;\t\n"]))  # blank rows are skipped
    db = read_text_csv("f.csv", out.getvalue().encode(), delimiter=";")
    assert as_read(db) == reference(records)


@pytest.mark.parametrize("seed", range(3))
def test_text_parquet_in_blocks_is_record_by_record(tmp_path, block_size, seed):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    records = [(str(u), t) for u, t in random_records(seed)]
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"author": [u for u, _ in records],
                             "content": [t for _, t in records]}), path)
    assert as_read(read_text_parquet(path)) == reference(records)


def test_no_words_in_any_block(block_size):
    data = b'{"author": "a", "content": "..."}\n{"author": "b", "content": ""}\n'
    with pytest.raises(InputError, match="f.jsonl: no words"):
        read_jsonl("f.jsonl", data)
    db = read_jsonl("f.jsonl", data, allow_empty=True)
    assert len(db) == 0 and db.source["user_labels"] == ["a", "b"] and db.vocab.labels == []


def numbered_lines(n: int, bad: dict[int, str]) -> bytes:
    """``n`` JSON lines (from 1), line ``k`` replaced by ``bad[k]``."""
    return "".join(bad.get(k, json.dumps({"author": f"u{k}", "content": f"w{k} x."})) + "\n"
                   for k in range(1, n + 1)).encode()


@pytest.mark.parametrize("line", [1, 2, 5, 9, 10])
def test_jsonl_error_names_its_line_at_any_block_boundary(block_size, line):
    data = numbered_lines(10, {line: '{"author": "a", "content": '})
    with pytest.raises(InputError, match=rf"^f.jsonl: line {line}: not valid JSON"):
        read_jsonl("f.jsonl", data)


def test_jsonl_malformed_line_anywhere_wins_over_an_earlier_bad_type(block_size):
    data = numbered_lines(12, {2: '{"author": "a", "content": 5}',
                               11: '{"author": "a"}'})
    with pytest.raises(InputError, match=r"^f.jsonl: line 11: no field 'content'$"):
        read_jsonl("f.jsonl", data)


def test_jsonl_first_bad_type_wins(block_size):
    data = numbered_lines(12, {3: '{"author": "a", "content": ["x"]}',
                               8: '{"author": null, "content": "x"}'})
    with pytest.raises(InputError, match=r"^f.jsonl: line 3: 'content' must be a string, "
                                         r"got list$"):
        read_jsonl("f.jsonl", data)
    data = numbered_lines(12, {8: '{"author": {}, "content": 1}'})
    with pytest.raises(InputError, match=r"^f.jsonl: line 8: 'author' must be a string or "
                                         r"a whole number, got dict$"):
        read_jsonl("f.jsonl", data)


def test_jsonl_bad_utf8_anywhere_is_reported_first(block_size):
    data = numbered_lines(6, {2: "[1]"}) + b'{"author": "a", "content": "\xff"}\n'
    with pytest.raises(InputError, match=r"^f.jsonl: line 7: not UTF-8 text"):
        read_jsonl("f.jsonl", data)


def test_text_csv_short_row_names_the_line_it_ends_on(block_size):
    data = 'author,content\nann,"a\nb"\n\nbob,"c\r\nd"\ncid\nann,x\n'.encode()
    with pytest.raises(InputError, match=r"^f.csv: line 7: 1 fields, but the header has 2$"):
        read_text_csv("f.csv", data)


def test_text_parquet_bad_row_in_a_later_block(tmp_path, block_size):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"author": ["a"] * 6 + [None] + ["b"] * 3,
                             "content": ["x y"] * 10}), path)
    with pytest.raises(InputError, match=r"t.parquet: row 7: 'author' must be a string"):
        read_text_parquet(path)


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("body", [numbered_lines(30, {}), numbered_lines(30, {25: "[]"})])
def test_garbage_collector_left_as_it_was(monkeypatch, enabled, body):
    monkeypatch.setattr(users, "BLOCK_BYTES", 100)
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        try:
            read_jsonl("f.jsonl", body)
        except InputError:
            pass
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def progress_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "% read" in r.getMessage()]


def test_long_reads_log_their_progress(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(reading, "PROGRESS_SECONDS", -1.0)  # every block is due
    monkeypatch.setattr(users, "BLOCK_BYTES", 400)
    monkeypatch.setattr(users, "BLOCK_RECORDS", 10)
    caplog.set_level(logging.INFO, logger="dpgpu")
    data = numbered_lines(100, {})
    read_jsonl("f.jsonl", data)
    lines = progress_lines(caplog)
    assert len(lines) > 5 and lines[-1] == "f.jsonl: 100% read (line 100)"
    percents = [int(x.split(": ")[1].split("%")[0]) for x in lines]
    assert percents == sorted(percents) and percents[0] < 50

    caplog.clear()
    rows = "".join(f"u{k},w{k}\n" for k in range(35))
    read_text_csv("f.csv", f"author,content\n{rows}".encode())
    assert [x.split("(")[1] for x in progress_lines(caplog)] == ["line 11)", "line 21)",
                                                                 "line 31)"]


def test_short_reads_log_no_progress(monkeypatch, caplog):
    monkeypatch.setattr(users, "BLOCK_BYTES", 0)
    caplog.set_level(logging.INFO, logger="dpgpu")
    read_jsonl("f.jsonl", numbered_lines(50, {}))
    assert progress_lines(caplog) == []
