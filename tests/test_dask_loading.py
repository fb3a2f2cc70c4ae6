"""Reading a file on the Dask workers: the same database as ``dpgpu.load``, the same releases."""

import codecs
import gzip
import json
import logging

import numpy as np
import pytest

import dpgpu
from dpgpu import InputError, InvalidParameter
from dpgpu.mechanisms.dpne import dpne
from dpgpu.mechanisms.ngram import ngram
from dpgpu.mechanisms.pfs2 import pfs2
from dpgpu.mechanisms.privtree import pst

distributed = pytest.importorskip("dask.distributed")
from dpgpu.scale import loading  # noqa: E402 - needs dask
from dpgpu.scale.loading import DistributedDB, load_distributed  # noqa: E402 - needs dask


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client


def assert_same(got, want):
    assert got.items.tolist() == want.items.tolist()
    assert got.offsets.tolist() == want.offsets.tolist()
    assert got.vocab.labels == want.vocab.labels and got.vocab.names == want.vocab.names
    assert got.source == want.source
    assert (got.users is None) == (want.users is None)
    if want.users is not None:
        assert got.users.tolist() == want.users.tolist()


def rng_rows(seed, n, items=7, hi=9):
    rng = np.random.default_rng(seed)
    return [rng.integers(1, items + 1, rng.integers(1, hi)).tolist() for _ in range(n)]


def seq_text(rows):
    header = ("% Different categories found in input file:\n\n"
              + " ".join(f"cat{i}" for i in range(1, 8)) + "\n\n% Sequences:\n\n")
    return header + "".join(" ".join(map(str, r)) + " \n" for r in rows)


def spmf_text(rows):
    """Terminated SPMF, one sequence per line, with item names, comments and blank lines."""
    out = ["@CONVERTED_FROM_TEXT\n", "@ITEM=3=three\n"]
    for i, r in enumerate(rows):
        if i % 5 == 0:
            out.append("# checkpoint -2\n" if i % 2 else "\n")
        out.append(" -1 ".join(map(str, r)) + " -1 -2\n")
    return "".join(out)


def jsonl_text(seed, n):
    rng = np.random.default_rng(seed)
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta"]
    lines = []
    for i in range(n):
        sentences = [" ".join(rng.choice(words, rng.integers(1, 6))) for _ in range(2)]
        lines.append(json.dumps({"author": f"u{rng.integers(0, n // 3)}",
                                 "content": ". ".join(sentences)}))
        if i % 17 == 0:
            lines.append("")
    return "\n".join(lines) + "\n"


FILES = {
    "data.seq": lambda: seq_text(rng_rows(1, 400)),
    "data.spmf": lambda: spmf_text(rng_rows(2, 300)),
    "stripped.txt": lambda: "".join(" ".join(map(str, r)) + "\n" for r in rng_rows(3, 300)),
    "ints.txt": lambda: "\n".join(" ".join(map(str, r)) for r in rng_rows(4, 300)) + "\n\n3",
    "words.txt": lambda: "".join(" ".join(f"w{x}" for x in r) + "\n" for r in rng_rows(5, 300)),
    # integers everywhere but in one line near the end: the whole file has string tokens
    "mixed.txt": lambda: "".join(" ".join(map(str, r)) + "\n" for r in rng_rows(6, 300))
                         + "007 x\n" + "7 7\n" * 5,
    "texts.jsonl": lambda: jsonl_text(7, 200),
    "log.csv": lambda: "case,activity,timestamp\n" + "".join(
        f"c{i % 40},a{i % 6},2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}\n" for i in range(500)),
}


