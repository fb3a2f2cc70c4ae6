"""Readable summaries of release directories (``dpgpu report``).

A summary states what was released, the privacy guarantee in plain words
(epsilon, delta, and the unit it protects), every ledger step, and what the
guarantee does *not* cover.  It shows nothing but the release's public
facts, so it may be published with the release.  Only when asked
(``with_evaluation``, ``dpgpu report --with-evaluation``) does it add the
utility figures of the release's ``evaluation.json``; those are computed
from the exact original data (its exact size, exact counts), so such a
summary opens with :data:`EXACT_BANNER` and must not be published.  Text for
the terminal, or a self-contained HTML page.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any, Sequence

from .data.io import input_errors
from .errors import InputError
from .release import REPORT, read_report, read_synthetic, release_path
from .validation import check_bool


#: What one mechanism's guarantee protects: the unit whose presence is hidden.
UNITS = {"ngram": "one sequence", "privtree-pst": "one sequence", "em-top-k": "one sequence",
         "pfs2": "one sequence",
         "dpne": "one user (all of that user's texts)", "privtree-spatial": "one point",
         "uniform-grid": "one point", "adaptive-grid": "one point"}

#: What each mechanism's guarantee rests on, beyond epsilon and delta.
CAVEATS = {
    "ngram": "Only each sequence's first l_max items are used; the guarantee assumes one "
             "sequence per person (a person with several sequences is protected k-fold less).",
    "privtree-pst": "Only each sequence's first l_top symbols are used; one sequence per person "
                    "is assumed.",
    "em-top-k": "Only each sequence's first l_top items are counted; one sequence per person "
                "is assumed.",
    "pfs2": "Sequences are shrunk to a noisy l_max; one sequence per person is assumed.",
    "dpne": "Each user contributes at most the configured number of n-grams per level; "
            "texts must carry the right user ids.",
    "privtree-spatial": "The spatial domain must be public (given with --bounds); a domain "
                        "taken from the data itself is not covered.",
    **dict.fromkeys(("uniform-grid", "adaptive-grid"),
                    "The spatial domain must be public (given with --bounds), and so must the "
                    "number of points n that sizes the grid; a domain taken from the data "
                    "itself is not covered."),
}

#: The first words of a summary that shows an evaluation (exact statistics of the original).
EXACT_BANNER = ("NOT PRIVATE: this summary includes evaluation.json, which is computed from "
                "the exact original data (its exact size and exact counts). It is a diagnostic "
                "for the data holder: do not publish it.")


_MISSING = object()


def _real(value: Any, low: float, high: float) -> bool:
    """Whether ``value`` is a JSON number (not a bool) in ``[low, high]`` (NaN is not)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and low <= value <= high


#: The report.json fields readers use: (field, what it must be, test of its value;
#: :data:`_MISSING` when absent).
REPORT_FIELDS = (
    ("mechanism", "the mechanism's name (a non-empty string)",
     lambda v: isinstance(v, str) and v.strip() != ""),
    ("epsilon", "a finite number >= 0 (null for an output that is not private)",
     lambda v: v is None or _real(v, 0, math.inf) and math.isfinite(v)),
    ("delta", "a number in [0, 1] or null", lambda v: v in (None, _MISSING) or _real(v, 0, 1)),
    *((key, "a JSON object", lambda v: v is _MISSING or isinstance(v, dict))
      for key in ("parameters", "input", "vocabulary")),
)



def read_release_report(release_dir: Any) -> dict:
    """The ``report.json`` of a release directory, checked to be a readable JSON object.

    Parameters
    ----------
    release_dir : str or path-like
        The release directory.

    Returns
    -------
    dict
        The report (:func:`dpgpu.release.read_report`).

    Raises
    ------
    InputError
        When ``release_dir`` is not a directory, or its ``report.json`` is
        missing, unreadable, not valid JSON or not a JSON object, or as
        ``<dir>/report.json: <field>: expected ...`` at the first field of
        :data:`REPORT_FIELDS` that is missing or malformed.
    """
    d = Path(release_dir)
    if d.exists() and not d.is_dir():
        raise InputError(f"{d}: a file, not a release directory (a folder holding "
                         f"{REPORT}, as the mechanisms' --out writes it)")
    if not d.is_dir():
        raise InputError(f"{d}: no such release directory")
    with input_errors(d / REPORT):
        report = read_report(d)
    if not isinstance(report, dict):
        raise InputError(f"{d / REPORT}: not a dpgpu report (expected a JSON object, got "
                         f"{type(report).__name__})")
    for field, expected, ok in REPORT_FIELDS:
        if not ok(report.get(field, _MISSING)):
            got = "nothing" if field not in report else json.dumps(report[field])
            raise InputError(f"{d / REPORT}: {field}: expected {expected}, got {got}")
    return report


