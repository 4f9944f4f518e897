"""The seam between the Groth16 recipe and the hardware: what a proving backend must provide.

:mod:`cuzk.groth16.prover` holds the only Groth16 recipe; it asks a backend for primitives and never
for a whole proof. A backend (``cuzk.backends.cpu``, ``cuzk.backends.gpu``) implements this protocol and
never imports the prover. Device keys (the SRS and matrices resident on a device) belong to the backend,
keyed by the proving key, not to :class:`~cuzk.groth16.keys.ProvingKey`.

Vectors are backend-native (numpy arrays on the CPU, CuPy arrays on a GPU) Montgomery field vectors of
shape (n, 4); the recipe only passes them back to the same backend. An MSM returns an :class:`MsmFuture`
whose ``result()`` is a point of the curve's CPU point library.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..timing import Timer
from .keys import ProvingKey


@dataclass(frozen=True)
class Device:
    """One place proofs run: ``name`` is what the engine, its status and its metrics show ("cpu", "gpu:0")."""

    name: str
    kind: str  # "cpu" or "gpu"
    ordinal: int = -1  # the CUDA ordinal of a GPU


@dataclass
class Memory:
    total: int
    free: int


class MsmFuture(Protocol):
    def result(self) -> Any: ...


@runtime_checkable
class Backend(Protocol):
    name: str  # "cpu" or "gpu"
    # True: the recipe submits the witness MSMs before computing the quotient (they overlap on the CPU's
    # thread pool); False: the quotient first (a GPU frees a, b, c before the MSMs take their memory)
    msm_before_quotient: bool

    def configure(self, settings: Mapping[str, Any]) -> None:
        """Apply the backend's table of the daemon's TOML (``[gpu]``; the environment still overrides)."""
        ...

    # ---- devices and memory
    def devices(self) -> list[Device]: ...
    def use(self, device: Device | None) -> AbstractContextManager[None]:
        """Make ``device`` current for the calls inside the block (a GPU's CUDA context)."""
        ...

    def memory(self, device: Device) -> Memory: ...
    def device_title(self, device: Device) -> str:
        """What the device is, for status ("NVIDIA H200", "CPU backend (16 MSM threads, 16 cores)")."""
        ...

    def prepare_witness(self, w: Any) -> Any:
        """Host-side preparation done off the device's critical path (a GPU: copy into pinned memory)."""
        ...

    # ---- keys
    def load_key(self, pk: ProvingKey, device: Device | None = None) -> int:
        """Make the key resident for ``device`` (idempotent); returns its resident bytes."""
        ...

    def evict_key(self, pk: ProvingKey, device: Device | None = None) -> int:
        """Forget the key's resident copy for ``device``; returns the bytes freed."""
        ...

    def resident_bytes_estimate(self, pk: ProvingKey) -> int: ...

    # ---- one proof (or a batch of proofs of one circuit)
    def begin(self, pk: ProvingKey, timer: Timer, device: Device | None = None, batch: int = 1) -> ProofSession:
        """Start ``batch`` proofs with ``pk`` (made resident first if it is not) on ``device`` (the
        current one when None). The recipe then calls every primitive once per proof, except
        evals_to_coset and coset_intt, which take the whole batch's vectors at once."""
        ...


class ProofSession(Protocol):
    """The primitives of one proof, or of a batch of proofs of one circuit, on one device. Not shared
    between threads."""

    def phase(self, name: str) -> AbstractContextManager[None]:
        """Time a phase the way the backend measures (CUDA events on a GPU, wall time on the CPU)."""
        ...

    def upload(self, w: Any) -> Any:
        """The witness (a host Montgomery vector) as a backend vector."""
        ...

    def matvec(self, matrix: str, w: Any) -> Any:
        """``matrix`` ("A", "B", "C") of the key times w, zero-padded to the domain size."""
        ...

    def mul(self, a: Any, b: Any) -> Any:
        """A fresh vector a*b (elementwise)."""
        ...

    def evals_to_coset(self, vectors: Sequence[Any], generator: int, shift: int) -> None:
        """In place, each vector (a, b, c of each proof of the batch, in that order): evaluations on the
        2^k domain (roots from ``generator``) -> evaluations on the coset ``shift`` * domain (an inverse
        NTT, a scaling, an NTT). Timed by the session ("ntt_a", "ntt_b", "ntt_c", summed over the batch,
        or "ntt_abc" when it transforms them together)."""
        ...

    def mul_sub(self, a: Any, b: Any, c: Any) -> Any:
        """A fresh vector a*b - c (a, b, c may be released afterwards)."""
        ...

    def coset_intt(self, xs: Sequence[Any], generator: int, shift: int, scale: int) -> None:
        """In place, each vector (one per proof of the batch): evaluations on the coset ``shift`` *
        domain -> coefficients, times ``scale``."""
        ...

    def gather(self, w: Any, which: str) -> Any:
        """w at the key's scalar index ``which`` ("a" or "b": :meth:`ProvingKey.scalar_index`)."""
        ...

    def head(self, x: Any, n: int) -> Any:
        """The first n entries of x (a view where possible)."""
        ...

    def tail(self, x: Any, start: int) -> Any:
        """The entries of x from ``start`` on (a view where possible)."""
        ...

    def msm(self, group: int, bases: str, scalars: Any, skip_infinity: bool = False, label: str = "") -> MsmFuture:
        """Start sum_i scalars[i] * bases[i] over the key's vector ``bases`` (len(scalars) <= its
        length). ``skip_infinity``: the vector holds points at infinity (snarkjs' per-wire A, B1, B2),
        which a backend may drop with their scalars. ``label`` names the MSM in phase timings."""
        ...

    def submitted(self) -> None:
        """Every MSM of the proof (of the batch) has been submitted (a GPU records its device-side phases
        here)."""
        ...

    def close(self) -> None:
        """A proof's MSM results have been collected (or abandoned): release what the session holds
        (called once per proof of a batch)."""
        ...