@pytest.mark.parametrize("name", list(FILES))
@pytest.mark.parametrize("parts", [1, 3, 7])
def test_same_database_as_a_local_load(client, tmp_path, name, parts):
    path = tmp_path / name
    path.write_text(FILES[name]())
    before = path.read_bytes()
    db = load_distributed(path, client, partitions=parts)
    assert isinstance(db, DistributedDB)
    local = dpgpu.load(path)
    assert len(db) == len(local)
    assert_same(db.collect(), local)
    assert path.read_bytes() == before  # inputs are only read
    if name not in ("log.csv",):  # one worker reads the event log whole, then cuts it
        assert len(db.states) == parts or parts > 1 and len(db.states) > 1


def test_gzip_is_read_whole_and_cut(client, tmp_path):
    path = tmp_path / "data.seq.gz"
    path.write_bytes(gzip.compress(seq_text(rng_rows(8, 100)).encode()))
    db = load_distributed(path, client, partitions=4)
    assert len(db.states) == 4
    assert_same(db.collect(), dpgpu.load(path))


def test_cut_points_never_split_a_terminated_sequence(tmp_path):
    from dpgpu.scale.loading import _cut_points  # noqa: PLC0415

    path = tmp_path / "long.spmf"
    path.write_text("1 -1\n2 -1\n3 -1 -2\n" * 50 + "4 -1 -2\n")
    data = path.read_bytes()
    cuts = _cut_points(path, 0, len(data), 9, terminated=True)
    assert cuts[0] == 0 and cuts[-1] == len(data) and len(cuts) > 3
    assert all(data[:c].endswith(b"-2\n") for c in cuts[1:])


@pytest.mark.parametrize("name, bad", [("data.seq", "9"), ("data.spmf", "1.5 -2"),
                                       ("texts.jsonl", "{not json")])
def test_a_bad_line_is_named_by_its_line_in_the_file(client, tmp_path, name, bad):
    lines = FILES[name]().splitlines(keepends=True)
    lines.insert(len(lines) - 3, bad + "\n")  # in the last part
    path = tmp_path / name
    path.write_text("".join(lines))
    with pytest.raises(InputError) as local:
        dpgpu.load(path)
    with pytest.raises(InputError) as remote:
        load_distributed(path, client, partitions=4)
    assert str(remote.value) == str(local.value)
    assert f"line {len(lines) - 3}:" in str(remote.value)


