"""Development setup on the GPU: the same keys as :mod:`cuzk.groth16.setup`, in seconds instead of hours.

Every step runs on the device: the Lagrange basis at tau (power table, Fermat inverses), the wire
polynomials u, v, w by transposed sparse mat-vecs (a radix sort of the column indices gives A^T), the
scalar vectors, and one fixed-base multiplication per SRS point (byte-window table, <= 32 mixed
additions, then one inversion for the affine form). The resulting point vectors stay resident as the
key's device copy (no re-upload before proving); a host copy is made only when asked for, e.g. to
write a .zkey / .params file.

FOR DEVELOPMENT ONLY, like the CPU setup: a single party knew the toxic waste.

TODO(curves): BLS12-381 only (arkworks fixed-base tables, field constants); the setup kernels build for
any curve of cuzk.curves.
"""

from __future__ import annotations

import cupy
import numpy as np
from py_arkworks_bls12381 import G1Point, G2Point

from ...curve import points as pts
from ...curve.fixed_base import FixedBase
from ...field import fr
from ...field.constants import R, root_of_unity
from ...groth16.keys import SNARKJS, ProvingKey
from ...groth16.setup import assemble_key, density_selection, plan
from ...r1cs.pce import CSR, PCE
from ...timing import Timer
from . import msm as gmsm
from .backend import DeviceKey, _key_lock
from .ntt import GpuDomain
from .runtime import BLOCK, grid_for, launch, op_errors

_U32 = np.uint32


def _scalar_dev(x: int) -> cupy.ndarray:
    return cupy.asarray(fr.mont_scalar(x).reshape(1, 4))


def _ew(module: str, name: str, *args, n: int, op: str) -> None:
    launch(module, name, grid_for(n), BLOCK, (*args, _U32(n)), op)


def _scale(a: cupy.ndarray, k: int, op: str) -> None:
    """a *= k in place."""
    n = a.shape[0]
    launch("fr_ops", "fr_scale", grid_for(n), BLOCK, (a, _scalar_dev(k), _U32(n)), op)


def lagrange(tau: int, log_n: int, generator: int) -> cupy.ndarray:
    """[L_c(tau)] = Z(tau) omega^c / (n (tau - omega^c)), c < n, on the device."""
    n = 1 << log_n
    w = GpuDomain._table(root_of_unity(log_n, generator), n)
    d = cupy.empty_like(w)
    _ew("setup", "fr_rsub_scalar", w, _scalar_dev(tau), d, n=n, op="setup: tau - omega^c")
    _ew("setup", "fr_inverse", d, d, n=n, op="setup: inverses")
    _ew("fr_ops", "fr_mul", w, d, d, n=n, op="setup: Lagrange basis")
    _scale(d, (pow(tau, n, R) - 1) * pow(n, -1, R) % R, "setup: Lagrange basis")
    return d


def transpose_matvec(m: CSR, x: cupy.ndarray) -> cupy.ndarray:
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
    )
    return out


class _Tables:
    def __init__(self):
        self.g1 = gmsm.upload_points(pts.g1_to_lem([p for row in FixedBase(G1Point()).table for p in row]), 1)
        self.g2 = gmsm.upload_points(pts.g2_to_lem([p for row in FixedBase(G2Point()).table for p in row]), 2)


def fixed_base(tables: _Tables, group: int, scalars: cupy.ndarray, op: str) -> cupy.ndarray:
    n = scalars.shape[0]
    out = cupy.empty((max(1, n), gmsm.POINT_WORDS[group]), dtype=cupy.uint64)[:n]
    table = tables.g1 if group == 1 else tables.g2
    launch("setup", f"g{group}_fixed_base", grid_for(n, 128), 128, (table, cupy.ascontiguousarray(scalars), _U32(n), out), op)
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
    n, rows, n_inputs, tau, delta = p.n, p.rows, p.n_inputs, p.tau, p.delta
    dev = cupy.cuda.Device().id
    with op_errors(f"GPU setup of a 2^{p.log_n} circuit"):
        with timer.phase("setup_qap"):
            A, B, C = pce.qap_matrices()
            L = lagrange(tau, p.log_n, p.generator)[:rows]
            u, v, w = (transpose_matvec(M, L) for M in (A, B, C))
            del L
            k = cupy.empty_like(u)
            coeffs = cupy.asarray(np.stack([fr.mont_scalar(p.beta), fr.mont_scalar(p.alpha)]))
            _ew("setup", "fr_lincomb3", u, v, w, coeffs, k, n=pce.n_wires, op="setup: beta u + alpha v + w")
            del w
            ic_sc = k[:n_inputs].copy()
            _scale(ic_sc, pow(p.gamma, -1, R), "setup: IC")
            l_sc = k[n_inputs:].copy()
            _scale(l_sc, pow(delta, -1, R), "setup: L")
            del k
            if style == SNARKJS:
                w2n = root_of_unity(p.log_n + 1, p.generator)
                x = GpuDomain._table(w2n * w2n % R, n)
                _scale(x, w2n, "setup: odd coset points")
                h_sc = cupy.empty_like(x)
                _ew("setup", "fr_rsub_scalar", x, _scalar_dev(tau), h_sc, n=n, op="setup: H denominators")
                _ew("setup", "fr_inverse", h_sc, h_sc, n=n, op="setup: H inverses")
                _ew("fr_ops", "fr_mul", x, h_sc, h_sc, n=n, op="setup: H")
                _scale(h_sc, (pow(tau, 2 * n, R) - 1) * pow(2 * n, -1, R) * pow(delta, -1, R) % R, "setup: H")
                del x
                a_sc, b_sc = u, v
            else:
                h_sc = GpuDomain._table(tau, n - 1)
                _scale(h_sc, (pow(tau, n, R) - 1) * pow(delta, -1, R) % R, "setup: H")
                a_sel, b_sel = density_selection(pce, n_inputs)
                a_sc, b_sc = u[cupy.asarray(np.flatnonzero(a_sel))], v[cupy.asarray(np.flatnonzero(b_sel))]
            cupy.cuda.get_current_stream().synchronize()
        with timer.phase("setup_points"):
            tables = _Tables()
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
    pk = assemble_key(pce, p, (A, B, C), raw, pts.g1_from_lem(ic_raw, n_inputs, "GPU setup IC"), "gpu-setup")
    with _key_lock:
        pk._objs[("gpu", dev)] = DeviceKey(pk, dev, points=dpoints)
    return pk
