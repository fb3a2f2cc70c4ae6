"""Releases as pandas DataFrames and matplotlib plots, for notebooks.

Every release object -- what :func:`dpgpu.ngram`, :func:`dpgpu.pst`,
:func:`dpgpu.privtree_spatial`, :func:`dpgpu.pfs2`, :func:`dpgpu.dpne`, the
baselines :func:`dpgpu.em_top_k` (EM),
:func:`~dpgpu.mechanisms.privtree.uniform_grid` (UG) and
:func:`~dpgpu.mechanisms.privtree.adaptive_grid` (AG), and
:func:`dpgpu.load_release` return -- has ``.to_pandas()`` and ``.plot()``
(from :class:`dpgpu.report.Displayed`), which call :func:`to_pandas` and
:func:`plot` here.  A frame holds what was released and nothing else: item
labels decoded to the vocabulary's strings, noisy counts, never an exact
statistic of the data.  The markers are not strings but the sentinels
:data:`END` (``dpgpu.END``: a sequence ends here, the last symbol of an
N-gram gram or a PST next symbol) and :data:`START` (``dpgpu.START``: a PST
context that begins at a sequence's start), so an item labelled ``&`` or
``$`` is told from them: ``frame["gram"].map(lambda g: g[-1] is dpgpu.END)``
selects the grams that end a sequence, ``frame["symbol"] != dpgpu.END`` the
rows of items.  A release read back with :func:`dpgpu.load_release` gives
the same frame as the object that was saved, value for value.

=====================  =====================================================
mechanism              one row per
=====================  =====================================================
``ngram``              released n-gram: ``gram`` (items, and
                       :data:`END` last where the gram ends a sequence),
                       ``n``, ``noisy_count``, ``count`` (the consistent
                       count)
``privtree-pst``       node and next symbol: ``context`` (items, after
                       :data:`START` where it begins a sequence), ``depth``,
                       ``leaf``, ``symbol`` (an item or :data:`END`),
                       ``noisy_count``
``privtree-spatial``   leaf box: ``lo_<column>``, ``hi_<column>`` per
                       dimension, ``count`` (noisy); also ``uniform-grid``
                       (UG) and ``adaptive-grid`` (AG), whose releases are
                       laid out as PrivTree's (AG's counts are floats, after
                       constrained inference)
``pfs2``               frequent pattern: ``pattern``, ``length``,
                       ``support`` (noisy)
``dpne``               released n-gram: ``k``, ``gram`` (DPNE releases sets,
                       no counts)
``em-top-k``           selected string, in rank order: ``rank`` (1 for the
                       first selected), ``string`` (items), ``length`` (EM
                       releases a ranked list, no counts)
=====================  =====================================================

pandas and matplotlib are optional (``pip install dpgpu[pandas]``,
``pip install dpgpu[plot]``) and imported only here, on first use.
:func:`plot` uses whatever matplotlib backend is active (inline in a
notebook; set ``MPLBACKEND=Agg`` to draw without a display).
"""

from __future__ import annotations

import csv
import functools
import importlib
import json
import numbers
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence
from urllib.parse import unquote

import numpy as np

from .errors import InputError, InvalidParameter
from .mechanisms.privtree.spatial import INTEGER_COUNTS, SpatialHistogram

#: Optional packages dpgpu imports on demand, with the extra that installs each.
EXTRAS = {"pandas": "pandas", "matplotlib.pyplot": "plot", "matplotlib.collections": "plot",
          "matplotlib.patches": "plot", "shtab": "completion"}


