"""``dpgpu report DIR [--html FILE]``: what a release holds and what it guarantees."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..data.io import atomic_output
from ..release import REPORT
from ..report import as_html, as_text, summarize
from .common import add_command, print_json


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``report`` subcommand."""
    p = add_command(sub, "report", help="summarise a release directory", description=__doc__,
                    example="dpgpu report release/ --html release.html")
    p.add_argument("release", help="release directory (with report.json)")
    p.add_argument("--html", help="also write a self-contained HTML page here")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--force", action="store_true", help="replace an existing HTML file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the summary (and write the page)."""
    facts = summarize(args.release)
    if args.json:
        print_json(facts)
    else:
        print(as_text(facts))
    if args.html:
        with atomic_output(args.html, force=args.force,
                           inputs=[Path(args.release) / REPORT]) as f:
            f.write(as_html(facts))
    return 0
