"""``dpgpu dpne DATA --epsilon E --delta D --out DIR``: DP n-gram extraction (DPNE, NeurIPS'21).

Writes a release directory: ``ngrams.tsv`` (columns ``k``, ``gram``: the
released k-grams, no counts), ``report.json`` and ``diagnostics.json``
(timings; not private, not part of the release).  ``--delta`` is the
release's total delta: min(1e-9, delta / 100) of it covers the samplers'
accounted distance from exact noise and the mechanism gets the rest.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..mechanisms.dpne import MAX_CANDIDATES, METHODS, POLICIES, RULES, SCHEDULES, DPNERelease, dpne
from .common import (Progress, add_data_arguments, add_engine_arguments, add_mechanism_command,
                     load_from_args, run_mechanism, whole_count)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``dpne`` subcommand."""
    p = add_mechanism_command(sub, "dpne", help="DPNE: user-level DP n-gram extraction",
                              description=__doc__, delta=True,
                              example="dpgpu dpne posts.jsonl --text body --user author "
                                      "--epsilon 4 --delta 1e-7 --max-n 5 --seed 7 "
                                      "--out kgrams/")
    add_data_arguments(p)
    p.add_argument("--max-n", type=int, default=9, help="longest n-gram (default 9)")
    p.add_argument("--contribution", type=int, default=300,
                   help="Delta_0: distinct k-grams each user contributes per level (default 300)")
    p.add_argument("--eta", type=float, default=None,
                   help="tolerated share of spurious n-grams (default 0.01; DPNE only)")
    p.add_argument("--rule", choices=RULES, default=None,
                   help="valid k-gram rule (default both; DPNE only)")
    p.add_argument("--schedule", choices=SCHEDULES, default=None,
                   help="sigma_k schedule (default equal; DPNE only)")
    p.add_argument("--decay", type=float, default=None,
                   help="geometric schedule: c of sigma_k = c sigma_{k-1} (default 1.0; "
                        "--schedule geometric only)")
    p.add_argument("--max-candidates", type=whole_count, default=None,
                   help="work cap: a level with more valid candidates |V_k| is not extracted "
                        f"(default {MAX_CANDIDATES:_}; DPNE only)")
    p.add_argument("--method", choices=("dpne",) + METHODS, default="dpne",
                   help="DPNE or a DPSU baseline of the paper (default dpne)")
    p.add_argument("--policy", choices=POLICIES, default="weighted",
                   help="DPSU policy of the baselines (default weighted)")
    p.add_argument("--alpha", type=float, default=None,
                   help="Policy Laplace cutoff Gamma = rho + alpha * lambda (default 5; "
                        "--policy laplace only)")
    add_engine_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load, release, write."""
    return run_mechanism(args, load_from_args, _release, _describe)


def _release(args: argparse.Namespace, db: Any, progress: Progress) -> DPNERelease:
    """The k-grams of ``db`` released by DPNE or a DPSU baseline."""
    return dpne(db, args.epsilon, args.delta, max_n=args.max_n,
                contribution=args.contribution, eta=args.eta, rule=args.rule,
                schedule=args.schedule, decay=args.decay, seed=args.seed,
                backend=args.backend, method=args.method, policy=args.policy,
                alpha=args.alpha, max_candidates=args.max_candidates, engine=args.engine,
                client=args.client, progress=progress)


def _describe(release: DPNERelease) -> str:
    """Summary of a DPNE release."""
    return f"{release.report['method']} release: k-grams per k {release.counts()}"