def test_missing_empty_and_bad_arguments(client, tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_distributed(tmp_path / "nope.seq", client)
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(InputError, match="empty file"):
        load_distributed(tmp_path / "empty.txt", client)
    (tmp_path / "a.txt").write_text("1 2\n")
    with pytest.raises(InvalidParameter, match="format"):
        load_distributed(tmp_path / "a.txt", client, format="fasta")
    with pytest.raises(InvalidParameter, match="delimiter"):
        load_distributed(tmp_path / "a.txt", client, delimiter=",")
    with pytest.raises(InvalidParameter, match="partitions"):
        load_distributed(tmp_path / "a.txt", client, partitions=0)


def test_by_user_partitions_hold_whole_users_and_their_rows(client, tmp_path):
    path = tmp_path / "texts.jsonl"
    path.write_text(jsonl_text(9, 300))
    local = dpgpu.load(path)
    parts = load_distributed(path, client, partitions=4).partitions(by_user=True)
    dbs = client.gather(parts.states)
    owners = [set(db.users.tolist()) for db in dbs]
    assert sum(map(len, owners)) == len(set().union(*owners)) == len(set(local.users.tolist()))
    for db, rows in zip(dbs, parts.rows):
        want = local.select(rows)
        assert db.items.tolist() == want.items.tolist()
        assert db.offsets.tolist() == want.offsets.tolist()
        assert db.users.tolist() == want.users.tolist()


def test_local_engine_is_refused(client, tmp_path):
    path = tmp_path / "data.seq"
    path.write_text(FILES["data.seq"]())
    db = load_distributed(path, client)
    with pytest.raises(InvalidParameter, match="engine: the data were read on Dask workers"):
        ngram(db, 1.0)


RELEASES = {
    "ngram": (lambda db, **kw: ngram(db, 2.0, l_max=10, n_max=3, seed=3, **kw),
              lambda r: (r.ngrams(), list(r.synthetic))),
    "pst": (lambda db, **kw: pst(db, 2.0, l_top=8, seed=3, **kw),
            lambda r: (r.nodes(), list(r.synthetic))),
    "pfs2": (lambda db, **kw: pfs2(db, 2.0, 0.1, l_upper=8, seed=3, **kw),
             lambda r: (r.patterns, r.supports.tolist(), r.report["pre_mining"])),
}


@pytest.mark.parametrize("mechanism", list(RELEASES))
def test_releases_equal_the_local_ones(client, tmp_path, mechanism):
    path = tmp_path / "data.seq"
    path.write_text(FILES["data.seq"]())
    release, view = RELEASES[mechanism]
    local = release(dpgpu.load(path))
    remote = release(load_distributed(path, client, partitions=3), engine="dask")
    assert view(remote) == view(local)
    assert remote.report["input"] == local.report["input"]


def test_dpne_release_equals_the_local_one(client, tmp_path):
    path = tmp_path / "texts.jsonl"
    path.write_text(jsonl_text(10, 400))
    kw = dict(max_n=3, contribution=2, seed=5)
    local = dpne(dpgpu.load(path), 8.0, 1e-5, **kw)
    remote = dpne(load_distributed(path, client, partitions=3), 8.0, 1e-5, engine="dask", **kw)
    assert sum(local.counts()) > 0
    assert [g.tolist() for g in remote.levels] == [g.tolist() for g in local.levels]


def header_ending_at(end):
    """A UCI header naming three categories whose '% Sequences:' ends at byte ``end``."""
    head, tail = b"% Different categories found in input file:\n\n", b" d e\n\n% Sequences:"
    return head + b"c" * (end - len(head) - len(tail)) + tail


HEADER = b"% Different categories found in input file:\n\na b c\n\n% Sequences:\n\n"
EDGES = {  # name: (bytes, load options, partitions); found by review
    "long-header.seq": (b"% Different categories found in input file:\n\n"
                        + b" ".join(b"c%d" % i for i in range(12000))
                        + b"\n\n% Sequences:\n\n1 2\n3\n" * 1, {}, 2),
    "long-metadata.spmf": (b"".join(b"@ITEM=%d=word%d\n" % (i, i) for i in range(5000))
                           + b"1 -1 2 -1 -2\n3 -1 -2\n" * 20, {"format": "spmf"}, 3),
    "trailing-blank.spmf": (b"1 -1 -2\n" * 10 + b"\n\n\n", {}, 20),
    "comment-ending-in-2.spmf": (b"1 -1 2 -1 -2\n# checkpoint -2\n3 -1 -2\n" * 40, {}, 2),
    "blank-head.txt": (b"\n" * 70000 + b"1 2 3\n", {}, 3),
    "header-only.seq.gz": (gzip.compress(HEADER), {}, 2),
    "crlf.seq": (HEADER.replace(b"\n", b"\r\n") + b"1 2 \r\n3 \r\n" * 50, {}, 3),
    "no-final-newline.txt": (b"1 2\n3 4 5\n" * 30 + b"6 7", {}, 4),
    "line-separator.jsonl": ('{"author": "a", "content": "x\u2028y z"}\n'.encode() * 30, {}, 3),
    # users whose records hold no words still take ids, as in a local load
    "silent-users.jsonl": (b"".join(b'{"author": "silent%d", "content": "..."}\n' % i
                                    for i in range(20))
                           + b"".join(b'{"author": "u%d", "content": "a b. c"}\n' % (i % 7)
                                      for i in range(40)), {}, 4),
    # the "% Sequences:" line ends exactly where the first 64 KiB end
    "header-at-64k.seq": (header_ending_at(1 << 16) + b"\n\n1 2\n3\n", {}, 2),
}


@pytest.mark.parametrize("name", list(EDGES))
def test_edge_cases_give_the_local_database(client, tmp_path, name):
    data, options, parts = EDGES[name]
    path = tmp_path / name
    path.write_bytes(data)
    assert_same(load_distributed(path, client, partitions=parts, **options).collect(),
                dpgpu.load(path, **options))


@pytest.mark.parametrize("fmt", [None, "lines", "jsonl", "seq", "spmf"])
def test_a_blank_file_is_empty_sequences_or_refused_alike(client, tmp_path, fmt):
    """Blank lines are empty sequences of a lines or SPMF file named as such; any other
    format, or none, refuses a blank file; an empty file is refused in every format."""
    path = tmp_path / "blank"
    path.write_bytes(b"\n \n")
    reads = (lambda: dpgpu.load(path, format=fmt),
             lambda: load_distributed(path, client, format=fmt).collect())
    for read in reads:
        if fmt in ("lines", "spmf"):
            db = read()
            assert len(db) == 2 and db.n_events == 0
        else:
            with pytest.raises(InputError, match="empty file"):
                read()
    path.write_bytes(b"")
    for read in reads:
        with pytest.raises(InputError, match="empty file"):
            read()


def test_pst_on_parts_without_words(client, tmp_path):
    """A part of records without words holds no sequences: it is dropped, not counted."""
    path = tmp_path / "nowords.jsonl"
    records = [{"author": "e", "content": "..."}] * 200 + \
        [{"author": "u", "content": "alpha beta. gamma"}] * 20
    path.write_text("\n".join(map(json.dumps, records)) + "\n")
    db = load_distributed(path, client, partitions=2)
    assert len(db.states) == 1
    remote = pst(db, 2.0, l_top=6, seed=3, engine="dask")
    assert remote.nodes() == pst(dpgpu.load(path), 2.0, l_top=6, seed=3).nodes()


def test_fewer_users_than_partitions_leave_no_empty_partition(client, tmp_path):
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps({"author": f"u{i % 2}", "content": f"w{i} x. y z"}) + "\n"
                            for i in range(40)))
    parts = load_distributed(path, client, partitions=6).partitions(by_user=True)
    assert len(parts) == 2 and all(rows.size for rows in parts.rows)
    kw = dict(max_n=2, contribution=3, seed=5)
    remote = dpne(load_distributed(path, client, partitions=6), 8.0, 1e-5, engine="dask", **kw)
    local = dpne(dpgpu.load(path), 8.0, 1e-5, **kw)
    assert [g.tolist() for g in remote.levels] == [g.tolist() for g in local.levels]


