"""Lines read a character at a time (``tokens="chars"``): DNA, protein and other strings of
one-letter symbols, checked against a plain loop; written back the same way."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpgpu
from dpgpu import SequenceDB
from dpgpu.errors import InvalidParameter

LINE = st.text(alphabet=st.sampled_from(list("ACGT xyé名\t\r,-1\x1c\u2028\u3000\xa0")),
               max_size=15)


def as_labels(db):
    bounds = db.offsets.tolist()
    return [list(db.vocab.decode(db.items[lo:hi].tolist()))
            for lo, hi in zip(bounds[:-1], bounds[1:])]


@settings(max_examples=80, deadline=None)
@given(lines=st.lists(LINE, min_size=1, max_size=10), final_newline=st.booleans())
def test_every_character_but_white_space_is_an_item(tmp_path_factory, lines, final_newline):
    text = "\n".join(lines) + ("\n" if final_newline else "")
    path = tmp_path_factory.mktemp("chars") / "s.txt"
    path.write_bytes(text.encode())
    if not text.strip():
        return  # an empty file is an error in every format
    db = dpgpu.load(path, "lines", tokens="chars")
    rows = re.split(r"\r\n|\r|\n", text)  # LF, CRLF and a lone CR each end a line
    rows = rows[:-1] if text.endswith(("\n", "\r")) else rows
    assert as_labels(db) == [[c for c in row if not c.isspace()] for row in rows]
    assert db.source["tokens"] == "chars"


def test_written_back_without_separators_and_read_back_the_same(tmp_path):
    path = tmp_path / "peptides.txt"
    path.write_text("GLWSK IKE\nYVPL\n\nAC GT\n")
    db = dpgpu.load(path, "lines", tokens="chars")
    db.save(tmp_path / "out.txt")
    assert (tmp_path / "out.txt").read_text() == "GLWSKIKE\nYVPL\n\nACGT\n"
    assert as_labels(dpgpu.load(tmp_path / "out.txt", "lines", tokens="chars")) == as_labels(db)
    rel = dpgpu.ngram(db, 1.0, l_max=8, seed=1)
    rel.save(tmp_path / "rel")
    written = (tmp_path / "rel" / "synthetic.txt").read_text().splitlines()
    assert [list(line) for line in written] == as_labels(rel.synthetic)


def test_a_label_of_several_characters_is_refused(tmp_path):
    db = SequenceDB.from_sequences([["A", "GC"]], vocab=["A", "GC"])
    db.source.update({"format": "lines", "tokens": "chars"})
    with pytest.raises(InvalidParameter, match="item 'GC' is not one character"):
        db.save(tmp_path / "out.txt")
    assert not (tmp_path / "out.txt").exists()


def test_an_unknown_token_kind_is_refused(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("a b\n")
    with pytest.raises(InvalidParameter, match="tokens: expected one of auto, int, str, chars"):
        dpgpu.load(path, "lines", tokens="words")
    done = subprocess.run([sys.executable, "-m", "dpgpu", "stats", str(path), "--tokens",
                           "words"], capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "--tokens" in done.stderr
