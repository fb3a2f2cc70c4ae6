"""Readable summaries of release directories (``dpgpu report``).

A summary states what was released, the privacy guarantee in plain words
(epsilon, delta, and the unit it protects), every ledger step, and what the
guarantee does *not* cover; with an ``evaluation.json`` beside the release it
adds the utility figures.  Text for the terminal, or a self-contained HTML
page.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Sequence

from .errors import InputError
from .release import read_report

#: What one mechanism's guarantee protects: the unit whose presence is hidden.
UNITS = {"ngram": "one sequence", "privtree-pst": "one sequence", "pfs2": "one sequence",
         "dpne": "one user (all of that user's texts)", "privtree-spatial": "one point"}

#: What each mechanism's guarantee rests on, beyond epsilon and delta.
CAVEATS = {
    "ngram": "Only each sequence's first l_max items are used; the guarantee assumes one "
             "sequence per person (a person with several sequences is protected k-fold less).",
    "privtree-pst": "Only each sequence's first l_top symbols are used; one sequence per person "
                    "is assumed.",
    "pfs2": "Sequences are shrunk to a noisy l_max; one sequence per person is assumed.",
    "dpne": "Each user contributes at most the configured number of n-grams per level; "
            "texts must carry the right user ids.",
    "privtree-spatial": "The spatial domain must be public (given with --bounds); a domain "
                        "taken from the data itself is not covered.",
}


def summarize(release_dir: Any) -> dict:
    """The facts a summary shows, read from ``report.json`` (and ``evaluation.json``).

    Raises
    ------
    InputError
        When the directory is not a release.
    """
    d = Path(release_dir)
    facts = report_facts(read_report(d), str(d))
    facts["files"] = {name: (d / name).stat().st_size for name in facts["files"]
                      if (d / name).exists()}
    evaluation = d / "evaluation.json"
    if evaluation.exists():
        try:
            facts["evaluation"] = json.loads(evaluation.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InputError(f"{evaluation}: not valid JSON ({exc})") from None
    return facts


def report_facts(report: dict, where: str = "(not saved yet)") -> dict:
    """The facts of a summary from a report dict (file sizes unknown: listed as 0)."""
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
        "steps": report.get("ledger", {}).get("steps", []),
        "files": {name: 0 for name in report.get("files", [])},
        "caveat": " ".join(c for c in (CAVEATS.get(mechanism, ""), report.get("privacy_unit")
                                       and f"Privacy unit: {report['privacy_unit']}.") if c),
        "backend": report.get("backend"),
        "device": report.get("device"),
        "timings": report.get("timings", {}),
        "version": report.get("dpgpu"),
    }


class Displayed:
    """Mixin: a release object (with a ``report`` dict) shows its summary in notebooks."""

    report: dict

    def _repr_html_(self) -> str:
        page = as_html(report_facts(self.report))
        return page[page.index("<body>") + len("<body>"):page.index("</body>")]

    def summary(self) -> str:
        """The text summary ``dpgpu report`` prints."""
        return as_text(report_facts(self.report))

    def to_pandas(self) -> Any:
        """What was released, one row per released item (needs ``dpgpu[pandas]``).

        Labels are decoded to the vocabulary's strings; counts are the noisy
        ones, never exact statistics.  The columns depend on the mechanism:
        see :mod:`dpgpu.notebook`.

        Returns
        -------
        pandas.DataFrame

        Raises
        ------
        InvalidParameter
            When pandas is not installed (names ``pip install dpgpu[pandas]``).
        """
        from .notebook import to_pandas  # noqa: PLC0415 - pandas is optional

        return to_pandas(self)

    def plot(self, ax: Any = None, *, k: int = 20, min_length: int = 1,
             dims: Sequence[int] = (0, 1)) -> Any:
        """Draw the release (needs ``dpgpu[plot]`` and ``dpgpu[pandas]``).

        Top-``k`` released strings (N-gram, PFS2), the root's next-symbol
        counts (PST), leaf boxes by noisy density (spatial) or released
        n-grams per ``k`` (DPNE); see :func:`dpgpu.notebook.plot`.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw; default a new figure's.
        k : int
            Bars in the top-k charts.
        min_length : int
            Shortest string in the N-gram and PFS2 charts.
        dims : pair of int
            Dimensions drawn for a spatial release of 3 or more dimensions.

        Returns
        -------
        matplotlib.axes.Axes
        """
        from .notebook import plot  # noqa: PLC0415 - matplotlib is optional

        return plot(self, ax, k=k, min_length=min_length, dims=dims)


class LoadedRelease(Displayed):
    """A release directory read back (:func:`load_release`).

    Attributes
    ----------
    path : Path
    report : dict
        ``report.json``.
    files : list of str
        The release files present.
    """

    def __init__(self, path: Any):
        self.path = Path(path)
        self.report = read_report(self.path)
        self.files = [f for f in self.report.get("files", []) if (self.path / f).exists()]

    def __repr__(self) -> str:
        return (f"LoadedRelease({self.report.get('mechanism')}, epsilon="
                f"{self.report.get('epsilon')}, files={self.files})")

    def synthetic(self, **options: Any) -> Any:
        """The synthetic dataset of the release, loaded with :func:`dpgpu.load`.

        Raises
        ------
        InputError
            When the release has no synthetic dataset.
        """
        from .data.load import load  # noqa: PLC0415

        name = self.report.get("synthetic_file")
        if not name or not (self.path / name).exists():
            raise InputError(f"{self.path}: this release holds no synthetic dataset")
        return load(self.path / name, **options)


def load_release(path: Any) -> LoadedRelease:
    """Read a release directory written by any dpgpu mechanism."""
    return LoadedRelease(path)


def guarantee(facts: dict) -> str:
    """The privacy statement in one sentence."""
    if not facts["private"]:
        why = facts.get("warning") or "a non-private baseline for comparison"
        return f"This output is NOT differentially private ({why}): do not publish it."
    eps, dlt = facts["epsilon"], facts["delta"] or 0
    delta = f", delta = {dlt:.3g}" if dlt else ""
    return (f"({eps:g}{delta})-differential privacy for {facts['unit']}: adding or removing "
            f"{facts['unit']} changes the probability of any release by a factor of at most "
            f"e^{eps:g}" + (f", up to an additional {dlt:.3g}" if dlt else "") + ".")


def utility_table(evaluation: dict) -> str:
    """The evaluation's tables, as ``dpgpu evaluate`` prints them."""
    from .eval.evaluate import format_table  # noqa: PLC0415 - only with an evaluation

    return format_table(evaluation)


def as_text(facts: dict) -> str:
    """The summary for a terminal."""
    lines = [f"release {facts['release']}: {facts['mechanism']}"
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
        lines += ["", "utility (evaluation.json, computed from the original data: a diagnostic, "
                      "not private):", utility_table(facts["evaluation"])]
    lines.append(f"\nmade by dpgpu {facts['version']} on {facts['backend']} ({facts['device']})")
    return "\n".join(lines)


def as_html(facts: dict) -> str:
    """A self-contained HTML page of the summary."""
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
               f"original data: a diagnostic, not private).</p><pre>{e(utility_table(ev))}"
               f"</pre>") if ev else ""
    seeded = ("<p><b>Seeded:</b> the noise is reproducible by whoever knows the seed.</p>"
              if facts["seeded"] else "")
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>dpgpu release: {e(facts['mechanism'])}</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}td,th{{padding:.2em .6em;
text-align:left}}table{{border-collapse:collapse}}tr:nth-child(even){{background:#f4f4f4}}</style>
</head><body>
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
