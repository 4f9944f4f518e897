"""The Groth16 prover: backend-independent orchestration, the CPU backend, and proof assembly.

A proof is made in two steps so a worker can begin the next proof while the previous one finishes:

* ``prove_start(pk, w)`` evaluates a/b/c, computes the quotient scalars and launches every MSM
  (on the CPU backend they run on the MSM thread pool; on the GPU backend, on the device);
* ``prove_finish(pending)`` waits for the MSMs, assembles A, B, C with fresh blinding r, s and
  verifies the proof (pairing check) before returning it. A proof that fails its check is never
  returned: :class:`ProofCheckError` names the job and the backend.

Assembly (both parameter styles; snarkjs' formula expands to the same):
  A = alpha1 + A_msm + r delta1,   B = beta2 + B2_msm + s delta2,
  C = L_msm + H_msm + s A_msm + r B1_msm + rs delta1 + s alpha1 + r beta1.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point

from .. import CuzkError
from ..curve import msm as cmsm
from ..field import fr
from ..field.constants import R
from ..timing import Timer
from .formats import Proof
from .keys import SNARKJS, ProvingKey
from .quotient import quotient_scalars
from .verifier import verify


class ProofCheckError(CuzkError):
    """A proof failed its own verification; it is not returned."""


class WitnessError(CuzkError):
    pass


@dataclass
class ProveResult:
    proof: Proof
    public: list[int]
    timings: dict[str, float]
    backend: str


@dataclass
class MsmJob:
    """One MSM: the key vector it uses, its scalars, and (optionally) which base indices they pair with."""

    group: int  # 1 or 2
    bases: str
    scalars: np.ndarray
    index: np.ndarray | None = None  # base index of each scalar; None = 0..len-1


def evaluate_abc(pk: ProvingKey, w: np.ndarray, timer: Timer) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with timer.phase("spmv"):
        a = pk.A.matvec(w)
        b = pk.B.matvec(w)
        if pk.C is None:  # snarkjs: c = a * b on the domain rows
            c = fr.mul(a, b)
        else:
            c = pk.C.matvec(w)
    return a, b, c


def msm_jobs(pk: ProvingKey, w: np.ndarray) -> dict[str, MsmJob]:
    """The witness-side MSMs (A, B1, B2, L) of a key's style; H is added once its scalars exist."""
    n_in = pk.n_public + 1
    if pk.style == SNARKJS:
        return {
            "a": MsmJob(1, "a", w, np.flatnonzero(pk.nonzero_mask("a"))),
            "b1": MsmJob(1, "b1", w, np.flatnonzero(pk.nonzero_mask("b1"))),
            "b2": MsmJob(2, "b2", w, np.flatnonzero(pk.nonzero_mask("b2"))),
            "l": MsmJob(1, "l", w[n_in:]),
        }
    aux = w[n_in:]
    a_sc = np.concatenate([w[:n_in], aux[pk.a_aux_density]])
    b_sc = np.concatenate([w[:n_in][pk.b_inp_density], aux[pk.b_aux_density]])
    return {
        "a": MsmJob(1, "a", a_sc),
        "b1": MsmJob(1, "b1", b_sc),
        "b2": MsmJob(2, "b2", b_sc),
        "l": MsmJob(1, "l", aux),
    }


class CpuBackend:
    """MSMs through arkworks on the thread pool, NTTs and mat-vecs in numba."""

    name = "cpu"

    def submit(self, pk: ProvingKey, job: MsmJob):
        group = G1Point if job.group == 1 else G2Point
        bases = pk.g1(job.bases) if job.group == 1 else pk.g2(job.bases)
        if job.index is not None:
            sc = job.scalars[job.index]
            bases = [bases[i] for i in job.index.tolist()]
        else:
            sc = job.scalars
        return cmsm.msm_submit(group, bases, sc)

    def start(self, pk: ProvingKey, w: np.ndarray, timer: Timer):
        a, b, c = evaluate_abc(pk, w, timer)
        jobs = msm_jobs(pk, w)
        t = timer.elapsed_ms()
        # G2 first: it is the longest; the G1 MSMs and the NTTs overlap with it
        pending = {name: self.submit(pk, jobs[name]) for name in ("b2", "a", "b1", "l")}
        h = quotient_scalars(pk.style, pk.domain_log, a, b, c, timer)
        pending["h"] = self.submit(pk, MsmJob(1, "h", h))
        return {"pending": pending, "t_submit": t}

    def finish(self, state, timer: Timer) -> dict[str, object]:
        out = {}
        for name in ("a", "b1", "l", "h", "b2"):
            out[name] = state["pending"][name].result()
        timer.record("msm", timer.elapsed_ms() - state["t_submit"])
        return out