@functools.total_ordering
class Marker:
    """A sequence marker in release frames: :data:`END` or :data:`START`, never a label.

    Release files write the end marker ``&`` and the start marker ``$``
    beside item labels, which may be ``&`` or ``$`` themselves
    (:func:`dpgpu.release.encode_gram`); a frame gives the markers as these
    two objects instead, so that a gram ``("a", dpgpu.END)`` (``a``, then
    the end of a sequence) is not ``("a", "&")`` (the items ``a`` and
    ``&``).  Each is a singleton, equal only to itself (also after a copy
    or a pickle); its ``repr`` is ``dpgpu.END`` / ``dpgpu.START`` and its
    ``str`` (what a printed frame and a plot show) ``<end>`` / ``<start>``.
    Markers sort beside labels, :data:`START` before every label and
    :data:`END` after, so a column of grams can be sorted.

    Parameters
    ----------
    name : {"END", "START"}
        The name it is exported under in :mod:`dpgpu`.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"dpgpu.{self.name}"

    def __str__(self) -> str:
        return f"<{self.name.lower()}>"

    def __reduce__(self) -> str:
        return self.name  # copies and pickles are the module's own object

    def __lt__(self, other: Any) -> bool:
        if isinstance(other, (Marker, str)):
            return self._rank() < (other._rank() if isinstance(other, Marker) else 0)
        return NotImplemented

    def _rank(self) -> int:
        """Where the marker sorts: before every label (-1) or after (1)."""
        return -1 if self.name == "START" else 1


#: The end marker in release frames: the sequence ends here.
END = Marker("END")
#: The start marker in release frames: the context begins at a sequence's start.
START = Marker("START")
#: The markers as release files write them (an item ``&`` or ``$`` is %-encoded there).
_MARKERS = {"&": END, "$": START}


def require(module: str) -> Any:
    """Import an optional dependency, or say which dpgpu extra installs it.

    Parameters
    ----------
    module : str
        ``"pandas"``, a matplotlib module or ``"shtab"``.

    Returns
    -------
    module

    Raises
    ------
    InvalidParameter
        When the package is not installed; the message names the extra
        (``pip install dpgpu[pandas]``, ``pip install dpgpu[plot]``, ...).
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        top, extra = module.split(".")[0], EXTRAS.get(module, module.split(".")[0])
        raise InvalidParameter(f"{top} is not installed; this needs the dpgpu extra "
                               f"'{extra}': pip install dpgpu[{extra}]") from None


# ------------------------------------------------------------------ frames
def to_pandas(release: Any) -> Any:
    """The released statistics of ``release`` as a :class:`pandas.DataFrame`.

    Parameters
    ----------
    release : Displayed
        A release object of any mechanism, or a :class:`~dpgpu.report.LoadedRelease`.

    Returns
    -------
    pandas.DataFrame
        One row per released item (see the table in the module docstring).

    Raises
    ------
    InvalidParameter
        When pandas is not installed, the release's mechanism has no table,
        or it has no report (a ``SpatialHistogram`` made by hand).
    InputError
        When a loaded release's file is missing, cannot be read or is
        malformed (a header without the columns, a value of the wrong
        type), or a spatial release's report names no columns.
    """
    pd = require("pandas")
    mechanism = _mechanism(release)
    columns, dtypes = _columns(release, mechanism)
    from .report import LoadedRelease  # noqa: PLC0415 - report imports this module lazily

    if isinstance(release, LoadedRelease):
        try:
            rows = list(_FILE_ROWS[mechanism](release))
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{release.path}: a release file is malformed ({exc!r})") from None
    else:
        rows = list(_MEMORY_ROWS[mechanism](release))
    frame = pd.DataFrame(rows, columns=columns)
    return frame.astype(dict(zip(columns, dtypes)))


def _mechanism(release: Any) -> Any:
    """The mechanism ``release``'s report names (InvalidParameter: a ``SpatialHistogram``
    without a report, :meth:`~dpgpu.mechanisms.privtree.SpatialHistogram.check_report`)."""
    if isinstance(release, SpatialHistogram):
        release.check_report("no table or plot")
    return release.report.get("mechanism")


def _columns(release: Any, mechanism: str) -> tuple[list[str], list[Any]]:
    """Column names and dtypes of a mechanism's frame."""
    if mechanism in _SPATIAL:
        names = _spatial_columns(release)
        return ([f"{side}_{c}" for c in names for side in ("lo", "hi")] + ["count"],
                [np.float64] * (2 * len(names)) + [_SPATIAL[mechanism]])
    try:
        return _TABLES[mechanism]
    except KeyError:
        raise InvalidParameter(f"to_pandas: no table for mechanism {mechanism!r}") from None


_TABLES: dict[str, tuple[list[str], list[Any]]] = {
    "ngram": (["gram", "n", "noisy_count", "count"], [object, np.int64, np.int64, np.float64]),
    "privtree-pst": (["context", "depth", "leaf", "symbol", "noisy_count"],
                     [object, np.int64, bool, object, np.int64]),
    "pfs2": (["pattern", "length", "support"], [object, np.int64, np.int64]),
    "dpne": (["k", "gram"], [np.int64, object]),
    "em-top-k": (["rank", "string", "length"], [np.int64, object, np.int64]),
}
#: The spatial mechanisms, whose releases are laid out as PrivTree's (``leaves.csv``), and the
#: dtype of their noisy counts: UG's are integers, AG's floats (constrained inference).
_SPATIAL: dict[str, Any] = {**dict.fromkeys(INTEGER_COUNTS, np.int64),
                            "adaptive-grid": np.float64}


