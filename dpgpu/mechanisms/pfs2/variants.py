"""The ablation baselines of PFS^2 (Sections VII-D and VII-F): RR, SR and PL.

``dpgpu.pfs2(..., variant=...)`` runs PFS^2 itself (``"pfs2"``, the
default) or one of the baselines the paper compares it with.  Pre-mining
(``|D|~``, ``l_max``, ``L_f`` at ``eps_1 .. eps_3``) and the candidate
generation of every level are PFS^2's in all four; what changes is how a
level decides which candidates are frequent.

``"sr"`` (Fig. 4): sequence shrinking, threshold *not* relaxed
    As PFS^2, but a candidate survives the sample when its noisy local
    support reaches ``theta |D|~ / L_f`` (the user's threshold on the
    estimated sample size) instead of the relaxed ``theta'``.

``"rr"`` (Fig. 4): random deletion, threshold not relaxed
    As ``"sr"``, but a sample's sequences are cut to ``l_max`` items by
    random deletion (:func:`random_deletion`: a uniformly random
    ``l_max``-subset of its positions, kept in order; shorter sequences are
    kept whole) instead of shrinking; irrelevant items are not deleted first.
    Each sequence belongs to one sample, so it is cut once, for the level
    that reads its sample.

``"pl"`` (Fig. 7): no sampling-based pruning
    Level ``k`` shrinks the *whole* database ``D`` with ``C_k`` and ``l_max``
    (:mod:`.shrink`), adds noise to the supports of all of ``C_k`` there and
    releases the candidates whose noisy support reaches ``theta |D|~``, with
    that noisy support.  No sample, no second count on ``D``.

Budget
------
SR and RR spend as PFS^2: ``eps_4`` on the pruning (parallel over the
``L_f`` disjoint samples) and ``eps_5 / L_f`` on each level's supports on
``D``.  PL has no pruning step, so PFS^2's pruning share goes to its only
mining step: PL's levels share ``eps_4 + eps_5`` (:func:`pl_epsilons`),
``eps_k = (eps_4 + eps_5) / L_f`` each, charged level by level.  With the
default split the mining phase gets 0.9 epsilon in PL as in PFS^2.

Privacy argument
----------------
Pre-mining is Theorem 7's, unchanged.

* SR: the pruning step is PFS^2's (Theorem 6: local transformation,
  ``Delta_k = min(C(l_max, k), |C_k|)``, scale ``Delta_k / eps_4``); only
  the threshold it is compared with differs, and ``theta |D|~ / L_f`` is
  public (post-processing of released values).  Supports on ``D`` as
  PFS^2.  Total ``epsilon``.
* RR: random deletion is a *randomized* local transformation: the cut of
  a sequence reads that sequence, ``l_max`` and keyed ChaCha20 words of its
  own identity (level, sequence index, position; :func:`random_deletion`),
  independent of every other sequence and of the data.  For every fixed
  outcome of those words, neighbouring samples map to neighbouring cut
  samples; the words are independent uniform draws whichever index a
  sequence gets (as for the random partition, the index keys a draw, it
  does not condition it), so the pruning is ``eps_4``-DP by Theorem 6's
  argument.  A cut sequence has at most ``l_max`` items, so
  ``Delta_k = min(C(l_max, k), |C_k|)`` holds unchanged.  The threshold is
  SR's.  Total ``epsilon``.
* PL: shrinking reads one sequence, ``C_k`` and ``l_max`` (released values
  only), so it is a local transformation of ``D`` (Theorem 6's argument,
  on ``D`` instead of ``db_k``): one added or removed sequence adds or
  removes one shrunk sequence of at most ``l_max`` items, which contains at
  most ``C(l_max, k)`` distinct ``k``-sequences, so the supports of ``C_k``
  on the shrunk ``D`` have sensitivity ``Delta_k = min(C(l_max, k),
  |C_k|)`` and get discrete Laplace noise of scale ``Delta_k / eps_k``: level
  ``k`` is ``eps_k``-DP.  ``C_k`` depends on earlier levels' released values
  only; the levels compose sequentially (every level reads all of ``D``) to
  ``eps_4 + eps_5``, and with pre-mining to ``epsilon``.  The noise of a
  candidate is drawn once, at its position in the level's sorted candidate
  list under the level's own key.

Audits: ``tests/test_pfs2_variants.py`` audits PL's two levels, and RR's and
SR's pruning on the level-2 pair of ``tests/test_pfs2_audit.py``; each audit
rejects a broken twin (PL with ``Delta_k = 1``, RR without the cut, SR
without shrinking).

The samplers' accounted delta: SR and RR draw what PFS^2 draws; PL draws at
most ``max_candidates`` values in all its levels, each at most at
``eps_4 + eps_5``, which :func:`pl_epsilons` hands to the public bound of
:func:`dpgpu.mechanisms.pfs2.sampling_bound`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence

import numpy as np

from ...data.sequencedb import SequenceDB, concat_ranges
from ...errors import InvalidParameter
from ...privacy.rng import NoiseKey
from ...privacy.tables import float_at_most
from .shrink import keep_items

#: PFS^2 and its baselines: PFS^2 itself, random deletion without relaxation, shrinking
#: without relaxation, and no sampling (shrinking the whole database).
VARIANTS = ("pfs2", "rr", "sr", "pl")
#: Variants whose level threshold on the sample is the user's, not relaxed.
UNRELAXED = ("rr", "sr")
#: Sequence indices and positions are packed in 32 bits each into one identity.
IDENTITY_BITS = 32


def pl_share(eps_prune: float, eps_support: float) -> float:
    """PL's levels' budget: ``eps_4 + eps_5``, rounded down (the parts never overspend)."""
    return float_at_most(Fraction(eps_prune) + Fraction(eps_support))


def pl_epsilons(epsilons: Sequence[float]) -> tuple[float, float, float, float]:
    """PL's budget: ``eps_1 .. eps_3`` and its levels' share :func:`pl_share`.

    Parameters
    ----------
    epsilons : sequence of 5 floats
        ``eps_1 .. eps_5`` of PFS^2.

    Returns
    -------
    tuple of 4 floats
    """
    e1, e2, e3, e4, e5 = epsilons
    return e1, e2, e3, pl_share(e4, e5)


def random_deletion(db: SequenceDB, l_max: int, key: NoiseKey, index: np.ndarray,
                    level: np.ndarray) -> SequenceDB:
    """Cut every sequence longer than ``l_max`` to a uniformly random ``l_max`` of its items.

    Sequence ``s`` keeps the ``l_max`` positions with the smallest keyed words
    (ties, of probability about ``l^2 / 2**64``, to the earlier position), in
    their order: a uniformly random ``l_max``-subset.  The word of position
    ``p`` of sequence ``s`` is ``key``'s packed word of identity
    ``index[s] * 2**32 + p`` under tag ``level[s]``: it depends on that
    sequence's identity only, never on the other sequences, the partition
    it is counted in, or the data, so a cut is reproducible for a key and
    the same on every engine.

    Parameters
    ----------
    db : SequenceDB
    l_max : int
        ``>= 1``.
    key : NoiseKey
        The random deletion's own key.
    index : numpy.ndarray of int64
        Each sequence's index in the whole database (distinct).
    level : numpy.ndarray of int64
        Each sequence's level (the sample it is in, from 1), in ``[0, 2**32)``.

    Returns
    -------
    SequenceDB
        The same number of sequences, each a subsequence of at most ``l_max``
        items of the original.

    Raises
    ------
    InvalidParameter
        For a database of ``2**32`` sequences or more, or a sequence of more
        than ``2**32`` items, whose identities would not fit.
    """
    from ..dpne.subset_numba import smallest_per_user  # noqa: PLC0415 - imports numba

    lengths = db.lengths.astype(np.int64)
    long_rows = np.flatnonzero(lengths > l_max)
    if not long_rows.size:
        return db
    if int(index.max()) >= 2 ** IDENTITY_BITS or int(lengths.max()) > 2 ** IDENTITY_BITS:
        raise InvalidParameter("random deletion: at most 2**32 sequences of at most 2**32 "
                               "items each")
    held = lengths[long_rows]
    items = concat_ranges(db.offsets[:-1][long_rows], held)
    row = np.repeat(long_rows, held)
    position = items - db.offsets[:-1][row]
    ids = (index[row].astype(np.uint64) << np.uint64(IDENTITY_BITS)) | position.astype(np.uint64)
    words = np.empty(items.size, dtype=np.uint64)
    for tag in np.unique(level[long_rows]).tolist():
        at = level[row] == tag
        words[at] = key.packed_words(ids[at], tag, backend="numpy")
    keep = np.ones(db.items.size, dtype=bool)
    keep[items] = smallest_per_user(row.astype(np.int64), words, l_max)
    return keep_items(db, keep)
