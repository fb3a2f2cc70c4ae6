"""A release's synthetic file reads back as the sequences the release made, in every format.

The report records the reader options of the synthetic file
(``synthetic_options``), so ``load_release(dir).synthetic()`` and ``dpgpu
evaluate`` read it right however the original is given.
"""

from __future__ import annotations

import json

import pytest

import dpgpu
from dpgpu import SequenceDB
from dpgpu.cli import main
from dpgpu.eval.evaluate import evaluate_release

WORDS = ["home", "news", "sports", "tech"]
SEQS = [[WORDS[(i * j + j) % 4] for j in range(1 + i % 5)] for i in range(80)]
PEPTIDES = ["GLWSKIKEV", "AAKAAGKAAL", "GAVSEAV", "KWKLFKKIGAV", "FLPLIGRVLSGIL", "GIGAVLKV"] * 15
NUMBERS = [["3", "17", "250"][k % 3] for k in range(7)]
#: Formats with a row per item: they hold no empty sequence.
ROW_FORMATS = ("csv", "parquet", "trajectory")


def _words(tmp_path, fmt):
    """The word sequences saved as ``fmt`` (default column names and keys)."""
    path = tmp_path / f"in.{fmt}"
    SequenceDB.from_sequences(SEQS, vocab=WORDS).save(path, format=fmt)
    return path


def _event_log(tmp_path):
    """A CSV log with column names no reader guesses, delimited by ';'."""
    path = tmp_path / "log.csv"
    rows = [f"t{i};{x};{j}" for i, s in enumerate(SEQS) for j, x in enumerate(s)]
    path.write_text("trace;act;when\n" + "\n".join(rows) + "\n")
    return path


def _parquet_log(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "log.parquet"
    rows = [(f"t{i}", x, j) for i, s in enumerate(SEQS) for j, x in enumerate(s)]
    pq.write_table(pa.table({name: [r[k] for r in rows]
                             for k, name in enumerate(("trace", "act", "when"))}), path)
    return path


def _wide(tmp_path):
    path = tmp_path / "states.csv"
    rows = [",".join([f"p{i}", "f"] + s + ["NA"] * (6 - len(s))) for i, s in enumerate(SEQS)]
    path.write_text("pid,sex," + ",".join(f"age{a}" for a in range(15, 21)) + "\n"
                    + "\n".join(rows) + "\n")
    return path


def _trajectory(tmp_path):
    """Tracks over a 4 x 4 grid of unit cells, under column names no reader guesses."""
    path = tmp_path / "tracks.csv"
    rows = [f"v{i},{(i + j) % 4 + 0.5},{(i * j) % 4 + 0.25},{j}"
            for i in range(60) for j in range(1 + i % 6)]
    path.write_text("track,px,py,t\n" + "\n".join(rows) + "\n")
    return path


def _column_chars(tmp_path):
    """Peptides under a first line that is no true header (as modlAMP's AMPvsUniProt.csv)."""
    path = tmp_path / "peptides.csv"
    path.write_text("7,1,UniProt,AMP\n" + "".join(f"{p}, {i % 2}\n" for i, p in
                                                    enumerate(PEPTIDES)))
    return path


def _column_words(tmp_path):
    path = tmp_path / "paths.csv"
    path.write_text("session,path\n" + "".join(f"s{i},{' '.join(s)}\n"
                                                for i, s in enumerate(SEQS)))
    return path


def _lines(tmp_path, lines, name="in.txt"):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines))
    return path


AMINO = sorted(set("".join(PEPTIDES)))
GRID = {"grid": "4x4", "bounds": "0,4,0,4"}
#: name: (input file, its format, reader options, public vocabulary (None: the .seq
#: header's), format of the converted original, its reader options)
CASES = {
    "seq": (lambda t: _words(t, "seq"), "seq", {}, None, "lines", {}),
    "seq-named": (lambda t: _words(t, "seq"), "seq", {}, WORDS, "spmf", {}),
    "spmf": (lambda t: _words(t, "spmf"), "spmf", {}, WORDS, "lines", {}),
    "lines-str": (lambda t: _lines(t, [" ".join(s) for s in SEQS]), "lines", {}, WORDS,
                  "column", {"sequence": "sequence"}),
    "lines-int": (lambda t: _lines(t, [" ".join(NUMBERS[i % 5:]) for i in range(60)]), "lines",
                  {"tokens": "int"}, ["3", "17", "250"], "spmf", {}),
    "lines-chars": (lambda t: _lines(t, PEPTIDES), "lines", {"tokens": "chars"}, AMINO,
                    "column", {"sequence": "sequence", "tokens": "chars"}),
    "csv": (_event_log, "csv", {"case": "trace", "activity": "act", "timestamp": "when"}, WORDS,
            "lines", {}),
    "parquet": (_parquet_log, "parquet", {"case": "trace", "activity": "act",
                                          "timestamp": "when"}, WORDS,
                "csv", {"case": "trace", "activity": "act", "timestamp": "when"}),
    "xes": (lambda t: _words(t, "xes"), "xes", {}, WORDS, "lines", {}),
    "wide": (_wide, "wide", {"states": "age15:age20", "case": "pid"}, WORDS, "column", {}),
    "trajectory": (_trajectory, "trajectory", {**GRID, "case": "track", "x": "px", "y": "py",
                                               "timestamp": "t"}, None, "lines", {}),
    "column-chars": (_column_chars, "column", {"sequence": "7", "tokens": "chars"}, AMINO,
                     "lines", {"tokens": "chars"}),
    "column-str": (_column_words, "column", {"sequence": "path", "case": "session"}, WORDS,
                   "wide", {"states": "1:5"}),
}


