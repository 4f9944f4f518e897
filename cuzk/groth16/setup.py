"""Development setup: Groth16 keys for an R1CS from fresh toxic waste, with no powers-of-tau file.

FOR DEVELOPMENT ONLY: one party knows (and here immediately forgets) tau, alpha, beta, gamma, delta;
whoever learns them can forge proofs. Production keys come from a multi-party ceremony.

Both parameter styles are produced from the same QAP: for each wire i,
u_i(tau) = sum_c A[c][i] L_c(tau) (and v_i from B, w_i from C) over the domain's Lagrange basis L_c,
with one extra A row {i: 1} per input wire i = 0..nPublic. Then
  A_i = [u_i]_1, B1_i = [v_i]_1, B2_i = [v_i]_2,
  IC_i = [(beta u_i + alpha v_i + w_i)/gamma]_1 (inputs), L_i = [(beta u_i + alpha v_i + w_i)/delta]_1 (others),
  H: snarkjs [L^(2n)_{2j+1}(tau)/delta]_1 for j < n; bellperson [tau^i Z(tau)/delta]_1 for i < n - 1.
"""

from __future__ import annotations

import secrets
import sys
from dataclasses import dataclass

import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point

from ..curve.fixed_base import FixedBase
from ..curve.msm import scalar
from ..field import fr
from ..field.constants import BELLPERSON_GENERATOR, SNARKJS_ROOT_GENERATOR, R, root_of_unity
from ..r1cs.pce import CSR, PCE, empty_rows, transpose
from ..timing import Timer
from .keys import BELLPERSON, SNARKJS, ProvingKey, VerifyingKey

DEV_WARNING = (
    "WARNING: development setup from fresh toxic waste by a single party. "
    "These keys are for development and testing only; never use them to secure anything."
)


def _nonzero_rand() -> int:
    return 1 + secrets.randbelow(R - 1)


def lagrange_at(tau: int, log_n: int, generator: int) -> np.ndarray:
    """[L_c(tau) for c < n] of the 2^log_n domain from ``generator``: Z(tau) omega^c / (n (tau - omega^c))."""
    n = 1 << log_n
    omega = root_of_unity(log_n, generator)
    w = fr.powers(omega, n)
    denom = fr.sub(np.tile(fr.mont_scalar(tau), (n, 1)), w)
    inv = fr.batch_inverse(denom)  # tau outside the domain is checked by the caller
    z = (pow(tau, n, R) - 1) * pow(n, -1, R) % R
    return fr.scale(fr.mul(w, inv), z)


def _pick_tau(log_n: int) -> int:
    n = 1 << log_n
    while True:
        tau = _nonzero_rand()
        if pow(tau, 2 * n, R) != 1:  # not in the n- nor the 2n-domain
            return tau


def _qap(pce: PCE, n_inputs: int, lag: np.ndarray):
    """Padded matrices and the wire polynomials (u, v, w) evaluated at tau."""
    A, B, C = pce.qap_matrices()
    L = lag[: A.n_rows]
    return A, B, C, transpose(A).matvec(L), transpose(B).matvec(L), transpose(C).matvec(L)


@dataclass
class SetupPlan:
    """Sizes and fresh toxic waste of one setup (shared by the CPU and the GPU setup)."""

    style: str
    n_inputs: int
    rows: int
    log_n: int
    generator: int
    tau: int
    alpha: int
    beta: int
    gamma: int
    delta: int

    @property
    def n(self) -> int:
        return 1 << self.log_n


def plan(pce: PCE, style: str, quiet: bool) -> SetupPlan:
    if not quiet:
        print(DEV_WARNING, file=sys.stderr, flush=True)
    n_inputs = pce.n_public + 1
    rows = pce.n_constraints + n_inputs
    log_n = max(1, (rows - 1).bit_length())
    gen = SNARKJS_ROOT_GENERATOR if style == SNARKJS else BELLPERSON_GENERATOR
    return SetupPlan(style, n_inputs, rows, log_n, gen, _pick_tau(log_n), *(_nonzero_rand() for _ in range(4)))


def density_selection(pce: PCE, n_inputs: int) -> tuple[np.ndarray, np.ndarray]:
    """bellperson's A and B index spaces: all inputs + aux wires in A; the wires in B."""
    dens_a = pce.A.column_density()
    return np.concatenate([np.ones(n_inputs, dtype=bool), dens_a[n_inputs:]]), pce.B.column_density()