def summarize(release_dir: Any, *, with_evaluation: bool = False) -> dict:
    """The facts a summary shows, read from ``report.json`` (and ``evaluation.json``).

    Parameters
    ----------
    release_dir : str or path-like
        The release directory.
    with_evaluation : bool
        Add the release's ``evaluation.json`` (``dpgpu evaluate``) under
        ``"evaluation"``, and :data:`EXACT_BANNER` under ``"banner"``: the
        summary then holds exact statistics of the original data and is not
        private.  Without it the summary holds the release's public facts
        only.

    Returns
    -------
    dict
        The facts (:func:`report_facts`, with the sizes of the release files).

    Raises
    ------
    InvalidParameter
        When ``with_evaluation`` is not a bool (a truthy ``"no"`` would add
        the exact statistics).
    InputError
        When the directory is not a release, or (``with_evaluation``) its
        ``evaluation.json`` is missing or malformed
        (:func:`dpgpu.eval.evaluate.read_evaluation`).
    """
    with_evaluation = check_bool(with_evaluation, "with_evaluation")
    d = Path(release_dir)
    facts = report_facts(read_release_report(d), str(d))
    facts["files"] = {name: (d / name).stat().st_size for name in facts["files"]
                      if (d / name).exists()}
    if with_evaluation:
        from .eval.evaluate import read_evaluation  # noqa: PLC0415 - only with an evaluation

        facts["banner"] = EXACT_BANNER
        facts["evaluation"] = read_evaluation(d)
    return facts


def report_facts(report: dict, where: str = "(not saved yet)") -> dict:
    """The facts of a summary from a report dict (file sizes unknown: listed as 0).

    Parameters
    ----------
    report : dict
        A release's report (``report.json``); missing keys take defaults
        (mechanism ``"unknown"``, private, no parameters, steps or files).
    where : str
        The release directory, shown as the summary's ``"release"``.

    Returns
    -------
    dict
        The keys ``release``, ``mechanism``, ``paper``, ``private``, ``warning``,
        ``epsilon``, ``delta``, ``unit`` (:data:`UNITS`), ``seeded``,
        ``parameters``, ``steps`` (the ledger's), ``files`` (name to size, 0),
        ``caveat`` (:data:`CAVEATS` and the report's privacy unit),
        ``backend``, ``device`` and ``version``.  The run's timings are left
        out: they grow with the data, so they are not public facts
        (``diagnostics.json``).
    """
    mechanism = report.get("mechanism", "unknown")
    return {
        "release": where,
        "mechanism": mechanism,
        "paper": report.get("paper"),
        "private": bool(report.get("private", True)),
        "warning": report.get("warning"),
        "epsilon": report.get("epsilon"),
        "delta": report.get("delta"),
        "unit": UNITS.get(mechanism, "one record"),
        "seeded": bool(report.get("seeded")),
        "parameters": report.get("parameters", {}),
        "steps": _ledger_steps(report.get("ledger")),
        "files": {name: 0 for name in report.get("files", [])},
        "caveat": " ".join(c for c in (CAVEATS.get(mechanism, ""), report.get("privacy_unit")
                                       and f"Privacy unit: {report['privacy_unit']}.") if c),
        "backend": report.get("backend"),
        "device": report.get("device"),
        "version": report.get("dpgpu"),
    }


