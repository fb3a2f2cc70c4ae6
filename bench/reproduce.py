"""One command per paper: ``python bench/reproduce.py PAPER [options]``.

=========  ===========================================================  ==========================
PAPER      what it regenerates (on ../shared/datasets)                  script
=========  ===========================================================  ==========================
ngram      N-gram (CCS'12) Table 5, Figs. 2, 4, 8-10 on MSNBC, release   reproduce_ngram.py
privtree   PrivTree (SIGMOD'16) Fig. 6/7 on MSNBC vs N-gram, EM,         bench_privtree.py
           Truncate; spatial
dpne       DPNE (NeurIPS'21) Table 5 on MSNBC, with the DPSU baselines   bench_dpne.py
pfs2       PFS² (ICDE'16) Fig. 2 on MSNBC and BMS1, vs N-gram + miner    bench_pfs2.py
=========  ===========================================================  ==========================

Every script repeats each release with other keys, reports mean and spread,
writes JSON, a markdown summary with the paper's numbers beside ours, and
(where it plots) a PNG to ``bench/results/`` (``--out DIR`` elsewhere),
naming the machine and backend.  The repetitions run in ``--jobs N`` worker
processes, threads on a GPU (default: one per core; ``bench/parallel.py``), with the same
results as ``--jobs 1`` for the same seeds.  Options after PAPER go to the
script (``--help`` lists them; each has a reduced setting for a quick CPU
run, e.g. ``--runs 1`` / ``--reps 1``).
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

SCRIPTS = {"ngram": "reproduce_ngram.py", "privtree": "bench_privtree.py",
           "dpne": "bench_dpne.py", "pfs2": "bench_pfs2.py"}


def main(argv: list[str]) -> int:
    """Run the script of the paper named first in ``argv``."""
    if not argv or argv[0] not in SCRIPTS:
        print(__doc__)
        return 2
    script = Path(__file__).resolve().parent / SCRIPTS[argv[0]]
    if not script.exists():
        print(f"reproduce: {script.name} is not written yet", file=sys.stderr)
        return 2
    sys.argv = [str(script)] + argv[1:]
    runpy.run_path(str(script), run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
