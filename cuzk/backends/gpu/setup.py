"""Development setup on the GPU: the same keys as :mod:`cuzk.groth16.setup`, in seconds instead of hours.

Every step runs on the device: the Lagrange basis at tau (power table, Fermat inverses), the wire
polynomials u, v, w by transposed sparse mat-vecs (a radix sort of the column indices gives A^T), the
scalar vectors, and one fixed-base multiplication per SRS point (byte-window table, <= 32 mixed
additions, then one inversion for the affine form). The resulting point vectors stay resident as the
key's device copy (no re-upload before proving); a host copy is made only when asked for, e.g. to
write a .zkey / .params file.

FOR DEVELOPMENT ONLY, like the CPU setup: a single party knew the toxic waste. Any curve: the circuit's
field names it, the kernels and the fixed-base tables follow.
"""

from __future__ import annotations

import cupy
import numpy as np

from ...curve import points as pts
from ...curves import Curve
from ...field.prime import limbs
from ...groth16.keys import SNARKJS, ProvingKey
from ...groth16.setup import assemble_key, density_selection, plan
from ...r1cs.pce import CSR, PCE
from ...timing import Timer
from . import msm as gmsm
from .backend import DeviceKey, adopt_device_key
from .ntt import power_table
from .runtime import BLOCK, grid_for, launch, op_errors

_U32 = np.uint32


def _scalar_dev(curve: Curve, x: int) -> cupy.ndarray:
    return cupy.asarray(curve.fr.mont_scalar(x).reshape(1, 4))


def _ew(curve: Curve, module: str, name: str, *args, n: int, op: str) -> None:
    launch(module, name, grid_for(n), BLOCK, (*args, _U32(n)), op, curve=curve)


def _scale(curve: Curve, a: cupy.ndarray, k: int, op: str) -> None:
    """a *= k in place."""
    n = a.shape[0]
    launch("fr_ops", "fr_scale", grid_for(n), BLOCK, (a, _scalar_dev(curve, k), _U32(n)), op, curve=curve)


def lagrange(curve: Curve, tau: int, log_n: int, generator: int) -> cupy.ndarray:
    """[L_c(tau)] = Z(tau) omega^c / (n (tau - omega^c)), c < n, on the device."""
    R = curve.r
    n = 1 << log_n
    w = power_table(curve.root_of_unity(log_n, generator), n, curve)
    d = cupy.empty_like(w)
    _ew(curve, "setup", "fr_rsub_scalar", w, _scalar_dev(curve, tau), d, n=n, op="setup: tau - omega^c")
    _ew(curve, "setup", "fr_inverse", d, d, n=n, op="setup: inverses")
    _ew(curve, "fr_ops", "fr_mul", w, d, d, n=n, op="setup: Lagrange basis")
    _scale(curve, d, (pow(tau, n, R) - 1) * pow(n, -1, R) % R, "setup: Lagrange basis")
    return d


def transpose_matvec(m: CSR, x: cupy.ndarray, curve: Curve) -> cupy.ndarray:
    """(M^T x)[j] = sum_r M[r][j] x[r] on the device (M^T built by sorting the column indices)."""
    cols = cupy.asarray(m.cols)
    order = cupy.argsort(cols)
    counts = cupy.diff(cupy.asarray(m.row_ptr))
    rows = cupy.repeat(cupy.arange(m.n_rows, dtype=cupy.uint32), counts)[order]
    vals = cupy.asarray(m.vals)[order]
    row_ptr = cupy.zeros(m.n_cols + 1, dtype=cupy.int64)
    row_ptr[1:] = cupy.cumsum(cupy.bincount(cols, minlength=m.n_cols))
    del cols, order, counts
    out = cupy.zeros((m.n_cols, 4), dtype=cupy.uint64)
    launch(
        "fr_ops",
        "spmv_csr",
        grid_for(m.n_cols),
        BLOCK,
        (row_ptr, rows, vals, x, out, _U32(m.n_cols)),
        "setup: transposed mat-vec",
        curve=curve,
    )
    return out


def _window_multiples(curve: Curve, group: int) -> cupy.ndarray:
    """The 32 x 256 byte-window table j * 256^k * G of the group's generator (LEM rows, made on the CPU
    by the curve's library: 8192 fixed-base products), on the device."""
    r = curve.r
    canon = np.array([limbs((j << (8 * k)) % r, 4) for k in range(32) for j in range(256)], dtype=np.uint64)
    lib = curve.lib
    rows = lib.fixed_base_mul(group, lib.G1Point() if group == 1 else lib.G2Point(), canon)
    return gmsm.upload_points(np.ascontiguousarray(rows).tobytes(), group, curve)


class _Tables:
    def __init__(self, curve: Curve):
        self.curve = curve
        self.g1 = _window_multiples(curve, 1)
        self.g2 = _window_multiples(curve, 2)


