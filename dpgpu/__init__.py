"""dpgpu: differentially private publishing and mining of sequential data.

Importing dpgpu imports neither CuPy nor Numba; both load on first use.
"""

__version__ = "0.1.0"

from .data.sequencedb import SequenceDB  # noqa: E402
from .data.vocabulary import Vocabulary  # noqa: E402
from .data.load import load, demo_path  # noqa: E402
from .errors import BudgetExceeded, DPGPUError, InputError, InvalidParameter  # noqa: E402
from .mechanisms.ngram import ngram  # noqa: E402
from .mechanisms.pfs2 import pfs2  # noqa: E402
from .mechanisms.privtree import privtree_spatial, pst  # noqa: E402
from .mechanisms.privtree.em import em_top_k  # noqa: E402
from .mechanisms.dpne import dpne  # noqa: E402
from .report import load_release  # noqa: E402
from .notebook import END, START  # noqa: E402 - the markers of release frames
from .scale.loading import load_distributed  # noqa: E402 - imports Dask only when called

__all__ = [
    "SequenceDB", "Vocabulary", "load", "load_distributed", "demo_path", "load_release",
    "ngram", "pst", "privtree_spatial", "pfs2", "dpne", "em_top_k", "END", "START",
    "DPGPUError", "InvalidParameter", "InputError", "BudgetExceeded",
    "__version__",
]