def assemble_key(pce: PCE, p: SetupPlan, mats: tuple[CSR, CSR, CSR], raw: dict, ic: list, source: str) -> ProvingKey:
    """The ProvingKey of a finished setup; the plan's toxic waste is wiped from it afterwards."""
    vkp = _vk_points(p.alpha, p.beta, p.gamma, p.delta)
    vk = VerifyingKey(vkp["alpha1"], vkp["beta2"], vkp["gamma2"], vkp["delta2"], ic, beta1=vkp["beta1"], delta1=vkp["delta1"])
    p.tau = p.alpha = p.beta = p.gamma = p.delta = 0
    A, B, C = mats
    if p.style == SNARKJS:
        pad = p.n - p.rows
        return ProvingKey(
            SNARKJS, pce.n_wires, pce.n_public, p.log_n, vk, raw, empty_rows(A, pad), empty_rows(B, pad), None, source=source
        )
    dens_a, dens_b = pce.A.column_density(), pce.B.column_density()
    return ProvingKey(
        BELLPERSON,
        pce.n_wires,
        pce.n_public,
        p.log_n,
        vk,
        raw,
        A,
        B,
        C,
        a_aux_density=dens_a[p.n_inputs :].copy(),
        b_inp_density=dens_b[: p.n_inputs].copy(),
        b_aux_density=dens_b[p.n_inputs :].copy(),
        source=source,
    )


class _Bases:
    def __init__(self):
        self.g1 = FixedBase(G1Point())
        self.g2 = FixedBase(G2Point())


def _vk_points(alpha: int, beta: int, gamma: int, delta: int):
    g1, g2 = G1Point(), G2Point()
    return dict(
        alpha1=g1 * scalar(alpha),
        beta1=g1 * scalar(beta),
        delta1=g1 * scalar(delta),
        beta2=g2 * scalar(beta),
        gamma2=g2 * scalar(gamma),
        delta2=g2 * scalar(delta),
    )


def setup(pce: PCE, style: str = SNARKJS, timer: Timer | None = None, quiet: bool = False) -> ProvingKey:
    """Keys for ``pce`` in the given parameter style (``snarkjs`` or ``bellperson``)."""
    timer = timer or Timer()
    p = plan(pce, style, quiet)
    n, tau, delta = p.n, p.tau, p.delta
    with timer.phase("setup_qap"):
        lag = lagrange_at(tau, p.log_n, p.generator)
        A, B, C, u, v, w = _qap(pce, p.n_inputs, lag)
        k = fr.add(fr.add(fr.scale(u, p.beta), fr.scale(v, p.alpha)), w)
        ic_sc = fr.scale(k[: p.n_inputs], pow(p.gamma, -1, R))
        l_sc = fr.scale(k[p.n_inputs :], pow(delta, -1, R))
        if style == SNARKJS:
            # odd points of the 2n-domain: L^(2n)_{2j+1}(tau) = (tau^2n - 1)/(2n) * x / (tau - x), x = w2n^(2j+1)
            w2n = root_of_unity(p.log_n + 1, p.generator)
            x = fr.powers(w2n * w2n % R, n, start=w2n)
            inv = fr.batch_inverse(fr.sub(np.tile(fr.mont_scalar(tau), (n, 1)), x))
            zz = (pow(tau, 2 * n, R) - 1) * pow(2 * n, -1, R) * pow(delta, -1, R) % R
            h_sc = fr.scale(fr.mul(x, inv), zz)
        else:
            z = (pow(tau, n, R) - 1) % R
            h_sc = fr.powers(tau, n - 1, start=z * pow(delta, -1, R) % R)
    if style == SNARKJS:
        a_sc, b_sc = u, v
    else:
        a_sel, b_sel = density_selection(pce, p.n_inputs)
        a_sc, b_sc = u[a_sel], v[b_sel]
    bases = _Bases()
    raw = {}
    with timer.phase("setup_points"):
        raw["a"] = bases.g1.mul_fr_lem(a_sc, None if quiet else "setup A")
        raw["b1"] = bases.g1.mul_fr_lem(b_sc, None if quiet else "setup B1")
        raw["b2"] = bases.g2.mul_fr_lem(b_sc, None if quiet else "setup B2")
        raw["l"] = bases.g1.mul_fr_lem(l_sc, None if quiet else "setup L")
        raw["h"] = bases.g1.mul_fr_lem(h_sc, None if quiet else "setup H")
        ic = bases.g1.mul_fr(ic_sc)
    del tau, delta
    return assemble_key(pce, p, (A, B, C), raw, ic, "setup")
