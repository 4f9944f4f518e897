"""The Groth16 prover: the one recipe, for every curve, key style and backend.

The recipe asks a backend (:mod:`cuzk.groth16.backend`) for primitives: upload, sparse mat-vec, NTT
domain operations, MSMs. What differs between snarkjs and bellperson keys is one object
(:mod:`cuzk.groth16.style`). A proof is made in two steps so a worker can begin the next proof while the
previous one finishes:

* ``prove_start(pk, w, backend)`` evaluates a/b/c, computes the quotient scalars and launches every MSM
  (on the CPU backend they run on the MSM thread pool; on a GPU, on the device);
* ``prove_finish(pending)`` waits for the MSMs, assembles A, B, C with fresh blinding r, s and
  verifies the proof (pairing check) before returning it. A proof that fails its check is never
  returned: :class:`ProofCheckError` names the job and the backend.

``prove_batch_start(pk, ws, backend)`` proves several witnesses of one circuit in one pass: one backend
session, a, b, c of every witness in one set of NTT launches (a GPU batches the 3k vectors), every
MSM of the batch submitted together; each proof is then finished on its own. ``prove_start`` is the
batch of one. (On the GPU a batch measured no faster per proof than one by one: NOTES.md.)

Quotient: a, b, c (evaluations on the domain) -> evaluations on a coset (iNTT, shift, NTT), then
h = a*b - c there; bellperson keys take h's coefficients (divided by Z on the coset, coset iNTT).

Assembly (both parameter styles; snarkjs' formula expands to the same):
  A = alpha1 + A_msm + r delta1,   B = beta2 + B2_msm + s delta2,
  C = L_msm + H_msm + s A_msm + r B1_msm + rs delta1 + s alpha1 + r beta1.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import CuzkError
from ..timing import Timer
from .backend import Backend, Device, MsmFuture, ProofSession
from .formats import Proof
from .keys import ProvingKey
from .style import KeyStyle, style_of
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
class PendingProof:
    pk: ProvingKey
    backend: Backend
    device: Device | None
    session: ProofSession
    msms: dict[str, MsmFuture]
    public: list[int]
    r: int
    s: int
    timer: Timer
    t_msm: float  # perf_counter at the first MSM submission
    verify: bool = True
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def check_witness(pk: ProvingKey, w: np.ndarray, what: str = "witness") -> None:
    if not isinstance(w, np.ndarray) or w.ndim != 2 or w.shape[1] != 4:
        raise WitnessError(f"{what}: not a field vector")
    if w.shape[0] != pk.n_vars:
        raise WitnessError(f"{what}: {w.shape[0]} values, the proving key ({pk.source}) expects {pk.n_vars} wires")
    if pk.curve.fr.to_ints(w[:1]) != [1]:
        raise WitnessError(f"{what}: w[0] must be 1 (the constant wire)")


def _witness_msms(s: ProofSession, pk: ProvingKey, style: KeyStyle, w: Any) -> dict[str, MsmFuture]:
    n_in = pk.n_public + 1
    gathered: dict[str, Any] = {}
    out = {}
    for spec in style.witness_msms:
        if spec.scalars == "w":
            sc = w
        elif spec.scalars == "aux":
            sc = s.tail(w, n_in)
        else:
            if spec.scalars not in gathered:
                gathered[spec.scalars] = s.gather(w, spec.scalars)
            sc = gathered[spec.scalars]
        out[spec.name] = s.msm(spec.group, spec.bases, sc, skip_infinity=spec.skip_infinity, label=spec.name)
    return out


def _quotients(s: ProofSession, pk: ProvingKey, style: KeyStyle, abcs: list[tuple[Any, Any, Any]]) -> list[Any]:
    """The H-MSM scalars of each witness's (a, b, c): n evaluations (snarkjs) or the first n - 1
    coefficients (bellperson). Every vector of the batch goes to the coset in one call."""
    curve = pk.curve
    gen = style.root_generator(curve)
    shift = style.coset_shift(curve, pk.domain_log)
    s.evals_to_coset([v for abc in abcs for v in abc], gen, shift)
    with s.phase("ntt_h"):
        hs = [s.mul_sub(a, b, c) for a, b, c in abcs]
        if style.h_in_coefficients:
            r = curve.r
            z_inv = pow((pow(shift, pk.domain_size, r) - 1) % r, -1, r)  # Z(shift w^i) = shift^n - 1
            s.coset_intt(hs, gen, shift, scale=z_inv)
            hs = [s.head(h, pk.domain_size - 1) for h in hs]
    return hs


# The hidden test switches (``[test]`` of the daemon config, :mod:`cuzk.engine.switches`): set only by
# switches.apply when CUZK_TEST_SWITCHES=1, else left at (0.0, False). delay: every proof sleeps this long
# in its own phase (a deliberately slow configuration); noop: read and ignored (a no-op switch).
_test_switches: tuple[float, bool] = (0.0, False)


def set_test_switches(delay_ms: int = 0, noop: bool = False) -> None:
    global _test_switches
    _test_switches = (max(0, delay_ms) / 1e3, bool(noop))


def prove_start(
    pk: ProvingKey,
    w: np.ndarray,
    backend: Backend,
    *,
    device: Device | None = None,
    r: int | None = None,
    s: int | None = None,
    verify_proof: bool = True,
    label: str = "",
    timer: Timer | None = None,
) -> PendingProof:
    return prove_batch_start(
        pk, [w], backend, device=device, rs=[r], ss=[s], verify_proof=verify_proof, labels=[label], timer=timer
    )[0]


def prove_batch_start(
    pk: ProvingKey,
    ws: Sequence[np.ndarray],
    backend: Backend,
    *,
    device: Device | None = None,
    rs: Sequence[int | None] | None = None,
    ss: Sequence[int | None] | None = None,
    verify_proof: bool = True,
    labels: Sequence[str] | None = None,
    timer: Timer | None = None,
) -> list[PendingProof]:
    """Start one proof per witness of ``ws`` (all of ``pk``'s circuit) in one pass over the device.
    ``rs``, ``ss``, ``labels``: per witness (None: fresh blinding, no label). A batch of k > 1 shares one
    timer for its device phases: each proof's timings are the batch's (extra["batch_size"] says k)."""
    k = len(ws)
    if k == 0:
        raise WitnessError("a batch of proofs needs at least one witness")
    rs_ = list(rs) if rs is not None else [None] * k
    ss_ = list(ss) if ss is not None else [None] * k
    labels_ = list(labels) if labels is not None else [""] * k
    if not len(rs_) == len(ss_) == len(labels_) == k:
        raise ValueError(f"a batch of {k} witnesses needs {k} r, s and labels")
    for i, w in enumerate(ws):
        check_witness(pk, w, "witness" if k == 1 else f"witness {i} of the batch")
    style = style_of(pk)
    timer = timer or Timer(labels_[0] if k == 1 else f"batch of {k}: {', '.join(labels_)}")
    delay_s, _noop = _test_switches
    if delay_s > 0:
        with timer.phase("test_delay"):
            time.sleep(delay_s)
    with backend.use(device):
        session = backend.begin(pk, timer, device, batch=k)
        with session.phase("upload"):
            wds = [session.upload(w) for w in ws]
        with session.phase("spmv"):
            abcs = []
            for wd in wds:
                a = session.matvec("A", wd)
                b = session.matvec("B", wd)
                abcs.append((a, b, session.mul(a, b) if style.c_is_ab else session.matvec("C", wd)))
            del a, b
        msms: list[dict[str, MsmFuture]] = [{} for _ in ws]
        t_msm = time.perf_counter()
        if backend.msm_before_quotient:  # the CPU: the MSMs run on the pool while the NTTs compute
            for m, wd in zip(msms, wds):
                m.update(_witness_msms(session, pk, style, wd))
        hs = _quotients(session, pk, style, abcs)
        del abcs
        if not backend.msm_before_quotient:  # a GPU: a, b, c are freed before the MSMs take their memory
            t_msm = time.perf_counter()
            for m, wd in zip(msms, wds):
                m.update(_witness_msms(session, pk, style, wd))
        for m, h in zip(msms, hs):
            m["h"] = session.msm(1, "h", h, label="h")
        del hs, wds
        session.submitted()
    order = pk.curve.r
    pending = []
    for i, w in enumerate(ws):
        public = pk.curve.fr.to_ints(w[1 : pk.n_public + 1])
        r_i, s_i = rs_[i], ss_[i]
        r = secrets.randbelow(order) if r_i is None else r_i % order
        s = secrets.randbelow(order) if s_i is None else s_i % order
        t = timer if k == 1 else timer.member(labels_[i])
        extra: dict[str, Any] = {"batch_size": k} if k > 1 else {}
        pending.append(
            PendingProof(pk, backend, device, session, msms[i], public, r, s, t, t_msm, verify_proof, labels_[i], extra)
        )
    return pending


def _collect(p: PendingProof) -> dict[str, Any]:
    with p.backend.use(p.device):
        try:
            m = {name: f.result() for name, f in p.msms.items()}
        finally:
            p.session.close()
    p.timer.record("msm", (time.perf_counter() - p.t_msm) * 1e3)
    return m


def assemble(pk: ProvingKey, m: dict[str, Any], r: int, s: int) -> Proof:
    vk = pk.vk
    Scalar = pk.curve.lib.Scalar
    order = pk.curve.r
    rs_, ss_, rss = Scalar(r), Scalar(s), Scalar(r * s % order)
    a = vk.alpha1 + m["a"] + vk.delta1 * rs_
    b = vk.beta2 + m["b2"] + vk.delta2 * ss_
    c = m["l"] + m["h"] + m["a"] * ss_ + m["b1"] * rs_ + vk.delta1 * rss + vk.alpha1 * ss_ + vk.beta1 * rs_
    return Proof(a, b, c)


def prove_finish(p: PendingProof) -> ProveResult:
    m = _collect(p)
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


def abandon(p: PendingProof) -> None:
    """Wait for the proof's MSMs in flight and drop them (a cancelled job): nothing is assembled."""
    with p.backend.use(p.device):
        try:
            for f in p.msms.values():
                f.result()
        finally:
            p.session.close()


def prove(
    pk: ProvingKey,
    w: np.ndarray,
    backend: Backend,
    *,
    device: Device | None = None,
    r: int | None = None,
    s: int | None = None,
    verify_proof: bool = True,
    label: str = "",
) -> ProveResult:
    return prove_finish(prove_start(pk, w, backend, device=device, r=r, s=s, verify_proof=verify_proof, label=label))


def prove_batch(
    pk: ProvingKey,
    ws: Sequence[np.ndarray],
    backend: Backend,
    *,
    device: Device | None = None,
    rs: Sequence[int | None] | None = None,
    ss: Sequence[int | None] | None = None,
    verify_proof: bool = True,
    labels: Sequence[str] | None = None,
) -> list[ProveResult]:
    pending = prove_batch_start(pk, ws, backend, device=device, rs=rs, ss=ss, verify_proof=verify_proof, labels=labels)
    results = []
    for i, p in enumerate(pending):
        try:
            results.append(prove_finish(p))
        except BaseException:
            for rest in pending[i + 1 :]:  # their MSMs are in flight: wait for them, keep the first error
                with contextlib.suppress(Exception):
                    abandon(rest)
            raise
    return results