@pytest.mark.parametrize("compress", [False, True])
def test_a_public_vocabulary_gives_the_local_database(client, tmp_path, compress):
    """``vocab=`` on the workers (byte ranges, or one worker for gzip) as in a local load."""
    data = "".join(f"{' '.join(map(str, row))}\n" for row in rng_rows(4, 60))
    path = tmp_path / ("d.txt.gz" if compress else "d.txt")
    path.write_bytes(gzip.compress(data.encode()) if compress else data.encode())
    words = tmp_path / "vocab.txt"
    words.write_text("\n".join(str(i) for i in range(12, -1, -1)) + "\n")
    got = load_distributed(path, client, partitions=3, vocab=words)
    want = dpgpu.load(path, vocab=words)
    assert got.vocab.public and want.vocab.public and got.vocab.labels[0] == "12"
    assert_same(got.collect(), want)
    assert not load_distributed(path, client, partitions=3).vocab.public
    with pytest.raises(InputError, match=r"d\.txt.*item '.*' and \d+ more not in the vocab"):
        load_distributed(path, client, partitions=3, vocab=["1", "2"])


def test_a_seq_header_marked_as_data_stays_not_public_on_the_workers(client, tmp_path):
    (tmp_path / "d.txt").write_text("a b c\nb c\n" * 30)
    dpgpu.load(tmp_path / "d.txt").save(tmp_path / "d.seq", format="seq")
    got = load_distributed(tmp_path / "d.seq", client, partitions=3)
    assert not got.vocab.public and got.vocab.names == ["a", "b", "c"]
    assert_same(got.collect(), dpgpu.load(tmp_path / "d.seq"))
    with pytest.raises(InvalidParameter, match="whose header declares its categories"):
        load_distributed(tmp_path / "d.seq", client, vocab=["1", "2", "3"])


