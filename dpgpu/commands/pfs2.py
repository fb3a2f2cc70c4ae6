"""``dpgpu pfs2 DATA --epsilon E --threshold T --out DIR``: frequent subsequences (PFS^2, ICDE'16).

Writes a release directory: ``report.json``, ``frequent.tsv`` (pattern,
noisy support) and ``diagnostics.json`` (timings; not private, not part of
the release).  ``--threshold`` is relative (0.01: contained in 1% of the
sequences).  ``--variant`` runs one of the paper's baselines instead of
PFS^2: ``rr`` and ``sr`` (random deletion / sequence shrinking on the
samples, threshold not relaxed) and ``pl`` (no sampling: supports on the
whole database shrunk to l_max).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..mechanisms.pfs2 import MAX_CANDIDATES, MAX_CANDIDATES_LIMIT, PFS2Release, pfs2
from ..mechanisms.pfs2.variants import VARIANTS
from .common import (Progress, add_data_arguments, add_engine_arguments, add_mechanism_command,
                     load_from_args, run_mechanism, whole_count)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``pfs2`` subcommand."""
    p = add_mechanism_command(sub, "pfs2", help="PFS^2: differentially private frequent "
                              "subsequences", description=__doc__,
                              example="dpgpu pfs2 msnbc.seq.gz --epsilon 1 --threshold 0.01 "
                                      "--l-upper 20 --seed 7 --out frequent/")
    add_data_arguments(p)
    p.add_argument("--threshold", type=float, required=True,
                   help="relative support threshold in (0, 1), e.g. 0.01")
    p.add_argument("--l-upper", type=int, default=20,
                   help="upper bound l_1 on the sample length constraint (default 20)")
    p.add_argument("--eta", type=float, default=0.85, help="length quantile (default 0.85)")
    p.add_argument("--zeta", type=float, default=0.3, help="relaxation parameter (default 0.3)")
    p.add_argument("--max-candidates", type=whole_count, default=MAX_CANDIDATES,
                   help="public cap on the noisy local supports drawn, at least the number of "
                        f"items and at most {MAX_CANDIDATES_LIMIT:_} (about 1 KB of memory "
                        f"each; default {MAX_CANDIDATES:_}); lower it to run at a larger "
                        "--epsilon (it sets the samplers' accounted delta)")
    p.add_argument("--variant", choices=VARIANTS, default="pfs2",
                   help="pfs2 (default), or a baseline of the paper: rr (random deletion on "
                        "the samples, threshold not relaxed), sr (sequence shrinking on the "
                        "samples, threshold not relaxed), pl (no sampling: noisy supports on "
                        "the whole database shrunk to l_max); all are epsilon-DP")
    add_engine_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load, mine, write."""
    return run_mechanism(args, load_from_args, _release, _describe)


def _release(args: argparse.Namespace, db: Any, progress: Progress) -> PFS2Release:
    """The frequent subsequences of ``db``."""
    return pfs2(db, args.epsilon, args.threshold, l_upper=args.l_upper, eta=args.eta,
                zeta=args.zeta, max_candidates=args.max_candidates, variant=args.variant,
                seed=args.seed, backend=args.backend, engine=args.engine, client=args.client,
                progress=progress)


def _describe(release: PFS2Release) -> str:
    """Summary of a PFS2 release."""
    return (f"PFS2 release: {len(release.patterns)} frequent sequences, "
            f"L_f={release.report['pre_mining']['L_f']}")