def _ledger_steps(ledger: Any) -> list:
    """The steps of a report's ledger: none where it has no list of them (a hand-made report)."""
    steps = ledger.get("steps") if isinstance(ledger, dict) else None
    return [s for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []


class Displayed:
    """Mixin: a release object (with a ``report`` dict) shows its summary in notebooks.

    Its ``repr`` names the class, the mechanism, the privacy spent (or that
    the output is not private), whether the noise was seeded and the sizes of
    what was released (:meth:`_sizes`), e.g.
    ``NGramRelease(ngram, epsilon=1.0, delta=4.8e-10, seeded=True, grams=12)``.
    """

    report: dict

    def __repr__(self) -> str:
        r = self.report
        delta = r.get("delta")
        privacy = ("NOT private" if not r.get("private", True) else f"epsilon={r.get('epsilon')}"
                   + (f", delta={delta:.3g}" if isinstance(delta, float) and delta else ""))
        sizes = "".join(f", {name}={value}" for name, value in self._sizes().items()
                        if value is not None)
        return (f"{type(self).__name__}({r.get('mechanism')}, {privacy}, "
                f"seeded={bool(r.get('seeded'))}{sizes})")

    def _sizes(self) -> dict[str, Any]:
        """The sizes the ``repr`` shows, by name (released sizes only; None: left out)."""
        return {}

    def _repr_html_(self) -> str:
        page = as_html(self._facts())
        return page[page.index("<body>") + len("<body>"):page.index("</body>")]

    def summary(self) -> str:
        """The text summary ``dpgpu report`` prints.

        Returns
        -------
        str
            :func:`as_text` of the release's facts (without an evaluation).
        """
        return as_text(self._facts())

    def _facts(self) -> dict:
        """What the summaries show (:func:`report_facts`) of a release not yet saved."""
        return report_facts(self.report)

    def to_pandas(self) -> Any:
        """What was released, one row per released item (needs ``dpgpu[pandas]``).

        Labels are decoded to the vocabulary's strings, and the end and
        start markers are the sentinels ``dpgpu.END`` and ``dpgpu.START``,
        so that an item labelled ``&`` or ``$`` is not taken for one; counts
        are the noisy ones, never exact statistics.  The columns depend on
        the mechanism: see :mod:`dpgpu.notebook`.

        Returns
        -------
        pandas.DataFrame

        Raises
        ------
        InvalidParameter
            When pandas is not installed (names ``pip install dpgpu[pandas]``),
            or the release's mechanism has no table (a loaded release of an
            unknown mechanism).
        InputError
            When a loaded release's file is missing, unreadable or malformed
            (:func:`dpgpu.notebook.to_pandas`).
        """
        from .notebook import to_pandas  # noqa: PLC0415 - pandas is optional

        return to_pandas(self)

    def plot(self, ax: Any = None, *, k: int | None = None, min_length: int | None = None,
             dims: Sequence[int] | None = None) -> Any:
        """Draw the release (needs ``dpgpu[plot]`` and ``dpgpu[pandas]``).

        Top-``k`` released strings (N-gram, PFS2), the root's next-symbol
        counts (PST), leaf boxes by noisy density (spatial: PrivTree, UG,
        AG), released n-grams per ``k`` (DPNE) or the selected strings in
        rank order (EM); see :func:`dpgpu.notebook.plot`.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw; default a new figure's.
        k : int, optional
            Bars in the top-k charts (default 20).
        min_length : int, optional
            Shortest string in the N-gram, PFS2 and EM charts (default 1).
        dims : pair of int, optional
            Dimensions drawn for a spatial release of 3 or more dimensions.
            An option given for a release whose plot it does not shape is
            refused (:data:`dpgpu.notebook.PLOT_OPTIONS`).

        Returns
        -------
        matplotlib.axes.Axes
            ``ax``, or the new figure's.

        Raises
        ------
        InvalidParameter
            When pandas or matplotlib is not installed, for a bad ``k``,
            ``min_length`` or ``dims``, an option given for a release whose
            plot it does not shape, an ``ax`` that is not a matplotlib Axes,
            or a release whose mechanism has no table.
        InputError
            When a loaded release's file is missing, unreadable or malformed.
        """
        from .notebook import plot  # noqa: PLC0415 - matplotlib is optional

        return plot(self, ax, k=k, min_length=min_length, dims=dims)


class LoadedRelease(Displayed):
    """A release directory read back (:func:`load_release`).

    Parameters
    ----------
    path : str or path-like
        The release directory.

    Attributes
    ----------
    path : Path
        The release directory.
    report : dict
        ``report.json``.
    files : list of str
        The release files present.
    """

    def _facts(self) -> dict:
        return report_facts(self.report, str(self.path))

    def __init__(self, path: Any):
        self.path = Path(path)
        self.report = read_release_report(self.path)
        self.files = [f for f in self.report.get("files", []) if (self.path / f).exists()]

    def _sizes(self) -> dict[str, Any]:
        return {"files": self.files}

    def range_count(self, lo: Any, hi: Any) -> Any:
        """Range-count estimates of a spatial release (PrivTree, UG or AG: ``leaves.csv``).

        The leaves are read once
        (:meth:`dpgpu.mechanisms.privtree.SpatialHistogram.load`); the
        answers are those of the release object that was saved.

        Parameters
        ----------
        lo, hi : (Q, d) or (d,) array of float
            The queries' corners
            (:meth:`~dpgpu.mechanisms.privtree.SpatialHistogram.range_count`).

        Returns
        -------
        numpy.ndarray of float64
            One estimate per query.

        Raises
        ------
        InputError
            When the release is not spatial (no ``leaves.csv``), or its
            report or ``leaves.csv`` is malformed.
        InvalidParameter
            Bad query corners.
        """
        if getattr(self, "_leaves", None) is None:
            from .mechanisms.privtree.spatial import SpatialHistogram  # noqa: PLC0415

            self._leaves = SpatialHistogram.load(self.path)
        return self._leaves.range_count(lo, hi)

    def synthetic(self, **options: Any) -> Any:
        """The synthetic dataset of the release, loaded with :func:`dpgpu.load`.

        The file is read in the format the report names
        (``synthetic_format``) with the reader options it records
        (``synthetic_options``: ``tokens="chars"`` for a ``lines`` file of
        one-character items, a wide file's state columns, a trajectory's
        grid, ...), so it gives the sequences the release made, under their
        labels, however its original was read
        (:func:`dpgpu.release.read_synthetic`).

        Parameters
        ----------
        **options
            Options of :func:`dpgpu.load`, which win over the recorded ones:
            ``vocab=`` (the release's public vocabulary, to get its item ids),
            or the reader options of a release written before reports
            recorded them (``tokens="chars"``, ...).

        Returns
        -------
        SequenceDB

        Raises
        ------
        InputError
            When the release has no synthetic dataset, or it cannot be read
            (with ``vocab=``: also when it holds an item that ``vocab`` lacks).
        InvalidParameter
            When an option is not one of :func:`dpgpu.load` for the file's
            format, or has a bad value.
        """
        name = self.report.get("synthetic_file")
        if not name or not (self.path / name).exists():
            raise InputError(f"{self.path}: this release holds no synthetic dataset")
        return read_synthetic(self.path / name, self.report, **options)


def load_release(path: Any) -> LoadedRelease:
    """Read a release directory written by any dpgpu mechanism.

    Parameters
    ----------
    path : str or path-like
        The release directory (holding ``report.json``).

    Returns
    -------
    LoadedRelease
        Its report and the release files present; shows its summary in a
        notebook, ``.summary()`` gives the text.

    Raises
    ------
    InputError
        When ``path`` is not a directory, or its ``report.json`` is missing,
        unreadable, not a JSON object, names a file outside the directory,
        or lacks or has a malformed field of :data:`REPORT_FIELDS`
        (:func:`read_release_report`); or when its ``diagnostics.json`` is
        not valid JSON.
    InvalidParameter
        When ``path`` is not a str or path-like.
    """
    return LoadedRelease(release_path(path, "path"))


def guarantee(facts: dict) -> str:
    """The privacy statement in one sentence.

    Parameters
    ----------
    facts : dict
        A summary's facts (:func:`report_facts`): ``private``, ``warning``,
        ``epsilon``, ``delta`` and ``unit`` are used.

    Returns
    -------
    str
        The (epsilon, delta) guarantee for the protected unit, or, for a
        non-private output, a warning not to publish it.
    """
    if not facts["private"]:
        why = facts.get("warning") or "a non-private baseline for comparison"
        return f"This output is NOT differentially private ({why}): do not publish it."
    eps, dlt = facts["epsilon"], facts["delta"] or 0
    delta = f", delta = {dlt:.3g}" if dlt else ""
    return (f"({eps:g}{delta})-differential privacy for {facts['unit']}: adding or removing "
            f"{facts['unit']} changes the probability of any release by a factor of at most "
            f"e^{eps:g}" + (f", up to an additional {dlt:.3g}" if dlt else "") + ".")


def utility_table(evaluation: dict) -> str:
    """The evaluation's tables, as ``dpgpu evaluate`` prints them.

    Parameters
    ----------
    evaluation : dict
        The contents of ``evaluation.json``.

    Returns
    -------
    str
        :func:`dpgpu.eval.evaluate.format_table` of it.
    """
    from .eval.evaluate import format_table  # noqa: PLC0415 - only with an evaluation

    return format_table(evaluation)


def as_text(facts: dict) -> str:
    """The summary for a terminal (opening with its ``banner``, when it has one).

    Parameters
    ----------
    facts : dict
        A summary's facts (:func:`report_facts`, :func:`summarize`).

    Returns
    -------
    str
        Lines of text: the release, guarantee, caveat, parameters, ledger
        steps, files, the utility tables (with an ``evaluation``) and what
        made it; no trailing newline.
    """
    lines = [*([facts["banner"], ""] if facts.get("banner") else []),
             f"release {facts['release']}: {facts['mechanism']}"
             + (f" ({facts['paper']})" if facts["paper"] else ""),
             "", "guarantee: " + guarantee(facts)]
    if facts["caveat"]:
        lines.append("it rests on: " + facts["caveat"])
    if facts["seeded"]:
        lines.append("note: the noise was seeded (reproducible by whoever knows the seed).")
    lines += ["", "parameters: " + ", ".join(f"{k}={v}" for k, v in facts["parameters"].items()),
              "", "privacy ledger:"]
    for s in facts["steps"]:
        lines.append(f"  {s.get('index', '?')}. {s.get('name')}: epsilon={s.get('epsilon'):g}, "
                     f"delta={s.get('delta', 0):g}, sampling delta={s.get('sampling_delta', 0):.3g}"
                     f" ({s.get('composition', 'sequential')})")
    lines += ["", "files: " + ", ".join(f"{k} ({v:,} bytes)" for k, v in facts["files"].items())]
    if facts.get("evaluation"):
        lines += ["", "utility (evaluation.json, computed from the exact original data: a "
                      "diagnostic, NOT private):", utility_table(facts["evaluation"])]
    lines.append(f"\nmade by dpgpu {facts['version']} on {facts['backend']} ({facts['device']})")
    return "\n".join(lines)


def as_html(facts: dict) -> str:
    """A self-contained HTML page of the summary (its ``banner``, if any, heads the page).

    Parameters
    ----------
    facts : dict
        A summary's facts (:func:`report_facts`, :func:`summarize`).

    Returns
    -------
    str
        The whole HTML document (inline style, every value escaped).
    """
    e = html.escape
    steps = "".join(
        f"<tr><td>{e(str(s.get('index', '')))}</td><td>{e(str(s.get('name')))}</td>"
        f"<td>{s.get('epsilon', 0):g}</td><td>{s.get('delta', 0):g}</td>"
        f"<td>{s.get('sampling_delta', 0):.3g}</td><td>{e(str(s.get('composition', '')))}</td></tr>"
        for s in facts["steps"])
    params = "".join(f"<tr><th>{e(str(k))}</th><td>{e(str(v))}</td></tr>"
                     for k, v in facts["parameters"].items())
    files = "".join(f"<li>{e(k)} ({v:,} bytes)</li>" for k, v in facts["files"].items())
    ev = facts.get("evaluation")
    ev_html = (f"<h2>Utility</h2><p>From <code>evaluation.json</code> (computed from the "
               f"exact original data: a diagnostic, NOT private).</p><pre>"
               f"{e(utility_table(ev))}</pre>") if ev else ""
    banner = facts.get("banner")
    banner_html = (f'<p class="not-private" style="border:3px solid #b00;padding:.6em;'
                   f'color:#b00"><b>{e(banner)}</b></p>') if banner else ""
    title = ("NOT PRIVATE - " if banner else "") + f"dpgpu release: {facts['mechanism']}"
    seeded = ("<p><b>Seeded:</b> the noise is reproducible by whoever knows the seed.</p>"
              if facts["seeded"] else "")
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{e(title)}</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}td,th{{padding:.2em .6em;
text-align:left}}table{{border-collapse:collapse}}tr:nth-child(even){{background:#f4f4f4}}</style>
</head><body>
{banner_html}
<h1>{e(facts['mechanism'])} release</h1>
<p>{e(facts['paper'] or '')}</p>
<h2>Privacy guarantee</h2>
<p class="guarantee">{e(guarantee(facts))}</p>
<p><b>What it rests on:</b> {e(facts['caveat'])}</p>
{seeded}
<h2>Privacy ledger</h2>
<table class="ledger"><tr><th>#</th><th>step</th><th>epsilon</th><th>delta</th>
<th>sampling delta</th><th>composition</th></tr>{steps}</table>
<h2>Parameters</h2><table>{params}</table>
<h2>Files</h2><ul>{files}</ul>
{ev_html}
<p>dpgpu {e(str(facts['version']))}, backend {e(str(facts['backend']))} ({e(str(facts['device']))})</p>
</body></html>
"""
