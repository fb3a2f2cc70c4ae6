"""``dpgpu report DIR [--html FILE] [--with-evaluation]``: what a release holds and guarantees.

The summary shows the release's public facts only (the guarantee, the
ledger, the parameters, the files), so it may be published with the
release.  ``--with-evaluation`` adds the utility figures of the release's
``evaluation.json`` (``dpgpu evaluate``); those are computed from the exact
original data (its exact size, exact counts), so the summary and the page
then open with a NOT PRIVATE banner and must not be published.  The page
is written atomically, outside the release directory it summarises, and
never over an existing file without ``--force``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..data.io import atomic_output, check_output
from ..release import REPORT
from ..report import as_html, as_text, summarize
from .common import add_command, check_outside_release, nonempty_path, print_json


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``report`` subcommand."""
    p = add_command(sub, "report", help="summarise a release directory", description=__doc__,
                    example="dpgpu report release/ --html release.html")
    p.add_argument("release", type=nonempty_path, help="release directory (with report.json)")
    p.add_argument("--html", type=nonempty_path,
                   help="also write a self-contained HTML page here (outside the release "
                        "directory)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--with-evaluation", action="store_true",
                   help="add the utility figures of the release's evaluation.json: exact "
                        "statistics of the original data, so the output is marked NOT private "
                        "(do not publish it)")
    p.add_argument("--force", action="store_true", help="replace an existing HTML file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the page's path, print the summary (and write the page)."""
    release = Path(args.release)
    if args.html:
        check_page(args.html, release, force=args.force)
    facts = summarize(release, with_evaluation=args.with_evaluation)
    if args.json:
        print_json(facts)
    else:
        print(as_text(facts))
    if args.html:
        with atomic_output(args.html, force=args.force, inputs=[release / REPORT]) as f:
            f.write(as_html(facts))
    return 0


def check_page(path: str, release: Path, *, force: bool) -> None:
    """Check, before anything is read, that the HTML page may be written at ``path``.

    Parameters
    ----------
    path : str
        The ``--html`` path.
    release : pathlib.Path
        The release directory summarised.
    force : bool
        Whether an existing file may be replaced.

    Raises
    ------
    InputError
        When ``path`` lies inside ``release`` (even with ``force``: the page
        would replace or join the files it summarises), or
        :func:`dpgpu.data.io.check_output` refuses it.
    """
    check_outside_release(path, release, "the page summarises the release")
    check_output(path, force=force, inputs=[release / REPORT])