_BACKENDS: dict[str, object] = {}


def get_backend(name: str = "cpu"):
    """'cpu', 'gpu' or 'auto' (GPU when CuPy sees one, else CPU)."""
    if name == "auto":
        from ..backends import gpu as _gpu

        name = "gpu" if _gpu.available() else "cpu"
    if name not in _BACKENDS:
        if name == "cpu":
            _BACKENDS[name] = CpuBackend()
        elif name == "gpu":
            from ..backends.gpu.backend import GpuBackend

            _BACKENDS[name] = GpuBackend()
        else:
            raise CuzkError(f"unknown backend {name!r}: expected cpu, gpu or auto")
    return _BACKENDS[name]


@dataclass
class PendingProof:
    pk: ProvingKey
    backend: object
    state: object
    public: list[int]
    r: int
    s: int
    timer: Timer
    verify: bool = True
    label: str = ""
    extra: dict = field(default_factory=dict)


def check_witness(pk: ProvingKey, w: np.ndarray, what: str = "witness") -> None:
    if w.ndim != 2 or w.shape[1] != 4:
        raise WitnessError(f"{what}: not an Fr vector")
    if w.shape[0] != pk.n_vars:
        raise WitnessError(f"{what}: {w.shape[0]} values, the proving key ({pk.source}) expects {pk.n_vars} wires")
    if fr.to_ints(w[:1]) != [1]:
        raise WitnessError(f"{what}: w[0] must be 1 (the constant wire)")


def prove_start(
    pk: ProvingKey,
    w: np.ndarray,
    backend: str | object = "cpu",
    r: int | None = None,
    s: int | None = None,
    verify_proof: bool = True,
    label: str = "",
    timer: Timer | None = None,
) -> PendingProof:
    check_witness(pk, w)
    be = get_backend(backend) if isinstance(backend, str) else backend
    timer = timer or Timer(label)
    state = be.start(pk, w, timer)
    public = fr.to_ints(w[1 : pk.n_public + 1])
    r = secrets.randbelow(R) if r is None else r % R
    s = secrets.randbelow(R) if s is None else s % R
    return PendingProof(pk, be, state, public, r, s, timer, verify_proof, label)


def assemble(pk: ProvingKey, m: dict[str, object], r: int, s: int) -> Proof:
    vk = pk.vk
    rs_, ss_, rss = cmsm.scalar(r), cmsm.scalar(s), cmsm.scalar(r * s)
    a = vk.alpha1 + m["a"] + vk.delta1 * rs_
    b = vk.beta2 + m["b2"] + vk.delta2 * ss_
    c = m["l"] + m["h"] + m["a"] * ss_ + m["b1"] * rs_ + vk.delta1 * rss + vk.alpha1 * ss_ + vk.beta1 * rs_
    return Proof(a, b, c)


def prove_finish(p: PendingProof) -> ProveResult:
    m = p.backend.finish(p.state, p.timer)
    with p.timer.phase("finalize"):
        proof = assemble(p.pk, m, p.r, p.s)
    if p.verify:
        with p.timer.phase("verify"):
            ok = verify(p.pk.vk, p.public, proof)
        if not ok:
            who = f"job {p.label}" if p.label else "proof"
            raise ProofCheckError(
                f"{who}: self-check failed on the {p.backend.name} backend (key {p.pk.source}); "
                f"the witness does not satisfy the circuit or the key is corrupt; no proof returned"
            )
    return ProveResult(proof, p.public, p.timer.total(), p.backend.name)


def prove(
    pk: ProvingKey,
    w: np.ndarray,
    backend: str | object = "cpu",
    r: int | None = None,
    s: int | None = None,
    verify_proof: bool = True,
    label: str = "",
) -> ProveResult:
    return prove_finish(prove_start(pk, w, backend, r, s, verify_proof, label))