@pytest.mark.parametrize("compress", [False, True])
def test_files_written_on_a_public_vocabulary_read_back_on_it_as_locally(client, tmp_path,
                                                                          compress):
    """SPMF items are matched by their @ITEM names and a .seq header that lists exactly the
    vocabulary is accepted, on the workers as in a local load."""
    vocab = ["Send Fine", "Payment", "never", "a=b"]
    rows = [[vocab[i - 1] for i in row if i != 3] for row in rng_rows(6, 80, items=4, hi=6)]
    db = dpgpu.SequenceDB.from_sequences([r for r in rows if r], vocab=vocab)
    spaced = tmp_path / ("d.spmf.gz" if compress else "d.spmf")
    db.save(spaced, format="spmf")
    got = load_distributed(spaced, client, partitions=3, vocab=vocab)
    want = dpgpu.load(spaced, vocab=vocab)
    assert got.vocab.public and got.vocab.labels == vocab
    assert_same(got.collect(), want)
    assert list(got.collect()) == list(db)
    header = dpgpu.SequenceDB.from_sequences([["x", "y"], ["z", "x"]] * 40, vocab=["x", "y", "z"])
    seq = tmp_path / ("d.seq.gz" if compress else "d.seq")
    header.save(seq, format="seq")
    got = load_distributed(seq, client, partitions=3, vocab=["x", "y", "z"])
    assert got.vocab.public and got.vocab.labels == ["x", "y", "z"]
    assert_same(got.collect(), dpgpu.load(seq, vocab=["x", "y", "z"]))
    with pytest.raises(InvalidParameter, match="whose header declares its categories"):
        load_distributed(seq, client, partitions=3, vocab=["y", "x", "z"])


def test_a_wide_file_with_its_options_gives_the_local_database(client, tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("id,sex,t1,t2,t3\n" + "".join(
        f"p{i},f,s{i % 3},{'' if i % 4 else 'NA'},s{i % 5}\n" for i in range(60)))
    options = {"format": "wide", "states": "t1:t3", "case": "id"}
    assert_same(load_distributed(path, client, partitions=3, **options).collect(),
                dpgpu.load(path, **options))


def test_a_trajectory_file_with_its_options_gives_the_local_database(client, tmp_path):
    path = tmp_path / "points.csv"
    path.write_text("trip,lon,lat\n" + "".join(f"t{i % 7},{i % 11},{i % 5}\n" for i in range(90)))
    options = {"format": "trajectory", "grid": "3x2", "bounds": "0,10,0,4"}
    got = load_distributed(path, client, partitions=3, **options).collect()
    assert got.vocab.public and got.source["grid"] == [3, 2]
    assert_same(got, dpgpu.load(path, **options))


def test_lines_read_a_character_at_a_time_give_the_local_database(client, tmp_path):
    path = tmp_path / "dna.txt"
    path.write_text("".join("ACGT"[i % 4] * (i % 7) + " T\n" for i in range(300)))
    assert_same(load_distributed(path, client, partitions=3, format="lines", tokens="chars")
                .collect(), dpgpu.load(path, "lines", tokens="chars"))


# ------------------------------------------------------------ a UTF-8 byte-order mark
BOM = codecs.BOM_UTF8


def text_csv():
    return "author,content\n" + "".join(f"u{i % 9},w{i % 4} w{i % 7}. w{i % 3}\n"
                                         for i in range(120))


#: Every way load_distributed reads: split (seq, spmf, lines, jsonl), or whole by one worker
#: (a CSV event log, gzip, column, text-csv), with their load options.
BOM_FILES = {
    **{name: (make, {}) for name, make in FILES.items()},
    "data.seq.gz": (FILES["data.seq"], {}),
    "paths.csv": (lambda: "id,path\n" + "".join(f"r{i},{' '.join(map(str, r))}\n"
                                                for i, r in enumerate(rng_rows(11, 90))),
                  {"format": "column", "sequence": "path", "case": "id"}),
    "posts.csv": (text_csv, {"format": "text-csv", "user": "author", "text": "content"}),
}


def write(path, data: bytes):
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)


