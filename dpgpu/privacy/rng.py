"""Keyed counter-mode randomness: ChaCha20 used as a PRF of *what is noised*.

Every random word dpgpu uses for a release comes from :meth:`NoiseKey.words`.
A word is a 64-bit slice of the ChaCha20 block function (RFC 8439, 20 rounds)
evaluated on

==========  ==========================================================
state word  content
==========  ==========================================================
0..3        the ChaCha constants ("expand 32-byte k")
4..11       the 256-bit key of the release
12          block number inside one identity's stream (0, 1, ...)
13          the domain tag (32 bits): which quantity of a step is drawn
14, 15      the identity (64 bits: gram key, tree-node code, user id)
==========  ==========================================================

so the counter block is a function of *(identity, tag, block)* only, never of
an array position.  The same key therefore gives the same value for a given
identity whatever the batch size, chunking, ordering or device, which is what
makes a chunked, distributed or GPU release bit-identical to the local one.

The block function is written once against the array namespace ``xp``
(:func:`words_xp`, 32-bit unsigned wrap-around arithmetic) and is the
reference.  On the CPU the same words come from a Numba loop
(:mod:`dpgpu.privacy._chacha_cpu`, about 4x faster), on the GPU from one
CUDA kernel (``kernels/chacha.cu`` via :mod:`dpgpu.privacy._chacha_gpu`).
The RFC 8439 test vector and bit-for-bit comparisons of the paths (the
kernel's header on the host in CI, the kernel itself on a GPU) are tests, so
NumPy and CuPy releases are identical.

Keys
----
:meth:`NoiseKey.fresh` takes 256 bits from :mod:`secrets` (the default
everywhere).  :meth:`NoiseKey.from_seed` is the explicit opt-in to a
reproducible release; such keys say ``seeded=True`` and the run report
records it.  A release never uses a run's root key directly: each ledger step
derives its own key with :meth:`NoiseKey.derive` (keyed BLAKE2b, a PRF), and a
key refuses to derive the same label twice, so no key is reused across two
releases of one run.

Privacy argument: under the standard assumption that ChaCha20 is a PRF, the
words are computationally indistinguishable from independent uniform words,
one stream per (identity, tag); the samplers' exact-arithmetic analysis
(:mod:`dpgpu.privacy.samplers`) applies to uniform words.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

import numpy as np

from ..backend import Backend, backend_of
from ..errors import InvalidParameter
from ..validation import check_positive_int

#: "expand 32-byte k" as four little-endian 32-bit words.
_CONSTANTS = np.array([0x61707865, 0x3320646E, 0x79622D32, 0x6B206574], dtype=np.uint32)
#: Identities per chunk: cache-sized on the CPU, device-filling on a GPU.
_CHUNK = {"numpy": 1 << 15, "cupy": 1 << 22}
WORDS_PER_BLOCK = 8


def chacha20_blocks(key_words: Any, counter: Any, tag: int, identity: Any, xp: Any):
    """ChaCha20 blocks for arrays of counters and identities.

    Parameters
    ----------
    key_words : array of 8 uint32
        The key, little-endian words.
    counter : (M,) uint32 array
        State word 12 of each block.
    tag : int
        State word 13, shared by all blocks.
    identity : (M,) uint64 array
        State words 14 (low half) and 15 (high half).
    xp : module
        ``numpy`` or ``cupy``; every input must live there.

    Returns
    -------
    (16, M) uint32 array
        Row ``i`` holds output word ``i`` of every block.
    """
    m = counter.shape[0]
    init = xp.empty((16, m), dtype=xp.uint32)
    init[0:4] = xp.asarray(_CONSTANTS)[:, None]
    init[4:12] = key_words[:, None]
    init[12] = counter
    init[13] = xp.uint32(tag)
    init[14] = (identity & xp.uint64(0xFFFFFFFF)).astype(xp.uint32)
    init[15] = (identity >> xp.uint64(32)).astype(xp.uint32)
    x = init.copy()
    a, b, c, d = x[0:4], x[4:8], x[8:12], x[12:16]
    tmp = xp.empty((4, m), dtype=xp.uint32)
    for _ in range(10):
        _quarter_rounds(a, b, c, d, tmp, xp)          # column round
        b[:] = b[[1, 2, 3, 0]]
        c[:] = c[[2, 3, 0, 1]]
        d[:] = d[[3, 0, 1, 2]]
        _quarter_rounds(a, b, c, d, tmp, xp)          # diagonal round
        b[:] = b[[3, 0, 1, 2]]
        c[:] = c[[2, 3, 0, 1]]
        d[:] = d[[1, 2, 3, 0]]
    x += init
    return x


def _quarter_rounds(a, b, c, d, tmp, xp) -> None:
    """Four ChaCha quarter rounds at once, in place (rows of a, b, c, d)."""
    for p, q, r, n in ((a, b, d, 16), (c, d, b, 12), (a, b, d, 8), (c, d, b, 7)):
        xp.add(p, q, out=p)
        xp.bitwise_xor(r, p, out=r)
        xp.left_shift(r, xp.uint32(n), out=tmp)
        xp.right_shift(r, xp.uint32(32 - n), out=r)
        xp.bitwise_or(r, tmp, out=r)


def words_xp(key_words: Any, ids: Any, tag: int, n_words: int, xp: Any, *,
             chunk: int = 1 << 15):
    """``n_words`` ChaCha20 words per identity, vectorised over ``xp`` arrays.

    Word ``k`` of an identity is the 64-bit little-endian pair of output words
    ``(2(k % 8), 2(k % 8) + 1)`` of block ``k // 8`` of that identity's stream.
    Runs on CuPy; on the CPU, :mod:`dpgpu.privacy._chacha_cpu` computes the
    same words faster.

    Returns
    -------
    (n_words, M) uint64 array
    """
    n_blocks = -(-n_words // WORDS_PER_BLOCK)
    out = xp.empty((n_words, ids.shape[0]), dtype=xp.uint64)
    for start in range(0, ids.shape[0], chunk):
        part = ids[start:start + chunk]
        m = part.shape[0]
        counter = xp.repeat(xp.arange(n_blocks, dtype=xp.uint32), m)
        x = chacha20_blocks(key_words, counter, tag, xp.tile(part, n_blocks), xp)
        x = x.reshape(WORDS_PER_BLOCK, 2, n_blocks, m).transpose(2, 0, 1, 3)
        x = x.reshape(n_blocks * WORDS_PER_BLOCK, 2, m)[:n_words]
        out[:, start:start + m] = x[:, 0].astype(xp.uint64) | (x[:, 1].astype(xp.uint64)
                                                               << xp.uint64(32))
    return out


class NoiseKey:
    """A 256-bit ChaCha20 key for one release, or a run's root key.

    Never print or log the key; ``repr`` shows only whether it is seeded.

    Attributes
    ----------
    seeded : bool
        True when the key was derived from a user ``seed`` (reproducible,
        and recorded as such in the run report).
    """

    __slots__ = ("_key", "seeded", "_labels")

    def __init__(self, key: bytes, *, seeded: bool) -> None:
        if not isinstance(key, (bytes, bytearray)) or len(key) != 32:
            raise InvalidParameter("key: must be 32 bytes")
        self._key = bytes(key)
        self.seeded = bool(seeded)
        self._labels: set[str] = set()

    @classmethod
    def fresh(cls) -> "NoiseKey":
        """A key of 256 fresh bits from the operating system (:mod:`secrets`)."""
        return cls(secrets.token_bytes(32), seeded=False)

    @classmethod
    def from_seed(cls, seed: int) -> "NoiseKey":
        """A reproducible key derived from a non-negative integer ``seed``."""
        seed = check_positive_int(seed, "seed", minimum=0)
        raw = seed.to_bytes(max(1, (seed.bit_length() + 7) // 8), "little")
        return cls(hashlib.blake2b(raw, digest_size=32, person=b"dpgpu-seed").digest(),
                   seeded=True)

    @classmethod
    def from_seed_or_fresh(cls, seed: int | None) -> "NoiseKey":
        """:meth:`fresh` when ``seed`` is None, else :meth:`from_seed`."""
        return cls.fresh() if seed is None else cls.from_seed(seed)

    def derive(self, label: str) -> "NoiseKey":
        """The child key for ``label`` (keyed BLAKE2b of the label).

        Raises
        ------
        InvalidParameter
            If this key already derived a key for ``label``: handing out the
            same key twice would correlate two releases.
        """
        if not isinstance(label, str) or not label:
            raise InvalidParameter(f"label: expected a non-empty string, got {label!r}")
        if label in self._labels:
            raise InvalidParameter(f"label: key for {label!r} was already derived; "
                                   "a key is never reused across releases")
        self._labels.add(label)
        child = hashlib.blake2b(label.encode(), key=self._key, digest_size=32,
                                person=b"dpgpu-derive").digest()
        return NoiseKey(child, seeded=self.seeded)

    def words(self, identities: Any, tag: int, n_words: int, *,
              backend: "str | Backend | None" = None):
        """Uniform 64-bit words, ``n_words`` per identity.

        Parameters
        ----------
        identities : (M,) integer array
            What is noised; signed values are taken by their 64-bit pattern.
        tag : int
            Domain tag in ``[0, 2**32)``: distinct quantities drawn for the
            same identities under one key need distinct tags.
        n_words : int
            Words per identity (word ``k`` is the same whatever ``n_words``).
        backend : str, Backend or None
            Where to compute; by default where ``identities`` live.

        Returns
        -------
        (n_words, M) uint64 array of the backend's namespace
        """
        be = backend_of(identities, backend)
        xp = be.xp
        ids = as_identities(identities, xp)
        tag = check_positive_int(tag, "tag", minimum=0, maximum=2 ** 32 - 1)
        n_words = check_positive_int(n_words, "n_words")
        key_words = np.frombuffer(self._key, dtype="<u4").astype(np.uint32)
        if be.is_gpu:
            from ._chacha_gpu import words_gpu  # noqa: PLC0415 - loads the kernel on first use

            return words_gpu(key_words, ids, tag, n_words)
        from ._chacha_cpu import words_cpu  # noqa: PLC0415 - Numba loads on first use

        out = np.empty((n_words, ids.shape[0]), dtype=np.uint64)
        words_cpu(key_words, ids, tag, out)
        return out

    def packed_words(self, identities: Any, tag: int, *,
                     backend: "str | Backend | None" = None):
        """One uniform word per identity, eight identities to a ChaCha block.

        Identity ``i`` gets word ``i % 8`` of :meth:`words` of identity
        ``i // 8`` under :meth:`packed_key`: distinct identities get distinct
        words (independent), and a run of identities sharing ``i // 8``
        (consecutive in ``identities``) computes its block once.  The packed
        key keeps these words apart from every :meth:`words` draw of this
        key, whatever the tag.

        Returns
        -------
        (M,) uint64 array of the backend's namespace
        """
        def chunk(part, be):
            xp = be.xp
            block = part >> xp.uint64(3)
            new = xp.ones(part.shape[0], dtype=xp.bool_)
            new[1:] = block[1:] != block[:-1]
            words = stream.words(block[new], tag, WORDS_PER_BLOCK, backend=be)
            return words[(part & xp.uint64(7)).astype(xp.int64), xp.cumsum(new) - 1]

        stream = self.packed_key()
        return by_chunks(identities, backend, "uint64", chunk)

    def packed_key(self) -> "NoiseKey":
        """The key of :meth:`packed_words`: a keyed BLAKE2b of this key with its own
        personalisation, so no :meth:`derive` label can give it."""
        child = hashlib.blake2b(b"packed", key=self._key, digest_size=32,
                                person=b"dpgpu-packed").digest()
        return NoiseKey(child, seeded=self.seeded)

    def __repr__(self) -> str:
        return f"NoiseKey(seeded={self.seeded})"


def by_chunks(identities: Any, backend: "str | Backend | None", dtype: str,
              draw: Any):
    """``draw(part, backend)`` over :func:`chunk_size` pieces of ``identities``, as one array.

    ``part`` is a piece of the identities as uint64 (:func:`as_identities`);
    ``draw`` returns one value of ``dtype`` per identity of it.  Bounds the
    memory of the words a piece needs.
    """
    be = backend_of(identities, backend)
    ids = as_identities(identities, be.xp)
    out = be.xp.empty(ids.shape[0], dtype=dtype)
    step = chunk_size(be)
    for start in range(0, ids.shape[0], step):
        part = ids[start:start + step]
        out[start:start + part.shape[0]] = draw(part, be)
    return out


def chunk_size(backend: Backend) -> int:
    """Identities per block-function call on ``backend``."""
    return _CHUNK[backend.name]


def as_identities(identities: Any, xp: Any):
    """``identities`` as a 1-D uint64 array of ``xp`` (same 64-bit patterns)."""
    ids = xp.asarray(identities)
    if ids.ndim != 1 or ids.dtype.kind not in "iu":
        raise InvalidParameter(
            f"identities: expected a 1-D integer array, got shape {ids.shape} dtype {ids.dtype}")
    return ids.astype(xp.int64, copy=False).view(xp.uint64) if ids.dtype.kind == "i" \
        else ids.astype(xp.uint64, copy=False)