def _release(tmp_path, case, mechanism):
    """The original read from its file, the release object and its directory."""
    make, fmt, options, vocab, _, _ = CASES[case]
    original = dpgpu.load(make(tmp_path), format=fmt, vocab=vocab, **options)
    if mechanism == "ngram":  # its synthetic sequences are at most n_max long (wide: 6 columns)
        release = dpgpu.ngram(original, 5.0, l_max=6, n_max=3, seed=1)
    else:
        release = dpgpu.pst(original, 5.0, l_top=6, seed=1, max_length=6)
    return original, release, release.save(tmp_path / "rel")


def _labels(db, fmt):
    """``db``'s sequences as label tuples; where ``fmt`` has a row per item, the non-empty ones."""
    return [s for s in db if s or fmt not in ROW_FORMATS]


@pytest.mark.parametrize("mechanism", ["ngram", "pst"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_synthetic_file_reads_back_as_the_release_made_it(tmp_path, case, mechanism):
    _, release, out = _release(tmp_path, case, mechanism)
    loaded = dpgpu.load_release(out)
    fmt = loaded.report["synthetic_format"]
    assert fmt == CASES[case][1]  # written in the input's own format
    back = loaded.synthetic()
    assert len(release.synthetic) > 0 and len(_labels(back, fmt)) > 0
    assert list(back) == _labels(release.synthetic, fmt)
    options = loaded.report["synthetic_options"]
    assert json.dumps(options)  # plain JSON: format options only, no path or case name
    assert not {"path", "cases", "user_labels", "user"} & set(options)


@pytest.mark.parametrize("case", sorted(CASES))
def test_evaluate_reads_the_synthetic_file_alike_however_the_original_is_given(tmp_path, case):
    original, release, out = _release(tmp_path, case, "ngram")
    _, _, _, _, other, other_options = CASES[case]
    converted = tmp_path / f"converted.{other}"
    original.save(converted, format=other)
    again = dpgpu.load(converted, format=other, vocab=original.vocab.labels, **other_options)
    settings = {"tasks": ["count-queries", "top-k", "lengths"], "n_queries": 200}
    own = evaluate_release(original, out, reader_options=CASES[case][2], **settings)
    other_way = evaluate_release(again, out, reader_options=other_options, **settings)
    assert other_way["tasks"] == own["tasks"]
    lengths = own["tasks"]["lengths"]["synthetic"]
    assert lengths["sequences"] == len(_labels(release.synthetic, CASES[case][1]))


def test_dpgpu_evaluate_of_peptides_given_as_lines_or_as_a_column(tmp_path, capsys):
    """The release made from a lines copy of a column file, and the other way round."""
    table = _column_chars(tmp_path)
    vocab = tmp_path / "aa.txt"
    vocab.write_text("\n".join(AMINO) + "\n")
    column = ["--format", "column", "--sequence", "7", "--tokens", "chars"]
    lines = tmp_path / "peptides.lines"
    assert main(["convert", str(table), *column, "--to", "lines", str(lines)]) == 0
    given = {"column": [str(table), *column], "lines": [str(lines), "--tokens", "chars"]}
    results = []
    for made_from in ("lines", "column"):
        rel = tmp_path / f"rel-{made_from}"
        assert main(["ngram", *given[made_from], "--vocab", str(vocab), "--epsilon", "1",
                     "--seed", "1", "--out", str(rel), "-q"]) == 0
        for original in ("lines", "column"):
            path, *options = given[original]
            capsys.readouterr()
            assert main(["evaluate", "--original", path, *options, "--vocab", str(vocab),
                         "--release", str(rel), "--queries", "200", "--json"]) == 0
            results.append(json.loads(capsys.readouterr().out)["tasks"])
    assert all(r == results[0] for r in results[1:])
    assert results[0]["lengths"]["synthetic"]["mean"] > 1.5  # characters, not one item a line


def test_a_release_without_synthetic_options_reads_as_before(tmp_path):
    """Older reports: the original's options apply to a synthetic file of its format."""
    original, release, out = _release(tmp_path, "lines-chars", "ngram")
    settings = {"tasks": ["count-queries", "lengths"], "n_queries": 200}
    recorded = evaluate_release(original, out, **settings)["tasks"]
    report = json.loads((out / "report.json").read_text())
    del report["synthetic_options"]
    (out / "report.json").write_text(json.dumps(report))
    loaded = dpgpu.load_release(out)
    assert list(loaded.synthetic(tokens="chars")) == list(release.synthetic)
    assert evaluate_release(original, out, reader_options={"tokens": "chars"},
                            **settings)["tasks"] == recorded


def test_options_given_to_synthetic_win_over_the_recorded_ones(tmp_path):
    _, release, out = _release(tmp_path, "lines-chars", "ngram")
    as_words = dpgpu.load_release(out).synthetic(tokens="str")
    assert list(as_words) == [("".join(s),) if s else () for s in release.synthetic]
    on_vocab = dpgpu.load_release(out).synthetic(vocab=AMINO)
    assert on_vocab.vocab.labels == AMINO and list(on_vocab) == list(release.synthetic)


def test_an_empty_synthetic_file_reads_as_no_sequences(tmp_path):
    """A release may hold no synthetic sequence: an empty file, as ``evaluate`` reads it."""
    _, _, out = _release(tmp_path, "lines-str", "ngram")
    (out / "synthetic.txt").write_text("")
    assert len(dpgpu.load_release(out).synthetic()) == 0
    on_vocab = dpgpu.load_release(out).synthetic(vocab=WORDS)
    assert len(on_vocab) == 0 and on_vocab.vocab.labels == WORDS
