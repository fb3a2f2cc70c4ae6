"""Judge a release directory against its original data (``dpgpu evaluate``).

The metrics that apply follow from the files a release holds:

==================  ===========================================================
release file        tasks
==================  ===========================================================
``synthetic.*``     ``count-queries`` (N-gram 6.2.1 random queries),
                    ``top-k`` (top-k frequent strings and subsequences: true
                    positive ratio / precision and utility loss), ``lengths``
                    (total variation distance of length distributions),
                    ``frequent`` when a support threshold is known
``pst.json``        ``pst`` (PrivTree 6.2 on the released model itself: precision
                    of the top-k frequent strings by its Eq. 12 estimates, relative
                    error of the random count queries answered by Eq. 12, the
                    noisy number of sequences)
``topk.tsv``        ``em`` (PrivTree 6.2 on an EM top-k release: precision of its
                    top-K strings against the exact top-K of the original, beside
                    the non-private Truncate baseline, the exact top-K of the data
                    cut to the release's ``l_top``)
``ngrams.tsv``      ``ngrams`` (relative error of the released counts)
``frequent.tsv``    ``frequent`` (precision, recall, F-score, relative error
                    of supports; per pattern length)
DPNE's grams      ``coverage`` (K-anonymity coverage per k, spurious share), from
                    the ``ngrams.tsv`` of a DPNE release (columns k, gram)
``leaves.csv``      ``range-queries`` (PrivTree 6.1: relative error of random
                    range counts, small / medium / large query sets)
==================  ===========================================================

A release with ``leaves.csv`` is spatial (PrivTree): its original is a points
file, read with the coordinate columns that ``report.json`` records
(:func:`evaluate_spatial_release`); every other release is judged against a
sequence dataset whose vocabulary must match (:func:`evaluate_release`).

The work is bounded by the settings' maxima (:data:`MAX_K`,
:data:`dpgpu.eval.metrics.MAX_QUERIES`, :data:`~dpgpu.eval.metrics.MAX_QUERY_ITEMS`)
and by the data: no pattern longer than the longest sequence is searched for,
and a search for frequent or top-K patterns stops with an error naming the
setting to change once it examines more than :data:`MAX_CANDIDATES`
candidates.  A top-K comparison with no pattern to compare scores None
(``n/a``), never a perfect score.  ``report.json`` is checked first
(:func:`check_release_report`).

The result is a diagnostic built from the *exact* original data: it is not
differentially private.  :func:`write_evaluation` stores it as
``evaluation.json`` in the release directory (atomically, touching no other
file) with ``"private": false`` in its header; it replaces the evaluation
an earlier run left there (dpgpu's own file, never part of the release), but
nothing else of that name (a link, a directory).  :func:`read_evaluation`
reads it back, checked.  :func:`plot_evaluation` draws it as a PNG figure,
written atomically and never over an existing file without ``force``.
"""

from __future__ import annotations

import contextlib
import csv
import json
import logging
import math
import os
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from .. import __version__
from ..data.io import atomic_output, input_errors, read_bytes
from ..data.load import load
from ..data.points import parse_columns, read_points
from ..data.sequencedb import SequenceDB, sort_labels
from ..data.vocabulary import Vocabulary
from ..errors import InputError, InvalidParameter
from ..mechanisms.privtree.spatial import check_bounds
from ..release import (REPORT, dump_json, read_synthetic, release_path, synthetic_reading,
                       vocabulary_fingerprint)
from ..report import read_release_report
from ..backend import to_numpy
from ..validation import check_positive_int, check_positive_real
from . import metrics as M
from . import truth as T

log = logging.getLogger("dpgpu")

EVALUATION = "evaluation.json"
TASKS = ("count-queries", "top-k", "lengths", "pst", "em", "ngrams", "frequent", "coverage",
         "range-queries")
LEAVES = "leaves.csv"
PST = "pst.json"
#: The strings an EM top-k release selected (:meth:`dpgpu.mechanisms.privtree.em.EMRelease.save`).
TOPK = "topk.tsv"
#: Formats a spatial release's original may have (the content decides when none is given).
POINT_FORMATS = ("csv", "parquet")
K_VALUES = (20, 40, 60, 80, 100)
#: Largest K of a top-K comparison (100 times the papers' largest).
MAX_K = 10_000
#: Most candidate patterns a top-K or frequent-pattern search may examine: candidate
#: subsequences the exact miner counts (:func:`dpgpu.eval.truth.frequent_subsequences`),
#: strings one step of the PST model's top-K search expands.
MAX_CANDIDATES = 2_000_000
COVERAGE_KS = (1, 10, 100, 1000)
#: Default seed of the random query workload, and queries per maximal size (or per set of
#: range queries; the papers' 10,000).
SEED = 0
N_QUERIES = 10_000
#: Figure formats of :func:`plot_evaluation`, by file name extension.
PLOT_FORMATS = ("png",)
WARNING = ("diagnostic computed from the exact original data; NOT differentially private: "
           "never publish it with the release")
#: The tasks whose results depend on each setting of :func:`evaluate_release` (by keyword):
#: a setting given where none of them is computed would be ignored, and is refused
#: (:func:`check_settings_apply`).
SETTING_TASKS = {"seed": ("count-queries", "pst", "range-queries"),
                 "n_queries": ("count-queries", "pst", "range-queries"),
                 "query_sizes": ("count-queries", "pst"), "k_values": ("top-k", "pst", "em"),
                 "min_length": ("top-k", "pst"), "threshold": ("frequent",),
                 "coverage_ks": ("coverage",),
                 "backend": ("count-queries", "top-k", "pst", "em", "ngrams")}
#: Keys of report["parameters"] read as a relative / absolute support threshold.
_RELATIVE_KEYS = ("threshold", "relative_threshold", "theta")
_ABSOLUTE_KEYS = ("min_support",)


# ------------------------------------------------------------------ release
def _option(names: Mapping[str, str] | None, key: str) -> str:
    """How messages name the parameter ``key``: ``names[key]`` (a command-line option), else
    ``key`` itself."""
    return (names or {}).get(key, key)


def _positive_ints(values: Any, name: str, maximum: int | None = None) -> list[int]:
    """``values`` as a list of integers ``>= 1``: a non-empty sequence, not one number.

    Parameters
    ----------
    values : iterable of int
        The values given.
    name : str
        The parameter's name, for the error message.
    maximum : int, optional
        The largest value allowed; no bound when omitted.

    Returns
    -------
    list of int

    Raises
    ------
    InvalidParameter
        ``values`` is a single value (a number, a string), empty, or holds
        something other than an integer in ``[1, maximum]``.
    """
    try:
        items = [] if isinstance(values, (str, bytes)) else list(values)
    except TypeError:
        items = []
    if not items:
        raise InvalidParameter(f"{name}: expected a non-empty sequence of integers (a list "
                               f"such as [20, 40]), got {values!r}")
    return [check_positive_int(v, name, maximum=maximum) for v in items]


def check_count_workload(n_queries: Any, query_sizes: Any,
                         names: Mapping[str, str] | None = None) -> tuple[int, list[int]]:
    """The random count-query settings, checked to draw a bounded workload.

    Parameters
    ----------
    n_queries : int or None
        Queries per maximal size, at most :data:`dpgpu.eval.metrics.MAX_QUERIES`
        (None: :data:`N_QUERIES`).
    query_sizes : sequence of int
        Maximal query sizes, integers ``>= 1``.
    names : mapping of str to str, optional
        How messages name ``n_queries`` and ``query_sizes`` (default: so;
        ``dpgpu evaluate`` gives its options).

    Returns
    -------
    n_queries : int
    query_sizes : list of int

    Raises
    ------
    InvalidParameter
        A value out of range, or ``n_queries`` times the sum of
        ``query_sizes`` (the most query items the workload may draw) above
        :data:`dpgpu.eval.metrics.MAX_QUERY_ITEMS`.
    """
    many, sizes = _option(names, "n_queries"), _option(names, "query_sizes")
    n = check_positive_int(N_QUERIES if n_queries is None else n_queries, many,
                           maximum=M.MAX_QUERIES)
    query_sizes = _positive_ints(query_sizes, sizes)
    items = n * sum(query_sizes)
    if items > M.MAX_QUERY_ITEMS:
        raise InvalidParameter(
            f"{many}, {sizes}: {n:,} queries for each maximal size "
            f"({', '.join(map(str, query_sizes))}) may draw {items:,} query items, more than "
            f"the {M.MAX_QUERY_ITEMS:,} allowed; lower {many} or {sizes}")
    return n, query_sizes


def release_files(release_dir: Any) -> dict[str, Path]:
    """The release files present, by kind: ``{"synthetic"|"ngrams"|..|"leaves": path}``.

    Kinds: ``synthetic``, ``ngrams``, ``frequent``, ``kgrams``, ``pst``, ``topk``
    (an EM release's :data:`TOPK`), ``leaves``.

    An ``ngrams.tsv`` with just the columns ``k`` and ``gram`` (DPNE's) is a
    set of extracted grams without counts and counts as ``kgrams``.

    Parameters
    ----------
    release_dir : str or path-like
        The release directory.

    Returns
    -------
    dict of str to Path
        Each kind found and its file; kinds absent are left out.

    Raises
    ------
    InputError
        When several ``synthetic.*`` files are present.
    InvalidParameter
        ``release_dir`` is not a str or path-like.
    """
    d = release_path(release_dir, "release_dir")
    found: dict[str, Path] = {}
    for name in ("ngrams", "frequent", "kgrams"):
        if (d / f"{name}.tsv").is_file():
            found[name] = d / f"{name}.tsv"
    if "ngrams" in found and _header(found["ngrams"]) in (["k", "gram"], ["gram"]):
        found["kgrams"] = found.pop("ngrams")  # a set of grams without counts (DPNE)
    syn = sorted(p for p in d.glob("synthetic.*") if p.is_file())
    if len(syn) > 1:
        raise InputError(f"{d}: several synthetic datasets ({', '.join(p.name for p in syn)}); "
                         "a release holds one")
    if syn:
        found["synthetic"] = syn[0]
    if (d / PST).is_file():
        found["pst"] = d / PST
    if (d / TOPK).is_file():
        found["topk"] = d / TOPK
    if (d / LEAVES).is_file():
        found["leaves"] = d / LEAVES
    return found


def is_spatial_release(release_dir: Any) -> bool:
    """Whether a release directory holds a spatial decomposition (``leaves.csv``).

    Parameters
    ----------
    release_dir : str or path-like
        The release directory.

    Returns
    -------
    bool
        True when it holds a regular file :data:`LEAVES`.

    Raises
    ------
    InvalidParameter
        ``release_dir`` is not a str or path-like.
    """
    return (release_path(release_dir, "release_dir") / LEAVES).is_file()


def check_release_report(release_dir: Any) -> dict:
    """A release's ``report.json``, with the fields an evaluation reads checked.

    :func:`dpgpu.report.read_release_report` reads it and checks its fields
    (:data:`dpgpu.report.REPORT_FIELDS`).

    Parameters
    ----------
    release_dir : str or path-like
        The release directory.

    Returns
    -------
    dict
        The report.

    Raises
    ------
    InputError
        When the directory is not a release (:func:`~dpgpu.report.read_release_report`),
        as ``<dir>/report.json: <field>: expected ...`` at the first field
        that is missing or malformed, or when a file the report lists
        (``files``) is missing: an evaluation of part of a release would
        leave out what it cannot see.
    InvalidParameter
        ``release_dir`` is not a str or path-like.
    """
    d = release_path(release_dir, "release_dir")
    report = read_release_report(d)
    missing = [name for name in report.get("files") or () if not (d / name).is_file()]
    if missing:
        raise InputError(f"{d}: {REPORT} lists {', '.join(missing)}, missing from the release "
                         "directory (copy a release whole)")
    return report