@pytest.mark.parametrize("name", list(BOM_FILES))
def test_a_byte_order_mark_is_dropped_as_by_a_local_load(client, tmp_path, name):
    """A file saved with a UTF-8 BOM reads as a local load reads it: as the same file without."""
    make, options = BOM_FILES[name]
    text = make().encode()
    write(tmp_path / "plain" / name, text)
    write(tmp_path / "bom" / name, BOM + text)
    got = load_distributed(tmp_path / "bom" / name, client, partitions=3, **options).collect()
    assert_same(got, dpgpu.load(tmp_path / "bom" / name, **options))
    plain = dpgpu.load(tmp_path / "plain" / name, **options)
    assert got.vocab.labels == plain.vocab.labels and got.vocab.public == plain.vocab.public
    assert got.items.tolist() == plain.items.tolist()
    assert got.offsets.tolist() == plain.offsets.tolist()
    assert got.source["format"] == plain.source["format"]


@pytest.mark.parametrize("name, bad, first", [("data.seq", "9", 6), ("data.spmf", "1.5 -2", 0),
                                              ("texts.jsonl", "{not json", 0)])
@pytest.mark.parametrize("where", ["first", "last"])
def test_a_bad_line_after_a_byte_order_mark_is_named_as_by_a_local_load(client, tmp_path, name,
                                                                         bad, first, where):
    lines = FILES[name]().splitlines(keepends=True)
    at = first if where == "first" else len(lines) - 3  # the first data line, or the last part
    lines.insert(at, bad + "\n")
    path = tmp_path / name
    path.write_bytes(BOM + "".join(lines).encode())
    with pytest.raises(InputError) as local:
        dpgpu.load(path)
    with pytest.raises(InputError) as remote:
        load_distributed(path, client, partitions=4)
    assert str(remote.value) == str(local.value)
    assert f"line {at + 1}:" in str(remote.value) and "\ufeff" not in str(remote.value)


@pytest.mark.parametrize("body", [b"", b"\n \n"])
def test_a_byte_order_mark_before_nothing_is_an_empty_file(client, tmp_path, body):
    path = tmp_path / "blank.txt"
    path.write_bytes(BOM + body)
    for read in (dpgpu.load, lambda p: load_distributed(p, client)):
        with pytest.raises(InputError, match="empty file"):
            read(path)


# ------------------------------------------------------- errors raised on the workers
def compute_failures(client) -> int:
    """The workers' "Compute Failed" log records so far (a task raised on a worker)."""
    return sum("Compute Failed" in message
               for records in client.get_worker_logs().values() for _, message in records)