def _spatial_columns(release: Any) -> list[str]:
    names = getattr(release, "columns", None)
    if names is None or not isinstance(names, (list, tuple)):  # a loaded release
        names = release.report.get("parameters", {}).get("columns")
    if not names:
        raise InputError(f"{release.report.get('mechanism')} release: the report names no "
                         "columns")
    return list(names)


def _spatial_rows(release: Any):
    """The frame rows of a spatial release object: its leaf boxes and noisy counts.

    ``release`` is a :class:`~dpgpu.mechanisms.privtree.SpatialRelease` (its
    ``leaves``) or a :class:`~dpgpu.mechanisms.privtree.SpatialHistogram`
    (UG, AG, or any spatial release read back with its ``load``).
    """
    leaves = getattr(release, "leaves", release)
    for lo, hi, n in zip(leaves.lo.tolist(), leaves.hi.tolist(), leaves.counts.tolist()):
        yield [v for j in range(len(lo)) for v in (lo[j], hi[j])] + [n]


def _ngram_rows(release: Any):
    """The frame rows of an N-gram release object: its grams' ids decoded, markers as such."""
    symbols = [*release.vocab.labels, END, START]  # by id: the markers follow the items
    for lvl in release.levels:
        for gram, noisy, count in zip(lvl.grams.tolist(), lvl.noisy.tolist(),
                                      lvl.count.tolist()):
            yield tuple(symbols[i] for i in gram), len(gram), noisy, count


def _pst_rows(nodes: Iterable[dict], items: Sequence[str], start_marker: str):
    """The frame rows of PST nodes as ``pst.json`` holds them.

    A node's histogram counts the ``items`` and then the end marker; its
    context names the start marker ``start_marker``, a name no item has.
    """
    symbols = [*items, END]
    for node in nodes:
        context = tuple(START if s == start_marker else s for s in node["context"])
        for symbol, count in zip(symbols, node["hist"]):
            yield context, node["depth"], node["leaf"], symbol, count


_MEMORY_ROWS: dict[str, Callable[[Any], Any]] = {
    "ngram": _ngram_rows,
    "privtree-pst": lambda r: _pst_rows(r.iter_nodes(), r.vocab.labels, r.start_marker),
    **dict.fromkeys(_SPATIAL, _spatial_rows),
    "pfs2": lambda r: ((p, len(p), s) for p, s in r.frequent()),
    "dpne": lambda r: ((len(g), g) for g in r.grams()),
    "em-top-k": lambda r: ((rank, s, len(s)) for rank, s in enumerate(r.strings(), 1)),
}


def decode_gram(text: str) -> tuple[Any, ...]:
    """A gram as release files write it (:func:`dpgpu.release.encode_ids`) as labels and markers.

    A bare ``&`` is :data:`END` and a bare ``$`` :data:`START`; every other
    token is a label, %-decoded (an item ``&`` is written ``%26``).

    Parameters
    ----------
    text : str
        The gram: tokens separated by single spaces.

    Returns
    -------
    tuple
        One element per token: the str label, or :data:`END` / :data:`START`.

    Examples
    --------
    >>> decode_gram("Send%20Fine %26 &")
    ('Send Fine', '&', dpgpu.END)
    """
    return tuple(_MARKERS.get(t) or unquote(t) for t in text.split(" "))


def _table(release: Any, name: str, columns: Sequence[str], sep: str = "\t") -> list[dict]:
    """The rows of release file ``name`` (a header naming at least ``columns``)."""
    path = Path(release.path) / name
    try:
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f, delimiter=sep, quoting=csv.QUOTE_NONE)
            missing = set(columns) - set(reader.fieldnames or ())
            if missing:
                raise InputError(f"{path}:1: the header lacks {', '.join(sorted(missing))}")
            return list(reader)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None


def _pst_file_rows(release: Any):
    path = Path(release.path) / "pst.json"
    try:
        tree = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None
    return _pst_rows(tree["nodes"], tree["symbols"][:-1], tree.get("start_marker", "$"))


def _spatial_file_rows(release: Any):
    names, dtypes = _columns(release, release.report["mechanism"])
    count = int if np.issubdtype(dtypes[-1], np.integer) else float
    for row in _table(release, "leaves.csv", names, sep=","):
        yield [float(row[c]) for c in names[:-1]] + [count(row["count"])]


def _gram_rows(release: Any, name: str, gram: str, values: Sequence[str]):
    """``(labels, row)`` for every row of release file ``name``, its ``gram`` column decoded."""
    for row in _table(release, name, (gram, *values)):
        yield decode_gram(row[gram]), row