def _header(path: Path) -> list[str]:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.readline().rstrip("\r\n").split("\t")


def check_vocabulary(report: dict, original: Any, release_dir: Any, original_name: str) -> None:
    """Refuse a release whose vocabulary fingerprint differs from the original's.

    Parameters
    ----------
    report : dict
        The release's report; its ``vocabulary`` entry is checked.
    original : SequenceDB
        The original data.
    release_dir : str or path-like
        The release directory, for messages.
    original_name : str
        The original data's file, for messages.

    Raises
    ------
    InputError
        When ``report.json`` has no ``vocabulary.sha256`` or it does not
        match :func:`dpgpu.release.vocabulary_fingerprint` of the original.
        A release whose vocabulary was taken from the data and kept private
        (``{"public": false}``, DPNE) has no fingerprint: a warning says it
        is not checked.
    """
    voc = report.get("vocabulary")
    sha = voc.get("sha256") if isinstance(voc, dict) else None
    if sha is None and isinstance(voc, dict) and voc.get("public") is False:
        log.warning("%s: the release's vocabulary was taken from the data and kept private, "
                    "so it is not checked against %s's; the evaluation goes on",
                    release_dir, original_name)
        return
    if not isinstance(sha, str):
        raise InputError(f"{Path(release_dir) / REPORT}: no vocabulary fingerprint "
                         "(vocabulary.sha256); cannot check that the release belongs to "
                         f"{original_name}")
    mine = vocabulary_fingerprint(original.vocab)
    if sha != mine:
        size = voc.get("size", "?")
        raise InputError(f"{release_dir}: vocabulary mismatch: the release was made from a "
                         f"dataset with {size} items (sha256 {sha[:12]}...), {original_name} "
                         f"has {original.vocab.size} items (sha256 {mine[:12]}...); "
                         "was it made from another dataset?")


def applicable_tasks(files: dict[str, Path], has_threshold: bool) -> list[str]:
    """Tasks that the release files allow, in :data:`TASKS` order.

    Parameters
    ----------
    files : dict of str to Path
        The release files by kind (:func:`release_files`).
    has_threshold : bool
        Whether a support threshold is known (given, or in the report), so
        that ``frequent`` applies to a synthetic dataset.

    Returns
    -------
    list of str
        Names of :data:`TASKS`.
    """
    out = []
    if "synthetic" in files:
        out += ["count-queries", "top-k", "lengths"]
    if "pst" in files:
        out.append("pst")
    if "topk" in files:
        out.append("em")
    if "ngrams" in files:
        out.append("ngrams")
    if "frequent" in files or ("synthetic" in files and has_threshold):
        out.append("frequent")
    if "kgrams" in files:
        out.append("coverage")
    if "leaves" in files:
        out.append("range-queries")
    return [t for t in TASKS if t in out]


def choose_tasks(tasks: Iterable[str] | None, allowed: Sequence[str], release_dir: Any
                 ) -> list[str]:
    """The tasks to compute: ``tasks`` (checked against ``allowed``), default all allowed.

    Parameters
    ----------
    tasks : iterable of str or None
        The tasks asked for, or None for every allowed one.
    allowed : sequence of str
        The tasks the release allows (:func:`applicable_tasks`).
    release_dir : str or path-like
        The release directory, for messages.

    Returns
    -------
    list of str
        The tasks, in the order asked, each once (or ``allowed``'s order).

    Raises
    ------
    InputError
        When nothing is allowed and no task was asked for.
    InvalidParameter
        ``tasks`` is a single string or not iterable, or holds an unknown
        task or one that the release files do not allow.
    """
    if isinstance(tasks, (str, bytes)) or not (tasks is None or isinstance(tasks, Iterable)):
        raise InvalidParameter(f"tasks: expected a list of task names such as ['top-k'], got "
                               f"{tasks!r}")
    if tasks is None:
        if not allowed:
            raise InputError(f"{release_dir}: no release file to evaluate (expected "
                             f"synthetic.*, ngrams.tsv, frequent.tsv, pst.json, {TOPK} "
                             "or leaves.csv)")
        return list(allowed)
    chosen: list[str] = []
    for t in tasks:
        if t not in TASKS:
            raise InvalidParameter(f"task: unknown task {t!r}; choose from {', '.join(TASKS)}")
        if t not in allowed:
            raise InvalidParameter(f"task: {t!r} does not apply to {release_dir} ({_needs(t)})")
        if t not in chosen:
            chosen.append(t)
    return chosen


def check_settings_apply(given: Iterable[str], chosen: Sequence[str], allowed: Sequence[str],
                         report: Mapping[str, Any], files: Mapping[str, Path],
                         names: Mapping[str, str] | None = None) -> None:
    """Refuse a setting that none of the tasks computed uses, rather than ignore it.

    Parameters
    ----------
    given : iterable of str
        The settings given, by keyword of :data:`SETTING_TASKS`.
    chosen : sequence of str
        The tasks to compute (:func:`choose_tasks`).
    allowed : sequence of str
        The tasks the release allows (:func:`applicable_tasks`).
    report : mapping
        The release's report (its ``mechanism``, for messages).
    files : mapping of str to Path
        The release files (:func:`release_files`), for messages.
    names : mapping of str to str, optional
        How messages name the settings (as for :func:`evaluate_release`).

    Raises
    ------
    InvalidParameter
        Naming the first setting given that no task in ``chosen`` uses (see
        :data:`SETTING_TASKS`), and why: a task the release allows that the
        chosen tasks leave out, or a release that allows none of them (a
        spatial release none of the sequence settings).
    """
    for key in given:
        uses = SETTING_TASKS[key]
        if set(uses) & set(chosen):
            continue
        option = _option(names, key)
        tasks = " and ".join([", ".join(uses[:-1]), uses[-1]] if len(uses) > 1 else uses)
        tasks = f"the {tasks} task{'s' if len(uses) > 1 else ''}"
        if set(uses) & set(allowed):
            raise InvalidParameter(f"{option}: applies to {tasks} only, which "
                                   f"{_option(names, 'tasks')} leaves out (chosen: "
                                   f"{', '.join(chosen)})")
        if "range-queries" in allowed:
            raise InvalidParameter(f"{option}: applies to sequence releases only; a spatial "
                                   f"release ({LEAVES}) is judged by range queries "
                                   f"({_option(names, 'n_queries')}, {_option(names, 'seed')})")
        raise InvalidParameter(
            f"{option}: applies to {tasks} only, which this {report.get('mechanism')} release "
            f"({', '.join(sorted(p.name for p in files.values()))}) does not allow; it allows "
            f"{', '.join(allowed)}")


def read_gram_file(path: Path, vocab: Any, columns: Sequence[str]
                   ) -> tuple[list[tuple[int, ...]], list[float]]:
    """Read a release TSV (``gram`` plus optional value column) into ids.

    Parameters
    ----------
    path : Path
    vocab : Vocabulary
        The original's vocabulary (markers ``&``/``$`` allowed).
    columns : sequence of str
        Columns the header must name, e.g. ``("gram", "count")`` or
        ``("gram",)``; other columns (such as ``noisy_count``) are ignored.

    Returns
    -------
    patterns : list of tuple of int
    values : list of float
        The second column (empty when there is none).

    Raises
    ------
    InputError
        Wrong header, unknown label, bad number, duplicate gram (naming the
        file and line).
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None
    header = lines[0].rstrip("\r").split("\t") if lines else []
    if not set(columns) <= set(header):
        raise InputError(f"{path}:1: expected a header with the columns "
                         f"{chr(9).join(columns)!r}")
    where = [header.index(c) for c in columns]
    pats: list[tuple[int, ...]] = []
    vals: list[float] = []
    seen: set[tuple[int, ...]] = set()
    memo: dict[str, int] = {}
    for no, line in enumerate(lines[1:], start=2):
        line = line.rstrip("\r")
        if not line:
            continue
        parts = line.split("\t")
        if len(parts) != len(header):
            raise InputError(f"{path}:{no}: expected {len(header)} tab-separated columns")
        parts = [parts[i] for i in where]
        ids = T.parse_gram(parts[0], vocab, memo) if parts[0] else None
        if ids is None:
            raise InputError(f"{path}:{no}: {parts[0]!r} is not a sequence of labels of the "
                             "original's vocabulary")
        if ids in seen:
            raise InputError(f"{path}:{no}: duplicate gram {parts[0]!r}")
        seen.add(ids)
        pats.append(ids)
        if len(columns) > 1:
            try:
                v = float(parts[1])
            except ValueError:
                v = math.nan
            if not math.isfinite(v):
                raise InputError(f"{path}:{no}: {columns[1]} {parts[1]!r} is not a finite number")
            vals.append(v)
    return pats, vals


def release_threshold(report: dict, n_sequences: int, threshold: float | None,
                      name: str = "threshold") -> int | None:
    """Absolute support threshold: ``threshold`` (relative), else the report's parameters.

    Parameters
    ----------
    report : dict
        The release's report: its ``parameters``' ``min_support`` (absolute,
        at least 1), else ``threshold``, ``relative_threshold`` or ``theta``
        (relative, in ``(0, 1]``) are used, the first such found.
    n_sequences : int
        Sequences of the original data.
    threshold : float or None
        A relative threshold in ``(0, 1]`` that wins over the report's.
    name : str
        How messages name ``threshold``.

    Returns
    -------
    int or None
        The threshold in sequences (:func:`dpgpu.eval.truth.support_threshold`
        of a relative one, the ceiling of an absolute one), or None when
        neither gives one.

    Raises
    ------
    InvalidParameter
        ``threshold`` not a finite number in ``(0, 1]``.
    """
    if threshold is not None:
        return T.support_threshold(_check_theta(threshold, name), n_sequences)
    found = _report_threshold(report)
    if found is None:
        return None
    absolute, v = found
    return int(math.ceil(v)) if absolute else T.support_threshold(float(v), n_sequences)


def _report_threshold(report: dict) -> tuple[bool, float] | None:
    """The report's support threshold: ``(True, min_support)`` or ``(False, theta)``, or None."""
    params = report.get("parameters") or {}
    for absolute, keys, fits in ((True, _ABSOLUTE_KEYS, lambda v: v >= 1),
                                 (False, _RELATIVE_KEYS, lambda v: 0 < v <= 1)):
        for key in keys:
            v = params.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and fits(v):
                return absolute, v
    return None


def _check_theta(theta: Any, name: str) -> float:
    x = check_positive_real(theta, name)
    if x > 1:
        raise InvalidParameter(f"{name}: a relative threshold must lie in (0, 1], got {theta!r}")
    return x


# ---------------------------------------------------------------- evaluation
def sequence_tasks(release_dir: Any, tasks: Iterable[str] | None = None,
                   given: Iterable[str] = (), names: Mapping[str, str] | None = None
                   ) -> tuple[dict, dict[str, Path], list[str]]:
    """A sequence release's report, files and tasks to compute, from the release alone.

    :func:`evaluate_release` calls it before it reads the original, and
    ``dpgpu evaluate`` before it reads ``--original``.

    Parameters
    ----------
    release_dir : str or path-like
        The release directory.
    tasks : iterable of str, optional
        The tasks asked for (default all that the release allows).
    given : iterable of str
        The settings given, by keyword of :data:`SETTING_TASKS`; a
        ``threshold`` given lets the ``frequent`` task apply to synthetic data.
    names : mapping of str to str, optional
        How messages name the settings (as for :func:`evaluate_release`).

    Returns
    -------
    report : dict
        :func:`check_release_report`.
    files : dict of str to Path
        :func:`release_files`.
    chosen : list of str
        :func:`choose_tasks`.

    Raises
    ------
    InputError
        As :func:`check_release_report`, or for a spatial release.
    InvalidParameter
        As :func:`choose_tasks` and :func:`check_settings_apply`.
    """
    rdir = release_path(release_dir, "release_dir")
    report = check_release_report(rdir)
    files = release_files(rdir)
    if "leaves" in files:
        raise InputError(f"{rdir}: a spatial release ({LEAVES}); its original is a points file "
                         "(evaluate_spatial_release)")
    given = list(given)
    allowed = applicable_tasks(files, "threshold" in given
                               or _report_threshold(report) is not None)
    chosen = choose_tasks(tasks, allowed, rdir)
    check_settings_apply(given, chosen, allowed, report, files, names)
    return report, files, chosen