@pytest.mark.parametrize("name, text, options", [
    ("wide.csv", "id,t1,t2\np1,a,b\np2,b,a\n", {"format": "wide"}),  # no states
    ("d.txt", "1 2\n3\n" * 20, {"format": "lines", "tokens": "bogus"}),
], ids=["whole", "split"])
def test_a_parameter_error_on_a_worker_is_raised_here_without_a_worker_traceback(
        client, tmp_path, name, text, options):
    """Read whole (wide) or in ranges (lines): the local load's InvalidParameter, and no
    worker logs the task as failed (with its traceback)."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InvalidParameter) as local:
        dpgpu.load(path, **options)
    before = compute_failures(client)
    with pytest.raises(InvalidParameter) as remote:
        load_distributed(path, client, partitions=2, **options)
    assert str(remote.value) == str(local.value)
    assert compute_failures(client) == before


def test_a_warning_of_the_worker_reading_an_event_log_is_logged_here_once(client, tmp_path,
                                                                         caplog):
    """Regression: the warning that a column named like a user column is not read as the
    users was logged on the worker that read the log, where the user never saw it."""
    path = tmp_path / "u.csv"
    path.write_text("case,activity,author\nc1,a,ann\nc2,b,bo\nc1,b,ann\n")
    with caplog.at_level(logging.WARNING, logger="dpgpu"):
        db = load_distributed(path, client, partitions=2)
    assert db.collect().items.tolist() == [0, 1, 1]  # c1: a b; c2: b
    said = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    assert said == [("dpgpu", logging.WARNING,
                     f"{path}: column 'author' is not read as the users (without --user, each "
                     "case is its own user); pass --user author for user-level data (dpne, "
                     "advise)")]


@pytest.mark.parametrize("bom", [b"", codecs.BOM_UTF8], ids=["plain", "bom"])
def test_spmf_itemsets_read_in_parts_are_warned_of_here_once_as_locally(client, tmp_path,
                                                                        caplog, bom):
    """Regression: each worker reading a part of an SPMF file warned, on the worker, of its
    own part's itemsets of several items, with lines counted from the start of the part."""
    rows = [" -1 ".join(map(str, r)) + " -1 -2" for r in rng_rows(8, 300)]
    for i in (140, 141, 201, 290):  # none in the first part; the first is on line 143
        rows[i] = rows[i].replace(" -1 ", " ", 1)
    path = tmp_path / "itemsets.spmf"
    path.write_bytes(bom + ("\r\n".join(["@CONVERTED_FROM_TEXT", ""] + rows) + "\r\n").encode())
    with caplog.at_level(logging.WARNING, logger="dpgpu"):
        local = dpgpu.load(path)
    want = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert len(want) == 1 and "4 itemsets hold more than one item (the first on line 143)" in \
        want[0][1]  # the brute-force count, and the line in the file (two lines precede row 0)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="dpgpu"):
        db = load_distributed(path, client, partitions=5)
    assert len(db.states) == 5
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == want
    assert_same(db.collect(), local)


def test_what_a_worker_kept_is_logged_where_the_read_failed(caplog):
    """A reader that fails with something other than an error of dpgpu raises past the worker's
    keeping: what it had warned of until then is logged there, not lost."""
    with caplog.at_level(logging.WARNING, logger="dpgpu"):
        with pytest.raises(RuntimeError):
            with loading._KEPT.keeping() as said:
                logging.getLogger("dpgpu").warning("a warning")
                assert said == [(logging.WARNING, "a warning")] and not caplog.records
                raise RuntimeError("not a dpgpu error")
        logging.getLogger("dpgpu").warning("afterwards")
    assert [r.getMessage() for r in caplog.records] == ["a warning", "afterwards"]


def test_the_workers_get_an_absolute_path_with_its_links_left_to_them(tmp_path, monkeypatch):
    """Regression: every link was resolved on the client, whose mounts a remote cluster's
    workers need not share; only a descriptor of this process is replaced by its file."""
    target = tmp_path / "data" / "d.txt"
    target.parent.mkdir()
    target.write_text("1 2\n")
    (tmp_path / "link").symlink_to(target.parent)
    monkeypatch.chdir(tmp_path)
    assert loading._shared_path("link/d.txt") == tmp_path / "link" / "d.txt"
    with open(target) as f:
        assert loading._shared_path(f"/dev/fd/{f.fileno()}") == target.resolve()