_FILE_ROWS: dict[str, Callable[[Any], Any]] = {
    "ngram": lambda r: ((g, len(g), int(t["noisy_count"]), float(t["count"]))
                        for g, t in _gram_rows(r, "ngrams.tsv", "gram", ("noisy_count", "count"))),
    "privtree-pst": _pst_file_rows,
    **dict.fromkeys(_SPATIAL, _spatial_file_rows),
    "pfs2": lambda r: ((g, len(g), int(t["support"]))
                       for g, t in _gram_rows(r, "frequent.tsv", "pattern", ("support",))),
    "dpne": lambda r: ((int(t["k"]), g) for g, t in _gram_rows(r, "ngrams.tsv", "gram", ("k",))),
    "em-top-k": lambda r: ((int(t["rank"]), g, len(g))
                           for g, t in _gram_rows(r, "topk.tsv", "string", ("rank",))),
}


# ------------------------------------------------------------------- plots
#: The mechanisms whose plot each option of :func:`plot` shapes (given for another, it is
#: refused, not ignored).
PLOT_OPTIONS = {"k": ("ngram", "pfs2", "privtree-pst", "em-top-k"),
                "min_length": ("ngram", "pfs2", "em-top-k"), "dims": tuple(_SPATIAL)}


def plot(release: Any, ax: Any = None, *, k: int | None = None, min_length: int | None = None,
         dims: Sequence[int] | None = None) -> Any:
    """Draw what ``release`` holds on a matplotlib Axes.

    ``ngram`` and ``pfs2``: a horizontal bar chart of the ``k`` released
    strings with the largest noisy counts (N-gram: consistent counts;
    grams ending with :data:`END` are left out).  ``privtree-pst``: the root's noisy
    histogram of next symbols, ``k`` largest.  ``privtree-spatial``,
    ``uniform-grid`` and ``adaptive-grid``: the leaf boxes, coloured by noisy
    density (count per unit area), as rectangles (2-d and more, projected on
    ``dims``) or bars (1-d).  ``dpne``: the number of released n-grams for
    each ``k = 1 .. max_n``.  ``em-top-k``: the first ``k`` selected strings
    in rank order (rank 1 on top), as bars of one length: EM releases a
    ranked list and no counts, so the bars show the order only.

    Parameters
    ----------
    release : Displayed
        A release object or a :class:`~dpgpu.report.LoadedRelease`.
    ax : matplotlib.axes.Axes, optional
        Where to draw; default a new figure's.
    k : int, optional
        Bars in the top-k charts (``ngram``, ``pfs2``, ``privtree-pst``,
        ``em-top-k``; default 20).
    min_length : int, optional
        Shortest string in the top-k charts of ``ngram``, ``pfs2`` and
        ``em-top-k`` (default 1).
    dims : pair of int, optional
        Dimensions drawn for a spatial release (default ``(0, 1)``; of 3 or
        more dimensions, any two): two different integers ``>= 0``, below
        the release's number of dimensions.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    InvalidParameter
        When pandas or matplotlib is not installed, for a bad ``k``,
        ``min_length`` or ``dims``, one given for a release whose plot it
        does not shape (:data:`PLOT_OPTIONS`), when ``ax`` is not a
        matplotlib Axes, or when the release's mechanism has no table.
    InputError
        When a loaded release's file cannot be read (:func:`to_pandas`).
    """
    from .validation import check_positive_int  # noqa: PLC0415

    mechanism = _mechanism(release)
    for name, value in (("k", k), ("min_length", min_length), ("dims", dims)):
        if value is not None and mechanism not in PLOT_OPTIONS[name]:
            raise InvalidParameter(f"{name}: shapes the plot of {', '.join(PLOT_OPTIONS[name])} "
                                   f"releases only, not of a {mechanism} release")
    k = check_positive_int(20 if k is None else k, "k")
    min_length = check_positive_int(1 if min_length is None else min_length, "min_length")
    dims = _check_dims((0, 1) if dims is None else dims)
    plt = require("matplotlib.pyplot")
    if ax is not None and not isinstance(ax, plt.Axes):
        raise InvalidParameter(f"ax: expected a matplotlib Axes (such as plt.subplots()[1]), "
                               f"got {type(ax).__name__}")
    frame = to_pandas(release)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 5))
    report = release.report
    eps = report.get("epsilon")
    title = f"{mechanism} release (epsilon {eps:g})" if eps is not None else f"{mechanism} release"
    if mechanism == "ngram":
        items = frame[(frame["n"] >= min_length) & frame["gram"].map(lambda g: END not in g)]
        top = items.sort_values(["count", "noisy_count"], ascending=False, kind="stable").head(k)
        _bars(ax, top["gram"], top["count"], "consistent noisy count", title)
    elif mechanism == "pfs2":
        top = frame[frame["length"] >= min_length].sort_values("support", ascending=False,
                                                               kind="stable").head(k)
        _bars(ax, top["pattern"], top["support"], "noisy support", title)
    elif mechanism == "privtree-pst":
        root = frame[frame["depth"] == 0].sort_values("noisy_count", ascending=False,
                                                      kind="stable").head(k)
        _bars(ax, root["symbol"].map(lambda s: (s,)), root["noisy_count"],
              "noisy count at the root (next symbol)", title)
    elif mechanism == "dpne":
        max_n = int(report.get("parameters", {}).get("max_n") or frame["k"].max() or 1)
        per_k = np.bincount(frame["k"].to_numpy(np.int64), minlength=max_n + 1)[1:max_n + 1]
        ax.bar(np.arange(1, max_n + 1), per_k, color="tab:blue")
        ax.set_xlabel("k (n-gram length)")
        ax.set_ylabel("released n-grams")
        ax.set_title(title)
    elif mechanism == "em-top-k":
        top = frame[frame["length"] >= min_length].sort_values("rank", kind="stable").head(k)
        _bars(ax, [(f"{r}.", *s) for r, s in zip(top["rank"], top["string"])],
              np.ones(len(top)), "rank order (EM releases no counts)", title)
        ax.set_xticks([])
    else:
        _spatial(ax, frame, release, dims, title)
    return ax