def evaluate_release(original: Any, release_dir: Any, *, tasks: Iterable[str] | None = None,
                     seed: int | None = None, n_queries: int | None = None,
                     query_sizes: Sequence[int] | None = None,
                     k_values: Sequence[int] | None = None, min_length: int | None = None,
                     threshold: float | None = None,
                     coverage_ks: Sequence[int] | None = None, backend: Any = None,
                     reader_options: dict | None = None,
                     original_name: str | None = None,
                     names: Mapping[str, str] | None = None) -> dict:
    """Compare a release directory with the original dataset it was made from.

    Parameters
    ----------
    original : SequenceDB, str or path-like
        The original (exact) data, or its file, read with
        :func:`dpgpu.load` and ``reader_options`` as ``dpgpu evaluate``
        reads ``--original`` (after the release directory is checked).
    release_dir : str or path-like
        A directory with ``report.json`` and release files; a release object
        in memory is refused (``release.save(path)`` writes one).
    tasks : list of str, optional
        Subset of :data:`TASKS`; default all that the files allow.
    seed : int, optional
        Seed of the random query workload (evaluation only; default
        :data:`SEED`).
    n_queries : int, optional
        Random count queries per maximal query size, at most
        :data:`dpgpu.eval.metrics.MAX_QUERIES` (default :data:`N_QUERIES`).
    query_sizes : sequence of int, optional
        Maximal query sizes (default the N-gram paper's 4, 8, 12, 16, 20); a
        list even for one size (``[8]``, not ``8``).  ``n_queries`` times their sum
        is at most :data:`dpgpu.eval.metrics.MAX_QUERY_ITEMS`
        (:func:`check_count_workload`).
    k_values : sequence of int, optional
        K of the top-K comparisons (default :data:`K_VALUES`), at most
        :data:`MAX_K`; a list even for one K (``[20]``).  Where the
        original has fewer patterns than K, the comparison is over those it
        has; where it has none, the scores are None (``n/a``), not perfect
        ones.  For an EM release (``em``) the default is its own ``k`` (the
        number of strings in :data:`TOPK`), and a K given may not exceed it
        (:func:`em_k_values`): the first K strings selected are compared.
    min_length : int, optional
        Shortest pattern in top-K lists.  Default: the papers' choices, 2 for
        ``top-k`` on synthetic data (size-1 patterns excluded, as in the
        N-gram paper) and 1 for the ``pst`` model's top-k strings (any
        length, as in PrivTree Section 6.2).  Above the longest sequence,
        no pattern qualifies (scores None) and nothing is mined.
    threshold : float, optional
        Relative support threshold for ``frequent`` (default: from the
        report's parameters ``threshold``/``theta``/``min_support``).
        The exact search for the truly frequent subsequences examines at
        most :data:`MAX_CANDIDATES` candidates (so do the top-K searches).
    coverage_ks : sequence of int, optional
        User-count thresholds K of the DPNE coverage (default
        :data:`COVERAGE_KS`); a list even for one K.
    backend : str or Backend, optional
        Where contiguous counts are computed.
        ``seed``, ``n_queries``, ``query_sizes``, ``k_values``, ``min_length``,
        ``threshold``, ``coverage_ks`` and ``backend`` are refused rather than ignored
        where no task computed uses them (:data:`SETTING_TASKS`,
        :func:`check_settings_apply`): ``k_values`` for a DPNE release, say.
    reader_options : dict, optional
        Reader options of the original (:func:`dpgpu.load`'s keywords): used
        to read it when ``original`` is a path.  The synthetic file is read
        with the options its report records; only for a release written
        before reports recorded them are these reused, for a synthetic file
        of the original's format.
    original_name : str, optional
        How to name the original in messages (default its source path).
    names : mapping of str to str, optional
        How messages name the settings, by keyword (default: by keyword;
        ``dpgpu evaluate`` gives its options, ``{"n_queries": "--queries"}``).

    Returns
    -------
    dict
        The evaluation (see :func:`write_evaluation`).

    Raises
    ------
    InvalidParameter
        ``original`` is neither a SequenceDB nor a path; ``release_dir`` is
        not a path; ``query_sizes``, ``k_values`` or ``coverage_ks`` is not a
        non-empty sequence of integers ``>= 1`` (a single number is refused);
        ``tasks`` is not a list of tasks the release allows; a setting that
        none of the tasks uses; or another setting is out of range, the
        maxima above included.
    InputError
        A release directory or original that cannot be read, a malformed
        ``report.json`` (:func:`check_release_report`), a spatial release, an
        original without items, or vocabularies that differ; a top-K or
        frequent-pattern search that needs more than :data:`MAX_CANDIDATES`
        candidates (naming the setting to change).
    """
    rdir = release_path(release_dir, "release_dir")
    if not isinstance(original, (SequenceDB, str, os.PathLike)):
        raise InvalidParameter(f"original: expected a SequenceDB (dpgpu.load(path)) or the path "
                               f"of the dataset, got {type(original).__name__}")
    given = [k for k, v in (("seed", seed), ("n_queries", n_queries),
                            ("query_sizes", query_sizes), ("k_values", k_values),
                            ("min_length", min_length), ("threshold", threshold),
                            ("coverage_ks", coverage_ks), ("backend", backend))
             if v is not None]
    n_queries, query_sizes = check_count_workload(
        n_queries, M.QUERY_SIZES if query_sizes is None else query_sizes, names)
    k_values = sorted(set(_positive_ints(K_VALUES if k_values is None else k_values,
                                         _option(names, "k_values"), maximum=MAX_K)))
    if min_length is not None:
        min_length = check_positive_int(min_length, _option(names, "min_length"))
    coverage_ks = sorted(set(_positive_ints(COVERAGE_KS if coverage_ks is None else coverage_ks,
                                            _option(names, "coverage_ks"))))
    seed = check_positive_int(SEED if seed is None else seed, _option(names, "seed"), minimum=0)
    tasks = None if tasks is None else choose_tasks(tasks, TASKS, rdir)  # names, before reading
    report, files, chosen = sequence_tasks(rdir, tasks, given, names)
    em_ks = em_k_values(files["topk"], k_values if "k_values" in given else None, names) \
        if "em" in chosen else None
    if not isinstance(original, SequenceDB):
        original = load(original, **(reader_options or {}))
    oname = original_name or str(original.source.get("path", "the original"))
    if original.n_events == 0:
        raise InputError(f"{oname}: holds no items ({len(original)} sequences); there is nothing "
                         "to compare the release with")
    check_vocabulary(report, original, rdir, oname)
    min_support = release_threshold(report, len(original), threshold,
                                    _option(names, "threshold"))

    ctx = _Context(original, backend, names)
    syn = None
    if "synthetic" in files and set(chosen) & {"count-queries", "top-k", "lengths", "frequent"}:
        syn = _load_synthetic(files["synthetic"], report, original, reader_options or {})
    results: dict[str, Any] = {}
    timings: dict[str, float] = {}
    for task in chosen:
        t0 = time.perf_counter()
        log.info("evaluate: %s", task)
        if task == "count-queries":
            results[task] = _count_queries(ctx, syn, query_sizes, n_queries, seed)
        elif task == "top-k":
            results[task] = _top_k(ctx, syn, k_values, min_length or 2)
        elif task == "lengths":
            results[task] = _lengths(ctx, syn)
        elif task == "pst":
            results[task] = _pst(ctx, files["pst"], k_values, min_length or 1, query_sizes,
                                 n_queries, seed)
        elif task == "em":
            results[task] = _em(ctx, files["topk"], report, em_ks)
        elif task == "ngrams":
            results[task] = _ngrams(ctx, files["ngrams"])
        elif task == "frequent":
            results[task] = _frequent(ctx, files.get("frequent"), syn, min_support)
        elif task == "coverage":
            if (report.get("input") or {}).get("users") and original.users is None:
                log.warning("evaluate: the release counted users (its input named them), but "
                            "%s is read without users: coverage is counted by sequences; "
                            "pass the reader option that names them (--user)", oname)
            results[task] = _coverage(ctx, files["kgrams"], coverage_ks,
                                      (report.get("parameters") or {}).get("max_n"))
        timings[task] = round(time.perf_counter() - t0, 3)
    return _evaluation(rdir, report, files,
                       {"path": oname, "format": original.source.get("format"),
                        "sequences": len(original), "items": original.vocab.size},
                       {"tasks": chosen, "seed": seed, "n_queries": n_queries,
                        "query_sizes": query_sizes, "k_values": k_values,
                        "min_length": min_length, "min_support": min_support,
                        "coverage_ks": coverage_ks},
                       results, timings)


def _evaluation(rdir: Path, report: dict, files: dict[str, Path], original: dict,
                settings: dict, results: dict, timings: dict) -> dict:
    """The evaluation document: not-private header, release, original, settings, results."""
    return {
        "private": False,
        "warning": WARNING,
        "dpgpu": __version__,
        "release": {"path": str(rdir), "mechanism": report.get("mechanism"),
                    "epsilon": report.get("epsilon"), "delta": report.get("delta"),
                    "files": sorted(p.name for p in files.values())},
        "original": original,
        "settings": settings,
        "tasks": results,
        "timings_s": timings,
    }


def _needs(task: str) -> str:
    return {"count-queries": "needs a synthetic dataset", "top-k": "needs a synthetic dataset",
            "lengths": "needs a synthetic dataset", "ngrams": "needs ngrams.tsv",
            "pst": f"needs {PST} (a PrivTree PST release)",
            "em": f"needs {TOPK} (an EM top-k release, dpgpu em-top-k)",
            "frequent": "needs frequent.tsv, or a synthetic dataset and --threshold",
            "coverage": "needs the ngrams.tsv of a DPNE release (columns k, gram)",
            "range-queries": f"needs {LEAVES} (a spatial release)"}[task]


class _Context:
    """The original data, the exact answers shared by several tasks, and how messages name
    the settings (:func:`_option`)."""

    def __init__(self, db: Any, backend: Any, names: Mapping[str, str] | None = None):
        self.db = db
        self.backend = backend
        self.names = names
        self._engine = None
        self._workload: tuple | None = None
        self.labels = db.vocab.labels

    @property
    def engine(self):
        if self._engine is None:
            from ..ops.grams import GramEngine

            self._engine = GramEngine(self.db, start=True, end=True, backend=self.backend)
        return self._engine

    def counts(self, patterns: Any, lengths: Any = None) -> np.ndarray:
        """Exact occurrence counts (:func:`dpgpu.eval.truth.pattern_counts`) in the original."""
        return T.pattern_counts(self.db, patterns, lengths=lengths, engine=self.engine)

    def option(self, key: str) -> str:
        """How messages name the setting ``key`` (:func:`_option`)."""
        return _option(self.names, key)

    def count_workload(self, sizes: Sequence[int], n_queries: int, seed: int
                       ) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
        """The random count queries (N-gram 6.2.1) and their exact answers, drawn once.

        All subsets come from one generator seeded with ``seed``, in the
        order of ``sizes``; every task that answers count queries (the
        synthetic data, the PST model) is judged on the same queries.  They
        are kept as arrays (:func:`dpgpu.eval.metrics.random_count_workload`),
        never as a Python object per query or item.

        Returns
        -------
        queries : list of (numpy.ndarray, numpy.ndarray)
            Per maximal size, its queries' items concatenated and their sizes.
        true : numpy.ndarray of int64
            The exact answers, one subset after the other.
        """
        key = (tuple(sizes), n_queries, seed)
        if self._workload is None or self._workload[0] != key:
            rng = np.random.default_rng(seed)
            qs = [M.random_count_workload(self.db.vocab.size, m, n_queries, seed=rng)
                  for m in sizes]
            # a pass per subset: its queries padded to its own maximal size, not the largest
            self._workload = (key, qs, np.concatenate([self.counts(*q) for q in qs]))
        return self._workload[1], self._workload[2]

    def label(self, pattern: Iterable[int]) -> str:
        return T.decode_pattern(self.db.vocab, pattern)


