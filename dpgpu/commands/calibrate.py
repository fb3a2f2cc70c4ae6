"""``dpgpu calibrate``: noise scales and thresholds for a privacy target.

Examples::

    dpgpu calibrate gaussian --epsilon 1 --delta 1e-5 [--sensitivity 1]
    dpgpu calibrate laplace --epsilon 0.5 --sensitivity 3
    dpgpu calibrate dpsu --epsilon 1 --delta 1e-5 --max-items 10 [--json]

Numbers are printed at full precision, one ``name value`` per line (or as
JSON).  Invalid values (NaN, infinities, zero, negatives, a --max-items
above 10000, a Laplace scale past the samplers' limit of 2**52) exit with
status 2 and a one-line message naming the parameter.
"""

from __future__ import annotations

import argparse

from ..privacy import calibration
from .common import add_command, print_json


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``calibrate`` subcommand."""
    p = add_command(sub, "calibrate", help="noise scale / threshold for a privacy target",
                    description=__doc__,
                    example="dpgpu calibrate gaussian --epsilon 1 --delta 1e-5 --sensitivity 1")
    kinds = p.add_subparsers(dest="kind", metavar="KIND", required=True,
                             parser_class=type(p))
    gauss = _kind(kinds, "gaussian", "analytic Gaussian sigma (Balle & Wang 2018)",
                  "--epsilon 1 --delta 1e-5 --sensitivity 1")
    _target(gauss, delta=True)
    gauss.add_argument("--sensitivity", type=float, default=1.0, help="L2 sensitivity (default 1)")
    lap = _kind(kinds, "laplace", "(discrete) Laplace scale", "--epsilon 0.5 --sensitivity 20")
    _target(lap, delta=False)
    lap.add_argument("--sensitivity", type=float, default=1.0, help="L1 sensitivity (default 1)")
    dpsu = _kind(kinds, "dpsu", "weighted-Gaussian DP set union sigma and threshold "
                 "(DPNE Theorem 2.1)", "--epsilon 4 --delta 1e-7 --max-items 50")
    _target(dpsu, delta=True)
    dpsu.add_argument("--max-items", type=int, required=True,
                      help=f"items each user contributes at most (Delta_0), at most "
                           f"{calibration.MAX_ITEMS:,}")
    p.set_defaults(func=run)


def _kind(kinds: argparse._SubParsersAction, name: str, help: str,
          options: str) -> argparse.ArgumentParser:
    """Add ``calibrate NAME``, with ``dpgpu calibrate NAME OPTIONS`` as its help's example."""
    return kinds.add_parser(name, help=help, description=help[:1].upper() + help[1:] + ".",
                            epilog=f"example:\n  dpgpu calibrate {name} {options}",
                            formatter_class=argparse.RawDescriptionHelpFormatter)


def _target(parser: argparse.ArgumentParser, *, delta: bool) -> None:
    parser.add_argument("--epsilon", type=float, required=True, help="epsilon (> 0)")
    if delta:
        parser.add_argument("--delta", type=float, required=True, help="delta in (0, 1)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def compute(args: argparse.Namespace) -> dict:
    """The calibrated values for the parsed arguments (inputs echoed)."""
    if args.kind == "gaussian":
        sigma = calibration.analytic_gaussian_sigma(args.epsilon, args.delta, args.sensitivity)
        return {"mechanism": "gaussian", "epsilon": args.epsilon, "delta": args.delta,
                "sensitivity": args.sensitivity, "sigma": sigma}
    if args.kind == "laplace":
        scale = calibration.laplace_scale(args.epsilon, args.sensitivity, name="--sensitivity")
        return {"mechanism": "laplace", "epsilon": args.epsilon,
                "sensitivity": args.sensitivity, "scale": scale}
    sigma, rho = calibration.dpsu_gaussian(args.epsilon, args.delta, args.max_items)
    return {"mechanism": "dpsu", "epsilon": args.epsilon, "delta": args.delta,
            "max_items": args.max_items, "sigma": sigma, "rho": rho}


def run(args: argparse.Namespace) -> int:
    """Print the calibration."""
    result = compute(args)
    if args.json:
        print_json(result)
    else:
        outputs = [k for k in ("sigma", "scale", "rho") if k in result]
        for key in outputs:
            print(f"{key} {result[key]!r}")
    return 0