def _check_dims(dims: Any) -> tuple[int, int]:
    """``dims`` as a pair of different integers ``>= 0`` (the release's size is checked later).

    Raises
    ------
    InvalidParameter
        Naming ``dims``: not a pair, an entry that is not an integer (a bool
        or ``0.9`` included: never truncated) or is negative, or one
        dimension twice.
    """
    pair = tuple(dims) if isinstance(dims, (tuple, list, np.ndarray)) else ()
    if len(pair) != 2 or any(isinstance(d, (bool, np.bool_)) or not isinstance(d, numbers.Integral)
                             or d < 0 for d in pair) or pair[0] == pair[1]:
        raise InvalidParameter(f"dims: expected two different dimensions such as (0, 1), got "
                               f"{dims!r}")
    return int(pair[0]), int(pair[1])


def _bars(ax: Any, grams: Any, values: Any, xlabel: str, title: str) -> None:
    """Horizontal bars, largest on top, labelled by the grams' labels."""
    labels = [" ".join(map(str, g)) for g in grams]
    ax.barh(np.arange(len(labels))[::-1], np.asarray(values, dtype=np.float64),
            tick_label=labels, color="tab:blue")
    ax.set_xlabel(xlabel)
    ax.set_title(title)


def _spatial(ax: Any, frame: Any, release: Any, dims: Sequence[int], title: str) -> None:
    """Leaf boxes coloured by noisy density (negative counts drawn as 0)."""
    names = _spatial_columns(release)
    lo = frame[[f"lo_{c}" for c in names]].to_numpy(np.float64)
    hi = frame[[f"hi_{c}" for c in names]].to_numpy(np.float64)
    counts = np.maximum(frame["count"].to_numpy(np.float64), 0)
    if len(names) == 1:
        width = hi[:, 0] - lo[:, 0]
        ax.bar(lo[:, 0], counts / np.maximum(width, 1e-300), width=width, align="edge",
               color="tab:blue", edgecolor="white", linewidth=0.3)
        ax.set_xlabel(names[0])
        ax.set_ylabel("noisy density (count per unit length)")
        ax.set_title(title)
        return
    i, j = dims
    if max(i, j) >= len(names):
        raise InvalidParameter(f"dims: two different dimensions among 0..{len(names) - 1}, got "
                               f"{dims}")
    collections = require("matplotlib.collections")
    patches = require("matplotlib.patches")
    w, h = hi[:, i] - lo[:, i], hi[:, j] - lo[:, j]
    boxes = [patches.Rectangle((x, y), a, b) for x, y, a, b in zip(lo[:, i], lo[:, j], w, h)]
    coll = collections.PatchCollection(boxes, cmap="viridis", edgecolor="white", linewidth=0.2)
    coll.set_array(counts / np.maximum(w * h, 1e-300))
    ax.add_collection(coll)
    if len(boxes):
        ax.set_xlim(lo[:, i].min(), hi[:, i].max())
        ax.set_ylim(lo[:, j].min(), hi[:, j].max())
    ax.figure.colorbar(coll, ax=ax, label="noisy density (count per unit area)"
                       + (" in the projection" if len(names) > 2 else ""))
    ax.set_xlabel(names[i])
    ax.set_ylabel(names[j])
    ax.set_title(title)