def _load_synthetic(path: Path, report: dict, original: Any, options: dict) -> Any:
    """The release's synthetic data, read as its report says (:func:`dpgpu.release.read_synthetic`).

    ``options`` (the original's reader options) are used only for a release written before
    reports recorded the synthetic file's own, and only where that file is in the original's
    format, but for ``user``: synthetic data has no users.  Items are matched with the
    original's by label, so the file is read on its own vocabulary, then numbered as the
    original numbers them (:func:`_numbered_as`).
    """
    fmt, recorded = synthetic_reading(report)
    opts = {k: v for k, v in options.items() if k != "user"} \
        if recorded is None and fmt is not None and fmt == original.source.get("format") else {}
    db = read_synthetic(path, report, **opts)
    log.info("evaluate: synthetic dataset %s: %d sequences", path.name, len(db))
    return _numbered_as(db, original.vocab)


def _numbered_as(db: SequenceDB, vocab: Vocabulary) -> SequenceDB:
    """``db`` with the item ids of ``vocab`` (labels ``vocab`` lacks come after its own, sorted).

    The top-K lists break ties between equal frequencies by item ids; numbering the
    synthetic data as the original is numbered makes both lists break them alike, so that
    identical data scores 1 whatever order a public vocabulary lists its items in.
    """
    numbered = Vocabulary(vocab.labels + sort_labels(set(db.vocab.labels) - set(vocab.labels)),
                          public=db.vocab.public)
    ids = numbered.encode(db.vocab.labels, markers=())
    return SequenceDB(ids[db.items], db.offsets, numbered, users=db.users, source=db.source)


def _to_vocab(patterns: Sequence[Sequence[str]], vocab: Any) -> tuple[list, np.ndarray]:
    """Encode label patterns in ``vocab``; returns encoded list and the mask of encodable ones."""
    enc, ok = [], np.zeros(len(patterns), dtype=bool)
    for i, p in enumerate(patterns):
        try:
            enc.append(tuple(vocab.id_of(x) for x in p))
            ok[i] = True
        except KeyError:
            pass
    return enc, ok


def _labels(db: Any, patterns: Iterable[Iterable[int]]) -> list[tuple[str, ...]]:
    return [db.vocab.decode(p) for p in patterns]


def _count_queries(ctx: _Context, syn: Any, sizes: Sequence[int], n_queries: int,
                   seed: int) -> dict:
    # the synthetic data numbers the original's items as the original does (_numbered_as)
    qs, true = ctx.count_workload(sizes, n_queries, seed)
    est = np.concatenate([T.pattern_counts(syn, items, lengths=lengths, backend=ctx.backend)
                          for items, lengths in qs])
    return {**_count_errors(ctx, est, true, sizes, n_queries, seed),
            "synthetic_sequences": len(syn)}


def _count_errors(ctx: _Context, est: np.ndarray, true: np.ndarray, sizes: Sequence[int],
                  n_queries: int, seed: int) -> dict:
    """Relative errors (sanity bound 0.1 % of |D|) per maximal query size."""
    bound = M.sanity_bound(len(ctx.db))
    err = M.relative_errors(est, true, bound)
    by_size = {}
    for i, m in enumerate(sizes):
        part = slice(i * n_queries, (i + 1) * n_queries)
        by_size[str(m)] = {**M.summarize(err[part]),
                           "nonzero_true": int(np.count_nonzero(true[part]))}
    return {"sanity_bound": bound, "n_queries": n_queries, "seed": seed,
            "query_items": "uniform with replacement over the item universe",
            "by_max_size": by_size}


@contextlib.contextmanager
def _candidate_limit(search: str, change: str) -> Iterator[None]:
    """Word a :class:`dpgpu.eval.truth.CandidateLimit` met by ``search`` (what was searched,
    for the message) as an error whose first word ``change`` names the setting to change."""
    try:
        yield
    except T.CandidateLimit as exc:
        raise InputError(f"{change}: finding {search} needs more than the {exc.limit:,} "
                         f"candidate patterns allowed ({exc.candidates:,} up to length "
                         f"{exc.length}); change {change}") from None


def _top_k(ctx: _Context, syn: Any, k_values: Sequence[int], min_length: int) -> dict:
    kmax = max(k_values)
    out = {"min_length": min_length}
    change = f"{ctx.option('k_values')} or {ctx.option('min_length')}"
    for kind, fn in (("strings", T.top_k_strings), ("subsequences", T.top_k_subsequences)):
        kw = {"backend": ctx.backend} if kind == "strings" else \
            {"max_candidates": MAX_CANDIDATES}
        with _candidate_limit(f"the exact top-{kmax} {kind} of length >= {min_length}", change):
            tp, tc = fn(ctx.db, kmax, min_length=min_length, **kw)
            sp, sc = fn(syn, kmax, min_length=min_length, **kw) if len(syn) else \
                ([], np.zeros(0))
        tl = _labels(ctx.db, tp)
        rows = _top_k_rows(tl, tc, _labels(syn, sp), sc, k_values, "true_positive_ratio")
        out[kind] = {"frequency": "occurrences" if kind == "strings" else "supporting sequences",
                     "by_k": rows,
                     "top": [[" ".join(p), int(c)] for p, c in zip(tl[:10], tc[:10].tolist())]}
    return out


def _top_k_rows(true_top: list, true_freq: np.ndarray, released_top: list,
                released_freq: np.ndarray, k_values: Sequence[int], ratio: str) -> dict:
    """Per K: the share of the true top-K that the released top-K holds (named ``ratio``)
    and the utility loss of the released frequencies; both None where the original has no
    pattern to compare (``available`` 0)."""
    rows = {}
    for k in k_values:
        true_k = dict(zip(true_top[:k], true_freq[:k].tolist()))
        rel_k = dict(zip(released_top[:k], released_freq[:k].tolist()))
        # over min(K, patterns that exist): a perfect release scores 1 on data with fewer
        rows[str(k)] = {ratio: M.true_positive_ratio(true_k, rel_k),
                        "utility_loss": M.utility_loss(true_k, rel_k), "available": len(true_k)}
    return rows


def _lengths(ctx: _Context, syn: Any) -> dict:
    p = T.length_distribution(ctx.db)
    q = T.length_distribution(syn) if len(syn) else np.zeros(1, dtype=np.int64)
    tvd = M.total_variation_distance(p, q) if q.sum() > 0 else 1.0
    return {"total_variation_distance": tvd,
            "original": {"sequences": len(ctx.db), "mean": float(ctx.db.lengths.mean()),
                         "max": ctx.db.max_length},
            "synthetic": {"sequences": len(syn),
                          "mean": float(syn.lengths.mean()) if len(syn) else 0.0,
                          "max": syn.max_length},
            "histogram_original": _head(p), "histogram_synthetic": _head(q)}


def _head(hist: np.ndarray, n: int = 50) -> list[int]:
    """The first ``n`` bins; everything longer is summed into the last one."""
    h = hist.tolist()
    if len(h) <= n:
        return h
    return h[:n - 1] + [int(sum(h[n - 1:]))]


def read_pst(path: Path, vocab: Any) -> tuple[list[Any], int]:
    """The levels of a released PST, read from its ``pst.json`` (``PSTRelease.save``).

    Parameters
    ----------
    path : Path
    vocab : Vocabulary
        The original's vocabulary; ``pst.json``'s ``symbols`` must be its
        labels followed by ``&``.

    Returns
    -------
    levels : list of PSTLevel
        One per depth, with the noisy histograms (contexts oldest symbol
        first, ``$`` is ``vocab.size + 1``).
    l_top : int

    Raises
    ------
    InputError
        Not JSON, other symbols, a bad ``l_top``, or a node whose context,
        depth or histogram is malformed (naming the node); depths that are
        not ``0 .. H`` with one root; a context given twice.
    """
    from ..mechanisms.privtree.pst import PSTLevel

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None
    labels = list(vocab.labels)
    if not isinstance(doc, dict) or doc.get("symbols") != labels + ["&"]:
        raise InputError(f"{path}: symbols are not the original's {len(labels)} items followed "
                         "by '&'; was it made from another dataset?")
    l_top = doc.get("l_top")
    if not isinstance(l_top, int) or isinstance(l_top, bool) or l_top < 1:
        raise InputError(f"{path}: l_top must be a positive integer, got {l_top!r}")
    nodes = doc.get("nodes")
    if not isinstance(nodes, list):
        raise InputError(f"{path}: no list of nodes")
    start, ids = doc.get("start_marker", "$"), {x: i for i, x in enumerate(labels)}
    beta = len(labels) + 1
    by_depth: dict[int, tuple[list, list, list]] = {}
    for no, node in enumerate(nodes):
        try:
            ctx, hist = node["context"], node["hist"]
            row = [len(labels) + 1 if j == 0 and c == start else ids[c]
                   for j, c in enumerate(ctx)]
            if node.get("depth", len(row)) != len(row):
                raise ValueError("depth is not the context's length")
            if (len(hist) != beta or not all(isinstance(v, int) and not isinstance(v, bool)
                                             and v >= 0 for v in hist)):
                raise ValueError(f"hist must be {beta} counts >= 0")
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{path}: node {no}: malformed ({type(exc).__name__}: {exc})"
                             ) from None
        level = by_depth.setdefault(len(row), ([], [], []))
        level[0].append(row)
        level[1].append(hist)
        level[2].append(bool(node.get("leaf", True)))
    if sorted(by_depth) != list(range(len(by_depth))) or len(by_depth.get(0, ([],))[0]) != 1:
        raise InputError(f"{path}: the nodes must fill depths 0 .. H with one root")
    levels = []
    for depth in range(len(by_depth)):
        rows, hists, leaf = by_depth[depth]
        ctx = np.asarray(rows, dtype=np.int32).reshape(len(rows), depth)
        if np.unique(ctx, axis=0).shape[0] != len(rows):
            raise InputError(f"{path}: a context of depth {depth} is given twice")
        n = len(rows)
        levels.append(PSTLevel(ctx, np.zeros(n, dtype=np.int64), np.asarray(leaf, dtype=bool),
                               np.full(n, -1, dtype=np.int64),
                               np.asarray(hists, dtype=np.int64).reshape(n, beta)))
    return levels, l_top


def _model_estimates(model: Any, queries: Sequence[tuple[np.ndarray, np.ndarray]]
                     ) -> np.ndarray:
    """Eq. 12 estimates of the count queries: :meth:`Model.estimate
    <dpgpu.mechanisms.privtree.sampling.Model.estimate>`'s products, all lengths at once.

    Position by position over the queries of each subset (items concatenated, and their
    sizes): the count of a query's first item at the root, times at each further position the
    probability of its item after the items before it, of which only the last ``height - 1``
    can lead to a node.  A query that has ended, or whose estimate is already 0, drops out:
    the work follows the items that are multiplied, not the number of queries times the
    longest, nor a batch per length.
    """
    xp = model.be.xp
    out = []
    for items, lengths in queries:
        starts = np.cumsum(lengths) - lengths
        est = to_numpy(model.hist[0, xp.asarray(items[starts])]).astype(np.float64)
        for i in range(1, int(lengths.max())):
            act = np.flatnonzero((lengths > i) & (est > 0))
            if act.size == 0:
                break
            ctx = items[starts[act, None] + np.arange(i - min(i, model.height - 1), i)]
            p = to_numpy(model.conditional(xp.asarray(ctx)))
            est[act] *= p[np.arange(act.size), items[starts[act] + i]]
        out.append(est)
    return np.concatenate(out)