def fixed_base(tables: _Tables, group: int, scalars: cupy.ndarray, op: str) -> cupy.ndarray:
    n = scalars.shape[0]
    c = tables.curve
    out = cupy.empty((max(1, n), gmsm.point_words(c, group)), dtype=cupy.uint64)[:n]
    table = tables.g1 if group == 1 else tables.g2
    args = (table, cupy.ascontiguousarray(scalars), _U32(n), out)
    launch("setup", f"g{group}_fixed_base", grid_for(n, 128), 128, args, op, curve=c)
    return out


def setup(
    pce: PCE, style: str = SNARKJS, timer: Timer | None = None, quiet: bool = False, host_copy: bool | set[str] = True
) -> ProvingKey:
    """Keys for ``pce`` made on the current GPU; the device copy is attached to the returned key.

    ``host_copy``: download every SRS vector to the host (True, needed to write the key or to prove on
    the CPU), none (False: GPU-only proving), or the named ones (e.g. {"b2"} for B_G2 on CPU threads).
    """
    timer = timer or Timer()
    p = plan(pce, style, quiet)
    curve, R = p.curve, p.curve.r
    n, rows, n_inputs, tau, delta = p.n, p.rows, p.n_inputs, p.tau, p.delta
    dev = cupy.cuda.Device().id
    with op_errors(f"GPU setup of a 2^{p.log_n} circuit"):
        with timer.phase("setup_qap"):
            A, B, C = pce.qap_matrices()
            L = lagrange(curve, tau, p.log_n, p.generator)[:rows]
            u, v, w = (transpose_matvec(M, L, curve) for M in (A, B, C))
            del L
            k = cupy.empty_like(u)
            coeffs = cupy.asarray(np.stack([curve.fr.mont_scalar(p.beta), curve.fr.mont_scalar(p.alpha)]))
            _ew(curve, "setup", "fr_lincomb3", u, v, w, coeffs, k, n=pce.n_wires, op="setup: beta u + alpha v + w")
            del w
            ic_sc = k[:n_inputs].copy()
            _scale(curve, ic_sc, pow(p.gamma, -1, R), "setup: IC")
            l_sc = k[n_inputs:].copy()
            _scale(curve, l_sc, pow(delta, -1, R), "setup: L")
            del k
            if style == SNARKJS:
                w2n = curve.root_of_unity(p.log_n + 1, p.generator)
                x = power_table(w2n * w2n % R, n, curve)
                _scale(curve, x, w2n, "setup: odd coset points")
                h_sc = cupy.empty_like(x)
                _ew(curve, "setup", "fr_rsub_scalar", x, _scalar_dev(curve, tau), h_sc, n=n, op="setup: H denominators")
                _ew(curve, "setup", "fr_inverse", h_sc, h_sc, n=n, op="setup: H inverses")
                _ew(curve, "fr_ops", "fr_mul", x, h_sc, h_sc, n=n, op="setup: H")
                _scale(curve, h_sc, (pow(tau, 2 * n, R) - 1) * pow(2 * n, -1, R) * pow(delta, -1, R) % R, "setup: H")
                del x
                a_sc, b_sc = u, v
            else:
                h_sc = power_table(tau, n - 1, curve)
                _scale(curve, h_sc, (pow(tau, n, R) - 1) * pow(delta, -1, R) % R, "setup: H")
                a_sel, b_sel = density_selection(pce, n_inputs)
                a_sc, b_sc = u[cupy.asarray(np.flatnonzero(a_sel))], v[cupy.asarray(np.flatnonzero(b_sel))]
            cupy.cuda.get_current_stream().synchronize()
        with timer.phase("setup_points"):
            tables = _Tables(curve)
            dpoints = {
                "a": fixed_base(tables, 1, a_sc, "setup: A points"),
                "b1": fixed_base(tables, 1, b_sc, "setup: B1 points"),
                "b2": fixed_base(tables, 2, b_sc, "setup: B2 points"),
                "l": fixed_base(tables, 1, l_sc, "setup: L points"),
                "h": fixed_base(tables, 1, h_sc, "setup: H points"),
            }
            ic_raw = cupy.asnumpy(fixed_base(tables, 1, ic_sc, "setup: IC points")).tobytes()
            del a_sc, b_sc, l_sc, h_sc, u, v
            cupy.cuda.get_current_stream().synchronize()
        with timer.phase("setup_download"):
            want = set(dpoints) if host_copy is True else (host_copy or set())
            raw = {name: (cupy.asnumpy(pt).tobytes() if name in want else b"") for name, pt in dpoints.items()}
    del tau, delta
    pk = assemble_key(pce, p, (A, B, C), raw, pts.from_lem(curve, 1, ic_raw, n_inputs, "GPU setup IC"), "gpu-setup")
    adopt_device_key(pk, dev, DeviceKey(pk, dev, points=dpoints))
    return pk
