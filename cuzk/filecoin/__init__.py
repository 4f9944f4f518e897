"""Filecoin storage proofs: commitments, sealing, vanilla proofs.

``fr32`` (the 127 -> 128 byte padding that makes every 32-byte node a BLS12-381 field element),
``commitments`` (zero-subtree roots, piece commitment CommP, unsealed-sector commitment CommD),
``cid`` (the CIDv1 encodings of those commitments: ``baga6ea4sea...`` and ``bagboea4b5abc...``).

Import-light: the submodules load numpy / numba only when they are imported.
"""

from .. import CuzkError


class FilecoinError(CuzkError, ValueError):
    """Bad input to a Filecoin commitment function (a size, a piece list, a CID); a one-line message."""


__all__ = ["FilecoinError"]