def _model_top_k(ctx: _Context, model: Any, k: int, min_length: int, l_top: int
                 ) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """The model's top-``k`` strings of length ``min_length .. l_top`` by Eq. 12 (none when
    ``min_length > l_top``), refused where its search could grow past :data:`MAX_CANDIDATES`.

    The search (:meth:`Model.top_k <dpgpu.mechanisms.privtree.sampling.Model.top_k>`) extends
    every string with a positive estimate until ``min_length``, so up to ``n ** min_length``
    strings for ``n`` items, and then the best ``k``, so ``k n`` strings a length.
    """
    if min_length > l_top:
        return [], np.zeros(0)
    n = ctx.db.vocab.size
    if min_length > 1 and min_length * math.log(n) > math.log(MAX_CANDIDATES):
        raise InvalidParameter(
            f"{ctx.option('min_length')}: the PST model's top-K search extends every string "
            f"shorter than {min_length}: up to {n} ** {min_length} strings of {n} items, more "
            f"than the {MAX_CANDIDATES:,} allowed; lower {ctx.option('min_length')}")
    if k * n > MAX_CANDIDATES:
        raise InvalidParameter(
            f"{ctx.option('k_values')}: the PST model's top-{k} search extends {k} strings by "
            f"each of {n} items, {k * n:,} strings, more than the {MAX_CANDIDATES:,} allowed; "
            f"lower {ctx.option('k_values')}")
    return model.top_k(k, min_length=min_length, max_length=l_top)


def _pst(ctx: _Context, path: Path, k_values: Sequence[int], min_length: int,
         sizes: Sequence[int], n_queries: int, seed: int) -> dict:
    from ..mechanisms.privtree.sampling import Model

    db = ctx.db
    levels, l_top = read_pst(path, db.vocab)
    model = Model(levels, db.vocab.size, ctx.backend)
    kmax = max(k_values)
    mp, mc = _model_top_k(ctx, model, kmax, min_length, l_top)
    tp, tc = T.top_k_strings(db, kmax, min_length=min_length, backend=ctx.backend)
    ml = _labels(db, mp)
    rows = _top_k_rows(_labels(db, tp), tc, ml, mc, k_values, "precision")
    qs, true = ctx.count_workload(sizes, n_queries, seed)
    n_est = model.sequence_count()
    return {"l_top": l_top, "nodes": int(sum(lvl.hist.shape[0] for lvl in levels)),
            "depth": len(levels) - 1,
            "sequences": {"estimated": n_est, "original": len(db),
                          "relative_error": abs(n_est - len(db)) / max(len(db), 1)},
            "top_k": {"min_length": min_length, "frequency": "occurrences",
                      "estimates": "Eq. 12 of the released histograms", "by_k": rows,
                      "top": [[" ".join(p), float(c)] for p, c in zip(ml[:10], mc[:10].tolist())]},
            "count_queries": _count_errors(ctx, _model_estimates(model, qs), true, sizes,
                                           n_queries, seed)}


