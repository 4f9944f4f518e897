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
from typing import Any

import numpy as np

from .. import curves
from ..curve import points as pts
from ..curves import Curve
from ..r1cs.pce import CSR, PCE, empty_rows, transpose
from ..timing import Timer
from .keys import BELLPERSON, SNARKJS, ProvingKey, VerifyingKey
from .style import style_of

DEV_WARNING = (
    "WARNING: development setup from fresh toxic waste by a single party. "
    "These keys are for development and testing only; never use them to secure anything."
)


def _nonzero_rand(r: int) -> int:
    return 1 + secrets.randbelow(r - 1)


def lagrange_at(curve: Curve, tau: int, log_n: int, generator: int) -> np.ndarray:
    """[L_c(tau) for c < n] of the 2^log_n domain from ``generator``: Z(tau) omega^c / (n (tau - omega^c))."""
    fr, R = curve.fr, curve.r
    n = 1 << log_n
    omega = curve.root_of_unity(log_n, generator)
    w = fr.powers(omega, n)
    denom = fr.sub(np.tile(fr.mont_scalar(tau), (n, 1)), w)
    inv = fr.batch_inverse(denom)  # tau outside the domain is checked by the caller
    z = (pow(tau, n, R) - 1) * pow(n, -1, R) % R
    return fr.scale(fr.mul(w, inv), z)


def _pick_tau(r: int, log_n: int) -> int:
    n = 1 << log_n
    while True:
        tau = _nonzero_rand(r)
        if pow(tau, 2 * n, r) != 1:  # not in the n- nor the 2n-domain
            return tau


def _qap(pce: PCE, n_inputs: int, lag: np.ndarray) -> tuple[CSR, CSR, CSR, np.ndarray, np.ndarray, np.ndarray]:
    """Padded matrices and the wire polynomials (u, v, w) evaluated at tau."""
    A, B, C = pce.qap_matrices()
    L = lag[: A.n_rows]
    return A, B, C, transpose(A).matvec(L), transpose(B).matvec(L), transpose(C).matvec(L)


def curve_of_pce(pce: PCE) -> Curve:
    assert pce.field is not None
    c = curves.by_scalar_prime(pce.field.p)
    if c is None:
        raise ValueError(f"no known curve has the scalar field {pce.field.name}")
    return c


@dataclass
class SetupPlan:
    """Sizes and fresh toxic waste of one setup (shared by the CPU and the GPU setup)."""

    curve: Curve
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
    curve = curve_of_pce(pce)
    st = style_of(style)
    st.check_curve(curve)
    n_inputs = pce.n_public + 1
    rows = pce.n_constraints + n_inputs
    log_n = max(1, (rows - 1).bit_length())
    if log_n > curve.two_adicity:
        raise ValueError(f"{rows} constraint rows need a 2^{log_n} domain, beyond {curve}'s 2^{curve.two_adicity}")
    gen = st.root_generator(curve)
    r = curve.r
    return SetupPlan(curve, style, n_inputs, rows, log_n, gen, _pick_tau(r, log_n), *(_nonzero_rand(r) for _ in range(4)))


def density_selection(pce: PCE, n_inputs: int) -> tuple[np.ndarray, np.ndarray]:
    """bellperson's A and B index spaces: all inputs + aux wires in A; the wires in B."""
    dens_a = pce.A.column_density()
    return np.concatenate([np.ones(n_inputs, dtype=bool), dens_a[n_inputs:]]), pce.B.column_density()


def assemble_key(
    pce: PCE, p: SetupPlan, mats: tuple[CSR, CSR, CSR], raw: dict[str, bytes], ic: list[Any], source: str
) -> ProvingKey:
    """The ProvingKey of a finished setup; the plan's toxic waste is wiped from it afterwards."""
    vkp = _vk_points(p.curve, p.alpha, p.beta, p.gamma, p.delta)
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


def _vk_points(curve: Curve, alpha: int, beta: int, gamma: int, delta: int) -> dict[str, Any]:
    lib = curve.lib
    g1, g2, sc = lib.G1Point(), lib.G2Point(), lib.Scalar
    return dict(
        alpha1=g1 * sc(alpha),
        beta1=g1 * sc(beta),
        delta1=g1 * sc(delta),
        beta2=g2 * sc(beta),
        gamma2=g2 * sc(gamma),
        delta2=g2 * sc(delta),
    )


def _fixed_base_lem(curve: Curve, group: int, v: np.ndarray, progress: str | None) -> bytes:
    """v_i * generator for a Montgomery Fr vector, as LEM bytes."""
    lib = curve.lib
    base = lib.G1Point() if group == 1 else lib.G2Point()
    canon = curve.fr.from_mont(np.ascontiguousarray(v))
    if progress and curve.cpu_library.endswith("arkworks_bls12_381"):
        rows = lib.fixed_base_mul(group, base, canon, progress)
    else:
        rows = lib.fixed_base_mul(group, base, canon)
    return bytes(np.ascontiguousarray(rows).tobytes())


def setup(pce: PCE, style: str = SNARKJS, timer: Timer | None = None, quiet: bool = False) -> ProvingKey:
    """Keys for ``pce`` in the given parameter style (``snarkjs`` or ``bellperson``)."""
    timer = timer or Timer()
    p = plan(pce, style, quiet)
    curve = p.curve
    fr, R = curve.fr, curve.r
    n, tau, delta = p.n, p.tau, p.delta
    with timer.phase("setup_qap"):
        lag = lagrange_at(curve, tau, p.log_n, p.generator)
        A, B, C, u, v, w = _qap(pce, p.n_inputs, lag)
        k = fr.add(fr.add(fr.scale(u, p.beta), fr.scale(v, p.alpha)), w)
        ic_sc = fr.scale(k[: p.n_inputs], pow(p.gamma, -1, R))
        l_sc = fr.scale(k[p.n_inputs :], pow(delta, -1, R))
        if style == SNARKJS:
            # odd points of the 2n-domain: L^(2n)_{2j+1}(tau) = (tau^2n - 1)/(2n) * x / (tau - x), x = w2n^(2j+1)
            w2n = curve.root_of_unity(p.log_n + 1, p.generator)
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
    raw = {}
    with timer.phase("setup_points"):
        for name, group, sc in (("a", 1, a_sc), ("b1", 1, b_sc), ("b2", 2, b_sc), ("l", 1, l_sc), ("h", 1, h_sc)):
            raw[name] = _fixed_base_lem(curve, group, sc, None if quiet else f"setup {name.upper()}")
        ic_raw = _fixed_base_lem(curve, 1, ic_sc, None)
        ic = pts.from_lem(curve, 1, ic_raw, p.n_inputs, "setup IC")
    del tau, delta
    return assemble_key(pce, p, (A, B, C), raw, ic, "setup")