def em_k_values(path: Path, k_values: Sequence[int] | None,
                names: Mapping[str, str] | None = None) -> list[int]:
    """The K of an EM release's top-K comparisons, checked against the strings it selected.

    Read before the original: only the number of strings of :data:`TOPK` is
    looked at.

    Parameters
    ----------
    path : Path
        The release's :data:`TOPK`.
    k_values : sequence of int or None
        The K given (checked integers ``>= 1``), or None for the release's
        own ``k``.
    names : mapping of str to str, optional
        How messages name ``k_values`` (``--k`` on the command line).

    Returns
    -------
    list of int
        ``k_values`` sorted, or ``[k]`` with ``k`` the strings released (at
        most :data:`MAX_K`).

    Raises
    ------
    InputError
        :data:`TOPK` cannot be read, or holds no string.
    InvalidParameter
        A K larger than the strings released, naming ``k_values``: EM's
        precision at K compares its first K selections, and it made ``k``.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()[1:]
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None
    n = sum(1 for line in lines if line.rstrip("\r"))
    if n == 0:
        raise InputError(f"{path}: no string (an EM release selects k >= 1 strings)")
    if k_values is None:
        return [min(n, MAX_K)]
    ks = sorted(set(k_values))
    if ks[-1] > n:
        option = _option(names, "k_values")
        raise InvalidParameter(f"{option}: {ks[-1]} is more than the {n} strings this EM "
                               f"release selected (its k); its top-K precision compares the "
                               f"first K strings selected: give K values up to {n}")
    return ks


def read_topk(path: Path, vocab: Any) -> list[tuple[int, ...]]:
    """The strings of an EM release's :data:`TOPK` (columns ``rank``, ``string``), in rank order.

    Parameters
    ----------
    path : Path
    vocab : Vocabulary
        The original's vocabulary.

    Returns
    -------
    list of tuple of int
        The strings (item ids), rank 1 first.

    Raises
    ------
    InputError
        As :func:`read_gram_file` (header, unknown label, duplicate string),
        a string holding a marker, or ranks other than ``1, 2, ...`` in order.
    """
    pats, ranks = read_gram_file(path, vocab, ("string", "rank"))
    bad = [p for p in pats if max(p) >= vocab.size]
    if bad:
        raise InputError(f"{path}: string {T.decode_pattern(vocab, bad[0])!r} holds a marker; "
                         "EM selects strings of items")
    if ranks != [float(r) for r in range(1, len(ranks) + 1)]:
        raise InputError(f"{path}: the ranks must be 1, 2, ... in order, one per string")
    return pats


def _em(ctx: _Context, path: Path, report: dict, k_values: Sequence[int]) -> dict:
    """Precision of an EM release's top-K strings (PrivTree Section 6.2, Fig. 6).

    The strings EM ranks over are the contiguous strings of items (any length,
    no markers), each counted by its occurrences; the release selects them on
    the data cut to ``l_top`` items per sequence (its report's parameter).
    Per K, over the first K strings selected: ``precision`` against the exact
    top-K of the original (the paper's ``|K(D) & A(D)| / k``), ``precision_cut``
    against the exact top-K of the cut data (the ranking EM approximates, so
    the loss to noise alone), and ``truncate_precision``, the paper's
    non-private Truncate baseline (the cut data's exact top-K against the
    original's).  As for the other top-K tasks, a ratio is over
    ``min(K, strings that exist)``, and ties between equal counts in an
    exact top-K are broken by length, then item ids (:func:`dpgpu.eval.truth.top_k_strings`).
    """
    db = ctx.db
    l_top = (report.get("parameters") or {}).get("l_top")
    if not isinstance(l_top, int) or isinstance(l_top, bool) or l_top < 1:
        raise InputError(f"{path.parent / REPORT}: parameters.l_top: expected a positive "
                         f"integer (the items EM kept per sequence), got {l_top!r}")
    selected = read_topk(path, db.vocab)
    kmax = max(k_values)
    tp, tc = T.top_k_strings(db, kmax, backend=ctx.backend)
    cp, cc = T.top_k_strings(db, kmax, l_max=l_top, backend=ctx.backend)
    rows = {}
    for k in k_values:
        true_k, cut_k, rel_k = tp[:k], cp[:k], selected[:k]
        rows[str(k)] = {"precision": M.topk_precision(true_k, rel_k),
                        "precision_cut": M.topk_precision(cut_k, rel_k),
                        "truncate_precision": M.topk_precision(true_k, cut_k),
                        "available": len(true_k), "available_cut": len(cut_k)}
    shown = selected[:10]
    exact = ctx.counts(shown) if shown else np.zeros(0, dtype=np.int64)
    return {"l_top": l_top, "selected": len(selected), "frequency": "occurrences",
            "by_k": rows,
            "top": [[ctx.label(p), int(c)] for p, c in zip(tp[:10], tc[:10].tolist())],
            "released": [[ctx.label(p), int(c)] for p, c in zip(shown, exact.tolist())]}


def _ngrams(ctx: _Context, path: Path) -> dict:
    pats, vals = read_gram_file(path, ctx.db.vocab, ("gram", "count"))
    bound = M.sanity_bound(len(ctx.db))
    true = ctx.counts(pats)
    err = M.relative_errors(np.array(vals, dtype=np.float64), true, bound)
    lens = np.array([len(p) for p in pats], dtype=np.int64)
    by_len = {str(n): {**M.summarize(err[lens == n]),
                       "absent_from_original": int(np.count_nonzero(true[lens == n] == 0))}
              for n in sorted(set(lens.tolist()))}
    worst = np.argsort(-err, kind="stable")[:5]
    return {"sanity_bound": bound, "released_grams": len(pats), "overall": M.summarize(err),
            "absent_from_original": int(np.count_nonzero(true == 0)), "by_length": by_len,
            "worst": [[ctx.label(pats[i]), vals[i], int(true[i])] for i in worst.tolist()]}


def _prf_block(true_set: dict, released: dict, true_support: dict) -> dict:
    p, r, f = M.precision_recall_fscore(true_set, released)
    re = M.support_relative_errors(released, true_support)
    true_by_len: dict[int, list] = {}
    released_by_len: dict[int, list] = {}
    for patterns, groups in ((true_set, true_by_len), (released, released_by_len)):
        for x in patterns:  # one pass: distinct patterns, grouped by length
            groups.setdefault(len(x), []).append(x)
    by_len = {}
    for n in sorted(true_by_len.keys() | released_by_len.keys()):
        tn, rn = true_by_len.get(n, []), released_by_len.get(n, [])
        pn, rcn, fn = M.precision_recall_fscore(tn, rn)
        by_len[str(n)] = {"precision": pn, "recall": rcn, "f_score": fn,
                          "true": len(tn), "released": len(rn)}
    return {"precision": p, "recall": r, "f_score": f, "true_frequent": len(true_set),
            "released": len(released),
            "relative_error": {"median": M.summarize(re)["median"],
                               "mean": M.summarize(re)["mean"]},
            "by_length": by_len}


def _frequent(ctx: _Context, path: Path | None, syn: Any, min_support: int | None) -> dict:
    db = ctx.db
    out: dict[str, Any] = {"min_support": min_support,
                           "relative_threshold": (min_support / len(db)
                                                  if min_support and len(db) else None)}
    true_set: dict | None = None
    change = ctx.option("threshold")
    search = f"the subsequences of the {{}} held by >= {min_support} sequences"
    if min_support is not None:
        with _candidate_limit(search.format("original"), change):
            tp, ts = T.frequent_subsequences(db, min_support, max_candidates=MAX_CANDIDATES)
        true_set = dict(zip(tp, ts.tolist()))
    if path is not None:
        pats, vals = read_gram_file(path, db.vocab, ("pattern", "support"))
        bad = [p for p in pats if max(p) >= db.vocab.size]
        if bad:
            raise InputError(f"{path}: pattern {ctx.label(bad[0])!r} holds a marker; frequent "
                             "subsequences are made of items")
        released = dict(zip(pats, vals))
        tsup = dict(zip(pats, T.subsequence_supports(db, pats).tolist()))
        if true_set is None:
            re = M.support_relative_errors(released, tsup)
            out["release"] = {"released": len(released),
                              "relative_error": {"median": M.summarize(re)["median"],
                                                 "mean": M.summarize(re)["mean"]},
                              "note": "no support threshold (report parameters or "
                                      "--threshold): precision/recall not computed"}
        else:
            out["release"] = _prf_block(true_set, released, {**true_set, **tsup})
    if syn is not None and min_support is not None:
        with _candidate_limit(search.format("synthetic data"), change):
            sp, ss = T.frequent_subsequences(syn, min_support, max_candidates=MAX_CANDIDATES) \
                if len(syn) else ([], np.zeros(0))
        enc, ok = _to_vocab(_labels(syn, sp), db.vocab)
        released = {p: v for p, v, good in zip(enc, ss.tolist(), ok.tolist()) if good}
        tsup = dict(zip(released, T.subsequence_supports(db, list(released)).tolist())) \
            if released else {}
        out["synthetic"] = _prf_block(true_set or {}, released, tsup)
    return out


def _coverage(ctx: _Context, path: Path, coverage_ks: Sequence[int],
              max_n: int | None = None) -> dict:
    """K-anonymity coverage and spurious share of a DPNE release, per gram length and overall.

    The definitions of :func:`dpgpu.eval.metrics.kanonymity_coverage` and
    :func:`dpgpu.eval.metrics.spurious_fraction`, computed on arrays: per
    length, the holders of every gram of the original
    (:func:`dpgpu.eval.truth.gram_user_counts`) and of each released gram.
    The lengths are 1 .. ``max_n`` (the release's parameter), so that a
    length the release reached with no gram counts as uncovered; without
    it, those present in the release (length 1 when none is).  A coverage
    is None (``n/a`` in the table) where no gram of the original reaches K.
    """
    db = ctx.db
    pats, _ = read_gram_file(path, db.vocab, ("gram",))
    bad = [p for p in pats if max(p) >= db.vocab.size]
    if bad:
        raise InputError(f"{path}: gram {ctx.label(bad[0])!r} holds a marker; k-grams are made "
                         "of items")
    counts = {}
    by_length = _grams_by_length(pats)
    lengths = range(1, max_n + 1) if isinstance(max_n, int) and max_n >= 1 else \
        (sorted(by_length) or [1])
    for n in sorted(set(lengths) | set(by_length)):
        released = by_length.get(n, np.zeros((0, n), dtype=np.int32))
        log.info("evaluate: coverage: the holders of every %d-gram", n)
        grams, holders = T.gram_user_counts(db, n)
        counts[n] = _coverage_counts(released, grams, holders, coverage_ks, db.vocab.size)
    total = {"released": sum(c["released"] for c in counts.values()),
             "absent": sum(c["absent"] for c in counts.values()),
             "eligible": {K: sum(c["eligible"][K] for c in counts.values()) for K in coverage_ks},
             "covered": {K: sum(c["covered"][K] for c in counts.values()) for K in coverage_ks}}
    rows = {str(n): {"released": c["released"], **_coverage_shares(c),
                     "eligible": {str(K): v for K, v in c["eligible"].items()}}
            for n, c in counts.items()}
    return {"count_by": "distinct users" if db.users is not None else "distinct sequences",
            "released": total["released"], "by_k": rows, **_coverage_shares(total),
            "note": "coverage over gram lengths " + ", ".join(rows)}


def _grams_by_length(pats: Sequence[tuple[int, ...]]) -> dict[int, np.ndarray]:
    """The patterns as one ``(count, n)`` int32 matrix per length ``n``, by increasing ``n``."""
    by_n: dict[int, list[tuple[int, ...]]] = {}
    for p in pats:
        by_n.setdefault(len(p), []).append(p)
    return {n: np.array(by_n[n], dtype=np.int32).reshape(-1, n) for n in sorted(by_n)}


def _coverage_counts(released: np.ndarray, grams: np.ndarray, holders: np.ndarray,
                     coverage_ks: Sequence[int], n_items: int) -> dict:
    """Counts behind the coverage of one gram length.

    Parameters
    ----------
    released : numpy.ndarray of int, shape (R, n)
        Distinct released grams.
    grams, holders : numpy.ndarray
        Every gram of the original and its holders (:func:`dpgpu.eval.truth.gram_user_counts`).
    coverage_ks : sequence of int
    n_items : int
        Size of the vocabulary both sets of grams are written in.

    Returns
    -------
    dict
        ``released`` (R), ``absent`` (released grams nobody holds), and per
        K ``eligible`` (grams held by >= K) and ``covered`` (those released).
    """
    from ..ops.lookup import GramIndex

    row = GramIndex(grams, n_items).find(released)
    held = np.zeros(released.shape[0], dtype=np.int64)
    hit = row >= 0
    held[hit] = holders[row[hit]]
    return {"released": int(released.shape[0]), "absent": int(np.count_nonzero(~hit)),
            "eligible": {K: int(np.count_nonzero(holders >= K)) for K in coverage_ks},
            "covered": {K: int(np.count_nonzero(held >= K)) for K in coverage_ks}}


def _coverage_shares(counts: dict) -> dict:
    """``spurious_fraction`` and ``coverage`` per K of :func:`_coverage_counts`
    (:func:`dpgpu.eval.metrics.spurious_share`, :func:`~dpgpu.eval.metrics.covered_share`)."""
    eligible = counts["eligible"]
    return {"spurious_fraction": M.spurious_share(counts["absent"], counts["released"]),
            "coverage": {str(K): M.covered_share(counts["covered"][K], eligible[K])
                         for K in eligible}}


# ------------------------------------------------------------------- spatial
def evaluate_spatial_release(points_path: Any, release_dir: Any, *,
                             columns: str | Sequence[str] | None = None,
                             format: str | None = None, tasks: Iterable[str] | None = None,
                             seed: int | None = None, n_queries: int | None = None,
                             workload: dict[str, Any] | None = None,
                             original_name: str | None = None,
                             names: Mapping[str, str] | None = None) -> dict:
    """Compare a spatial release (``leaves.csv``) with the points it was made from.

    Range-count queries of PrivTree Section 6.1: for each query box, the
    exact number of original points (:func:`dpgpu.eval.truth.range_counts`)
    against the release's estimate under uniformity inside each leaf
    (:func:`dpgpu.eval.metrics.histogram_range_estimates`); the relative
    error has the sanity bound 0.1 % of the points.  Original points outside
    the release's domain are clipped onto it, as the mechanism does.

    Parameters
    ----------
    points_path : str or path-like
        The original points file (CSV or Parquet, see
        :func:`dpgpu.data.points.read_points`); an array of points is
        refused (save it as CSV with the release's column names first).
    release_dir : str or path-like
        A directory with ``report.json`` (``parameters.columns`` and
        ``domain.bounds``) and ``leaves.csv``; a release object in memory is
        refused (``release.save(path)`` writes one).
    columns : str or sequence of str, optional
        The original's coordinate columns, in the release's order (default:
        the column names recorded in the report).
    format : {"csv", "parquet"}, optional
        The original's format, checked against its content.
    tasks : iterable of str, optional
        Only ``"range-queries"`` applies.
    seed : int, optional
        Seed of the random query boxes (evaluation only; default :data:`SEED`).
    n_queries : int, optional
        Boxes per query set (small, medium, large; default :data:`N_QUERIES`,
        as the paper), at most :data:`dpgpu.eval.metrics.MAX_QUERIES`.
    workload : dict of str to (Q, 2 d) array, optional
        Query boxes ``(lo_1, .., lo_d, hi_1, .., hi_d)`` per set (in 2-D
        ``(x0, y0, x1, y1)``), instead of the random ones.
    original_name : str, optional
        How to name the original in messages (default its path).
    names : mapping of str to str, optional
        How messages name the settings, by keyword (as for
        :func:`evaluate_release`).

    Returns
    -------
    dict
        The evaluation (see :func:`write_evaluation`).

    Raises
    ------
    InputError
        Not a spatial release, a malformed report (:func:`check_release_report`)
        or one without columns or bounds, a bad ``leaves.csv``, or an
        original that is not a points file with the columns.
    InvalidParameter
        ``points_path`` or ``release_dir`` that is not a path; bad
        ``columns``, ``format``, ``tasks``, ``seed`` or ``n_queries``.
    """
    rdir = release_path(release_dir, "release_dir")
    if not isinstance(points_path, (str, os.PathLike)):
        raise InvalidParameter(f"points_path: expected the path of the original points file "
                               f"(CSV or Parquet), got {type(points_path).__name__}")
    report = check_release_report(rdir)
    files = release_files(rdir)
    if "leaves" not in files:
        raise InputError(f"{rdir}: not a spatial release (no {LEAVES})")
    coords, bounds = spatial_layout(report, rdir)
    chosen = choose_tasks(tasks, ["range-queries"], rdir)
    n_queries = check_positive_int(N_QUERIES if n_queries is None else n_queries,
                                   _option(names, "n_queries"), maximum=M.MAX_QUERIES)
    seed = check_positive_int(SEED if seed is None else seed, _option(names, "seed"), minimum=0)
    cols = coords if columns is None else parse_columns(columns)
    if len(cols) != len(coords):
        raise InvalidParameter(f"{_option(names, 'columns')}: the release has {len(coords)} "
                               f"coordinates ({', '.join(coords)}), got {len(cols)}")
    oname = original_name or str(points_path)
    points = read_original_points(points_path, cols, format, oname)
    leaves = read_leaves(files["leaves"], coords)
    t0 = time.perf_counter()
    log.info("evaluate: range-queries")
    queries = range_workload(bounds, n_queries, seed) if workload is None else workload
    results = {"range-queries": _range_queries(points, bounds, leaves, queries)}
    return _evaluation(rdir, report, files,
                       {"path": oname, "format": format, "points": int(points.shape[0]),
                        "columns": cols},
                       {"tasks": chosen, "seed": seed, "n_queries": n_queries,
                        "workload": "random" if workload is None else "given"},
                       results, {"range-queries": round(time.perf_counter() - t0, 3)})


def spatial_layout(report: dict, release_dir: Any) -> tuple[list[str], np.ndarray]:
    """Coordinate names and public domain ``(d, 2)`` recorded in a spatial release's report.

    Parameters
    ----------
    report : dict
        The release's report.
    release_dir : str or path-like
        The release directory, for messages.

    Returns
    -------
    columns : list of str
        The coordinate columns (``parameters.columns``), ``d`` of them.
    bounds : numpy.ndarray of float, shape (d, 2)
        The domain (``domain.bounds``), a ``[lo, hi]`` row per column.

    Raises
    ------
    InputError
        When ``parameters.columns`` or ``domain.bounds`` is missing or malformed.
    """
    where = Path(release_dir) / REPORT
    names = (report.get("parameters") or {}).get("columns")
    if not (isinstance(names, list) and names and all(isinstance(c, str) for c in names)):
        raise InputError(f"{where}: no parameters.columns; cannot tell which columns of the "
                         "original are the coordinates")
    try:
        bounds = check_bounds((report.get("domain") or {}).get("bounds"), len(names))
    except InvalidParameter as exc:
        raise InputError(f"{where}: domain.{exc}") from None
    return names, bounds


def read_original_points(path: Any, columns: Sequence[str], format: str | None,
                         name: str) -> np.ndarray:
    """The original points ``(n, d)`` of a spatial release, from the named columns.

    Parameters
    ----------
    path : str or path-like
        The original points file (CSV or Parquet).
    columns : sequence of str
        The coordinate columns (:func:`spatial_layout`).
    format : str or None
        ``"csv"`` or ``"parquet"`` to require that format; None to take the
        file as it is.
    name : str
        The file, for messages.

    Returns
    -------
    numpy.ndarray of float64, shape (n, d)
        At least one point.

    Raises
    ------
    InvalidParameter
        ``format`` is not one of :data:`POINT_FORMATS`.
    InputError
        The file is not a points file of that format with the columns, or holds no point.
    """
    if format is not None and format not in POINT_FORMATS:
        raise InvalidParameter(f"format: the original of a spatial release is a points file "
                               f"({' or '.join(POINT_FORMATS)}), not {format!r}")
    try:
        if format is not None and _is_parquet(path) != (format == "parquet"):
            raise InputError(f"{name}: not a {format} file")
        pts = read_points(path, columns)
    except InputError as exc:
        raise InputError(f"the original is not a points file with the columns "
                         f"{', '.join(columns)}: {exc}") from None
    if pts.shape[0] == 0:
        raise InputError(f"{name}: no points")
    return pts


def _is_parquet(path: Any) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None


def read_leaves(path: Path, columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Leaf boxes and noisy counts of a ``leaves.csv`` (``lo_<c>``, ``hi_<c>``, ``count``).

    Parameters
    ----------
    path : Path
        The ``leaves.csv`` file.
    columns : sequence of str
        The coordinate names ``c``, in the order of the output's columns.

    Returns
    -------
    lo, hi : numpy.ndarray of float64, shape (L, d)
    counts : numpy.ndarray of float64, shape (L,)

    Raises
    ------
    InputError
        Missing columns, a value that is not a finite number, or a box with
        ``lo >= hi`` (naming the file and line).
    """
    want = [f"{side}_{c}" for c in columns for side in ("lo", "hi")] + ["count"]
    try:
        rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None
    header = rows[0] if rows else []
    if not set(want) <= set(header):
        raise InputError(f"{path}:1: expected a header with the columns {','.join(want)}")
    where = [header.index(c) for c in want]
    values = []
    for no, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        try:
            v = [float(row[i]) for i in where]
        except (ValueError, IndexError):
            v = [math.nan]
        if not all(math.isfinite(x) for x in v):
            raise InputError(f"{path}:{no}: {','.join(want)} need finite numbers")
        if any(a >= b for a, b in zip(v[0:-1:2], v[1:-1:2])):
            raise InputError(f"{path}:{no}: an empty box (lo >= hi)")
        values.append(v)
    table = np.asarray(values, dtype=np.float64).reshape(-1, len(want))
    return table[:, 0:-1:2], table[:, 1:-1:2], table[:, -1]


def range_workload(bounds: Any, n_queries: int, seed: int) -> dict[str, np.ndarray]:
    """PrivTree's small / medium / large range-query sets over a domain ``(d, 2)``, any ``d``.

    One generator seeded with ``seed`` draws the sets in turn
    (:func:`dpgpu.eval.metrics.random_range_queries`); each set is a
    ``(n_queries, 2 d)`` array of boxes ``(lo_1, .., lo_d, hi_1, .., hi_d)``.

    Parameters
    ----------
    bounds : array_like of float
        The domain, ``(d, 2)`` rows ``[lo, hi]`` (or flat,
        :func:`dpgpu.eval.metrics.domain_bounds`).
    n_queries : int
        Queries per set.
    seed : int
        The generator's seed.

    Returns
    -------
    dict of str to numpy.ndarray
        ``small``, ``medium`` and ``large``
        (:data:`dpgpu.eval.metrics.RANGE_SETS`) to their query boxes.
    """
    rng = np.random.default_rng(seed)
    return {name: M.random_range_queries(bounds, n_queries, name, seed=rng)
            for name in M.RANGE_SETS}


def _range_queries(points: np.ndarray, bounds: np.ndarray,
                   leaves: tuple[np.ndarray, np.ndarray, np.ndarray],
                   workload: dict[str, Any]) -> dict:
    lo, hi, counts = leaves
    d = bounds.shape[0]
    inside = np.clip(points, bounds[:, 0], bounds[:, 1])
    outside = int(np.count_nonzero((inside != points).any(axis=1)))
    if outside * 2 > points.shape[0]:
        log.warning("evaluate: %d of %d original points lie outside the release's domain %s "
                    "(clipped onto its edge); check that --columns names the release's "
                    "columns in its order", outside, points.shape[0], bounds.tolist())
    boxes = np.column_stack([lo, hi])
    by_set = {}
    for name, queries in workload.items():
        q = np.asarray(queries, dtype=np.float64)
        if q.size % (2 * d):
            raise InvalidParameter(f"workload: the boxes of {name!r} need 2 d = {2 * d} "
                                   "numbers each (lo..., hi...)")
        q = q.reshape(-1, 2 * d)
        true = T.range_counts(inside, q)
        est = M.histogram_range_estimates(boxes, counts, q)
        err = M.range_relative_errors(est, true, points.shape[0])
        vol = M.RANGE_SETS.get(name)
        by_set[name] = {**M.summarize(err), "volume_fraction": list(vol) if vol else None,
                        "nonzero_true": int(np.count_nonzero(true))}
    return {"sanity_bound": M.sanity_bound(points.shape[0]), "points": int(points.shape[0]),
            "dimensions": d,
            "outside_domain": outside,
            "domain": bounds.tolist(), "leaves": int(counts.size),
            "released_total": float(counts.sum()), "by_set": by_set}


# -------------------------------------------------------------------- output
def write_evaluation(release_dir: Any, result: dict, *, inputs: Iterable[Any] = ()) -> Path:
    """Write ``evaluation.json`` into the release directory, atomically.

    The file goes to a temporary name in the same directory and is renamed
    into place (:func:`dpgpu.data.io.atomic_output`); no other file of the
    release is touched.  An ``evaluation.json`` that is a regular file (the
    previous evaluation) is replaced; a link, a directory, a device or one
    of ``inputs`` at that name is refused.

    Parameters
    ----------
    release_dir : str or path-like
        The release directory.
    result : dict
        The evaluation (:func:`evaluate_release`, :func:`evaluate_spatial_release`).
    inputs : iterable of path-like
        The files the evaluation read, which the output may not be.

    Returns
    -------
    pathlib.Path
        The path of ``evaluation.json``.

    Raises
    ------
    InputError
        When ``evaluation.json`` may not be written there.
    InvalidParameter
        ``release_dir`` is not a str or path-like.
    """
    path = release_path(release_dir, "release_dir") / EVALUATION
    with atomic_output(path, force=True, inputs=inputs) as f:
        dump_json(result, f, default=str)
    return path


def read_evaluation(release_dir: Any) -> dict:
    """The ``evaluation.json`` of a release directory, checked to be one :func:`format_table` shows.

    Parameters
    ----------
    release_dir : str or path-like
        The release directory.

    Returns
    -------
    dict
        The evaluation, as :func:`write_evaluation` wrote it.

    Raises
    ------
    InputError
        When the file is missing or unreadable, is not valid JSON, or does
        not have the layout that ``dpgpu evaluate`` writes (the message
        names the file and what is wrong).
    InvalidParameter
        ``release_dir`` is not a str or path-like.
    """
    path = release_path(release_dir, "release_dir") / EVALUATION
    if not path.exists():
        raise InputError(f"{path}: no such file (run dpgpu evaluate on {release_dir} first)")
    with input_errors(path):
        data = read_bytes(path)
    try:
        doc = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from None
    layout = "not an evaluation written by dpgpu evaluate"
    if not isinstance(doc, dict):
        raise InputError(f"{path}: {layout} (expected a JSON object, got "
                         f"{type(doc).__name__})")
    for key in ("release", "original", "tasks"):
        if not isinstance(doc.get(key), dict):
            raise InputError(f"{path}: {layout} (no {key!r} object)")
    unknown = sorted(set(doc["tasks"]) - set(TASKS))
    if unknown:
        raise InputError(f"{path}: {layout} (unknown task {unknown[0]!r})")
    try:
        format_table(doc)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"{path}: {layout} ({type(exc).__name__}: {exc})") from None
    return doc


def _epsilon(release: dict) -> str:
    """A release's epsilon for people: 6 significant digits (a budget split rounded down
    sums to just under the total: 0.9999999999999999 reads 1), ``inf`` when not private."""
    eps = release.get("epsilon")
    return "inf (not private)" if eps is None else f"{eps:g}"


def format_table(result: dict) -> str:
    """A plain-text table of an evaluation.

    Parameters
    ----------
    result : dict
        An evaluation (as ``evaluation.json`` holds it): ``release``,
        ``original`` and the ``tasks`` computed.

    Returns
    -------
    str
        A heading line, a section per task present and the closing warning
        that the figures are not private; no trailing newline.
    """
    rel, orig, tasks = result["release"], result["original"], result["tasks"]
    lines = [f"release {rel['path']} (mechanism {rel.get('mechanism')}, epsilon "
             f"{_epsilon(rel)}) vs {orig['path']} "
             + (f"({orig['points']} points)" if "points" in orig
                else f"({orig['sequences']} sequences)")]
    if "count-queries" in tasks:
        t = tasks["count-queries"]
        lines += ["", f"count queries on the synthetic data ({t['n_queries']} random queries per "
                  f"max size, sanity bound {t['sanity_bound']:g})",
                  f"  {'max size':>8}  {'mean RE':>9}  {'median RE':>9}  {'true > 0':>8}"]
        for m, r in t["by_max_size"].items():
            lines.append(f"  {m:>8}  {r['mean']:9.4f}  {r['median']:9.4f}  {r['nonzero_true']:8d}")
    if "top-k" in tasks:
        t = tasks["top-k"]
        for kind in ("strings", "subsequences"):
            lines += ["", f"top-K frequent {kind} (length >= {t['min_length']}, by "
                      f"{t[kind]['frequency']})",
                      f"  {'K':>5}  {'TP ratio':>8}  {'utility loss':>12}"]
            lines += _top_k_lines(t[kind]["by_k"], "true_positive_ratio", 8, t["min_length"])
    if "lengths" in tasks:
        t = tasks["lengths"]
        lines += ["", f"length distribution: total variation distance "
                  f"{t['total_variation_distance']:.4f} (mean length original "
                  f"{t['original']['mean']:.2f}, synthetic {t['synthetic']['mean']:.2f})"]
    if "pst" in tasks:
        t = tasks["pst"]
        n = t["sequences"]
        lines += ["", f"PST model ({t['nodes']} nodes, depth {t['depth']}, l_top {t['l_top']}; "
                  f"noisy sequence count {n['estimated']} for {n['original']}, relative error "
                  f"{n['relative_error']:.4f})",
                  f"  top-K frequent strings by the model's Eq. 12 estimates (length >= "
                  f"{t['top_k']['min_length']})",
                  f"  {'K':>5}  {'precision':>9}  {'utility loss':>12}"]
        lines += _top_k_lines(t["top_k"]["by_k"], "precision", 9, t["top_k"]["min_length"])
        c = t["count_queries"]
        lines += [f"  count queries answered by Eq. 12 ({c['n_queries']} random queries per max "
                  f"size, sanity bound {c['sanity_bound']:g})",
                  f"  {'max size':>8}  {'mean RE':>9}  {'median RE':>9}  {'true > 0':>8}"]
        for m, r in c["by_max_size"].items():
            lines.append(f"  {m:>8}  {r['mean']:9.4f}  {r['median']:9.4f}  {r['nonzero_true']:8d}")
    if "em" in tasks:
        t = tasks["em"]
        lines += ["", f"EM top-K strings ({t['selected']} selected on the data cut to l_top "
                  f"{t['l_top']}; by {t['frequency']}; Truncate: the cut data's exact top-K, "
                  "not private)",
                  f"  {'K':>5}  {'precision':>9}  {'vs cut data':>11}  {'Truncate':>8}"]
        lines += [f"  {k:>5}  {_score(r['precision']):>9}  {_score(r['precision_cut']):>11}  "
                  f"{_score(r['truncate_precision']):>8}" for k, r in t["by_k"].items()]
        if any(r["precision"] is None for r in t["by_k"].values()):
            lines.append("  (n/a: no string in the original)")
    if "ngrams" in tasks:
        t = tasks["ngrams"]
        lines += ["", f"released n-gram counts ({t['released_grams']} grams, sanity bound "
                  f"{t['sanity_bound']:g}; {t['absent_from_original']} absent from the original)",
                  f"  {'n':>3}  {'grams':>7}  {'mean RE':>9}  {'median RE':>9}"]
        for n, r in t["by_length"].items():
            lines.append(f"  {n:>3}  {r['n']:7d}  {r['mean']:9.4f}  {r['median']:9.4f}")
        o = t["overall"]
        lines.append(f"  {'all':>3}  {o['n']:7d}  {o['mean']:9.4f}  {o['median']:9.4f}")
    if "frequent" in tasks:
        t = tasks["frequent"]
        lines += ["", f"frequent subsequences (min support {t['min_support']})"]
        for src in ("release", "synthetic"):
            if src not in t:
                continue
            r = t[src]
            if "precision" in r:
                lines.append(f"  {src}: precision {_score(r['precision'])}  recall "
                             f"{_score(r['recall'])}  F-score {_score(r['f_score'])}  RE (median) "
                             f"{r['relative_error']['median']:.4f}  ({r['released']} released, "
                             f"{r['true_frequent']} truly frequent)")
            else:
                lines.append(f"  {src}: RE (median) {r['relative_error']['median']:.4f}  "
                             f"({r['released']} released; {r['note']})")
    if "coverage" in tasks:
        t = tasks["coverage"]
        ks = list(t["coverage"])
        lines += ["", f"k-gram coverage (grams held by >= K {t['count_by']})",
                  f"  {'k':>3}  {'released':>8}  {'spurious':>8}  "
                  + "  ".join(f"{'K=' + K:>8}" for K in ks)]
        for n, r in [*t["by_k"].items(), ("all", t)]:
            lines.append(f"  {n:>3}  {r['released']:8d}  {r['spurious_fraction']:8.4f}  "
                         + "  ".join(f"{'n/a':>8}" if r["coverage"][K] is None
                                     else f"{r['coverage'][K]:8.3f}" for K in ks))
        if any(v is None for v in t["coverage"].values()):
            lines.append("  (n/a: no gram of the original is held by K or more)")
    if "range-queries" in tasks:
        t = tasks["range-queries"]
        lines += ["", f"range-count queries on the {t['leaves']} leaves ({len(t['domain'])}-D; "
                  f"sanity bound {t['sanity_bound']:g}; {t['outside_domain']} of {t['points']} "
                  "points outside the domain, clipped)",
                  f"  {'set':>8}  {'volume fraction':>15}  {'queries':>7}  {'mean RE':>9}  "
                  f"{'median RE':>9}  {'true > 0':>8}"]
        for name, r in t["by_set"].items():
            vol = "[{:g}, {:g})".format(*r["volume_fraction"]) if r["volume_fraction"] else "-"
            lines.append(f"  {name:>8}  {vol:>15}  {r['n']:7d}  {r['mean']:9.4f}  "
                         f"{r['median']:9.4f}  {r['nonzero_true']:8d}")
    lines += ["", f"({WARNING})"]
    return "\n".join(lines)


def _top_k_lines(rows: dict, ratio: str, width: int, min_length: int) -> list[str]:
    """The table lines of top-K rows (:func:`_top_k_rows`): K, ``ratio`` in ``width``
    columns and the utility loss, ``n/a`` where the original has no pattern to compare."""
    lines = [f"  {k:>5}  " + (f"{'n/a':>{width}}  {'n/a':>12}" if r[ratio] is None else
                              f"{r[ratio]:{width}.3f}  {r['utility_loss']:12.4f}")
             for k, r in rows.items()]
    if any(r[ratio] is None for r in rows.values()):
        lines.append(f"  (n/a: no pattern of length >= {min_length} in the original)")
    return lines


# ---------------------------------------------------------------------- plot
def require_matplotlib():
    """Import matplotlib with the headless ``Agg`` backend.

    Returns
    -------
    module
        ``matplotlib.pyplot``.

    Raises
    ------
    InvalidParameter
        When matplotlib is not installed (names ``pip install dpgpu[plot]``).
    """
    try:
        import matplotlib  # noqa: PLC0415 - optional dependency

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        raise InvalidParameter("--plot: matplotlib is not installed; "
                               "pip install dpgpu[plot]") from None
    return plt


def plot_format(path: Any, name: str = "path") -> str:
    """The figure format of ``path``, from its file name extension.

    Parameters
    ----------
    path : str or path-like
        The figure file.
    name : str
        How messages name the parameter (``--plot`` on the command line).

    Returns
    -------
    str
        The format matplotlib writes (one of :data:`PLOT_FORMATS`).

    Raises
    ------
    InvalidParameter
        When the extension is not one of :data:`PLOT_FORMATS` (the message
        names the parameter ``name``).
    """
    fmt = Path(path).suffix[1:].lower()
    if fmt not in PLOT_FORMATS:
        raise InvalidParameter(f"{name}: expected a file name ending in "
                               f"{' or '.join('.' + f for f in PLOT_FORMATS)}, got "
                               f"{str(path)!r}")
    return fmt


def plot_evaluation(result: dict, path: Any, *, force: bool = False,
                    inputs: Iterable[Any] = ()) -> Path:
    """Draw the evaluation as one figure (a panel per task), written atomically.

    Parameters
    ----------
    result : dict
        The evaluation (:func:`evaluate_release`, :func:`evaluate_spatial_release`).
    path : str or path-like
        The figure file; its extension gives the format (:data:`PLOT_FORMATS`).
    force : bool
        Replace an existing regular file ``path``.
    inputs : iterable of path-like
        The files the evaluation read, which ``path`` may not be.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    InvalidParameter
        When matplotlib is not installed, or ``path`` has another extension.
    InputError
        When ``path`` may not be written (:func:`dpgpu.data.io.check_output`).
    """
    fmt = plot_format(path)
    plt = require_matplotlib()
    tasks = result["tasks"]
    panels = []
    if "count-queries" in tasks:
        panels.append(("count-queries", _plot_counts))
    if "top-k" in tasks:
        panels.append(("top-k", _plot_topk))
    if "lengths" in tasks:
        panels.append(("lengths", _plot_lengths))
    if "pst" in tasks:
        panels.append(("pst", _plot_pst))
    if "em" in tasks:
        panels.append(("em", _plot_em))
    if "ngrams" in tasks:
        panels.append(("ngrams", _plot_ngrams))
    if "frequent" in tasks:
        panels.append(("frequent", _plot_frequent))
    if "coverage" in tasks:
        panels.append(("coverage", _plot_coverage))
    if "range-queries" in tasks:
        panels.append(("range-queries", _plot_ranges))
    ncols = 2 if len(panels) > 1 else 1
    nrows = max(1, math.ceil(len(panels) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(6 * ncols, 4 * nrows), squeeze=False)
    for ax, (name, fn) in zip(axes.ravel(), panels):
        fn(ax, tasks[name])
    for ax in axes.ravel()[len(panels):]:
        ax.axis("off")
    rel = result["release"]
    fig.suptitle(f"{rel.get('mechanism')} (epsilon {_epsilon(rel)}) - not a private "
                 "release: exact diagnostic", fontsize=10)
    fig.tight_layout()
    try:
        with atomic_output(path, force=force, binary=True, inputs=inputs) as f:
            fig.savefig(f, dpi=100, format=fmt)
    finally:
        plt.close(fig)
    return Path(path)


def _score(value: float | None) -> str:
    """A score for the table: ``n/a`` where nothing was compared (None)."""
    return "n/a" if value is None else f"{value:.3f}"


def _nan(value: float | None) -> float:
    """A score to plot: NaN (no point) for None (``n/a``, nothing compared)."""
    return np.nan if value is None else value


def _plot_counts(ax, t):
    sizes = list(t["by_max_size"])
    ax.bar(range(len(sizes)), [t["by_max_size"][m]["mean"] for m in sizes], color="tab:blue",
           tick_label=sizes)
    ax.set_xlabel("maximal query size")
    ax.set_ylabel("average relative error")
    ax.set_title("count queries")


def _plot_topk(ax, t):
    for kind, style in (("strings", "o-"), ("subsequences", "s--")):
        ks = list(t[kind]["by_k"])
        ax.plot([int(k) for k in ks], [_nan(t[kind]["by_k"][k]["true_positive_ratio"])
                                       for k in ks], style, label=f"{kind}: TP ratio")
        ax.plot([int(k) for k in ks], [_nan(t[kind]["by_k"][k]["utility_loss"]) for k in ks],
                style, alpha=0.5, label=f"{kind}: utility loss")
    ax.set_xlabel("K")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7)
    ax.set_title("top-K frequent patterns")


def _plot_lengths(ax, t):
    for key, label in (("histogram_original", "original"), ("histogram_synthetic", "synthetic")):
        h = np.asarray(t[key], dtype=np.float64)
        if h.sum() > 0:
            ax.plot(np.arange(h.size), h / h.sum(), label=label)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length")
    ax.set_ylabel("share of sequences")
    ax.set_title(f"lengths (TVD {t['total_variation_distance']:.3f})")
    ax.legend(fontsize=7)


def _plot_pst(ax, t):
    rows = t["top_k"]["by_k"]
    ks = [int(k) for k in rows]
    ax.plot(ks, [_nan(r["precision"]) for r in rows.values()], "o-", label="top-K precision")
    ax.plot(ks, [_nan(r["utility_loss"]) for r in rows.values()], "s--", label="utility loss")
    ax.set_xlabel("K")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7)
    sizes = t["count_queries"]["by_max_size"]
    ax.set_title("PST model: top-K strings; count-query mean RE "
                 + "/".join(f"{r['mean']:.2f}" for r in sizes.values()), fontsize=8)


def _plot_em(ax, t):
    rows = t["by_k"]
    ks = [int(k) for k in rows]
    for key, style, label in (("precision", "o-", "EM precision"),
                              ("precision_cut", "s--", "EM vs the cut data's top-K"),
                              ("truncate_precision", "^:", "Truncate (not private)")):
        ax.plot(ks, [_nan(r[key]) for r in rows.values()], style, label=label)
    ax.set_xlabel("K")
    ax.set_ylabel("precision")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7)
    ax.set_title(f"EM top-K strings (l_top {t['l_top']})")


def _plot_ngrams(ax, t):
    ns = list(t["by_length"])
    ax.bar(range(len(ns)), [t["by_length"][n]["mean"] for n in ns], color="tab:orange",
           tick_label=ns)
    ax.set_xlabel("gram length")
    ax.set_ylabel("average relative error")
    ax.set_title("released n-gram counts")


def _plot_frequent(ax, t):
    for src, style in (("release", "o-"), ("synthetic", "s--")):
        r = t.get(src)
        if not r or "by_length" not in r:
            continue
        ns = list(r["by_length"])
        ax.plot([int(n) for n in ns], [r["by_length"][n]["f_score"] for n in ns], style,
                label=f"{src}: F-score")
    ax.set_xlabel("pattern length")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7)
    ax.set_title(f"frequent subsequences (min support {t['min_support']})")


def _plot_coverage(ax, t):
    for n, r in t["by_k"].items():
        Ks = list(r["coverage"])
        ax.plot([int(K) for K in Ks], [_nan(r["coverage"][K]) for K in Ks], "o-",
                label=f"k={n}")
    ax.set_xscale("log")
    ax.set_xlabel("K (users holding the gram)")
    ax.set_ylabel("coverage")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7)
    ax.set_title("k-gram coverage")


def _plot_ranges(ax, t):
    sets = list(t["by_set"])
    x = np.arange(len(sets))
    ax.bar(x - 0.2, [t["by_set"][n]["mean"] for n in sets], 0.4, label="mean",
           color="tab:green")
    ax.bar(x + 0.2, [t["by_set"][n]["median"] for n in sets], 0.4, label="median",
           color="tab:olive")
    ax.set_xticks(x, sets)
    ax.set_xlabel("query set")
    ax.set_ylabel("relative error")
    ax.legend(fontsize=7)
    ax.set_title(f"range-count queries ({t['leaves']} leaves)")
