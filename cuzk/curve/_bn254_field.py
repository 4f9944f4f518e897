# ruff: noqa: PLW0108  (the overloads below return lambdas: numba needs Python functions there)
"""BN254 base field Fq and its quadratic extension Fq2 = Fq[u]/(u^2 + 1), as numba values.

An Fq element is a 4-tuple of uint64 limbs (little-endian, Montgomery form x * 2^256 mod q, fully
reduced); an Fq2 element is the pair (c0, c1) of Fq tuples for c0 + c1 u.

The arithmetic (``fmul``, ``fsqr``, ``fadd``, ``fsub``, ``fdbl``, ``fneg``, ...) is made of numba
*intrinsics*, each generic: it looks at its argument's type when the caller is typed and emits the Fq
or the Fq2 operation, so the point formulas and the MSM kernels are written once and compiled once per
group (G1 over Fq, G2 over Fq2). Additions and subtractions are LLVM IR emitted into the caller; the
multiply and square are one compiled function per field (``compile_internal``) called from every use.
(Plain ``njit`` helpers for everything were indirect calls with their tuples moved through memory: a G1
mixed addition 333 ns against 198-225 ns now; numba's ``inline="always"`` took ten minutes to compile
the library; inlining the multiply everywhere made the G2 kernels ~3x slower to compile and no
faster. NOTES.md, "BN254 CPU point library".)

The multiply is CIOS Montgomery without the carry word ("no-carry", valid since q's top limb is below
2^63 - 1), with q and -q^-1 mod 2^64 as constants. Because 4q < 2^256 it also accepts operands below 2q
(the result is still fully reduced), which the Fq2 formulas use to skip reductions of sums.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from ..curves.bn254 import CURVE
from ..field import mont4

Q = CURVE.q
R = CURVE.r
_M64 = (1 << 64) - 1


def limbs4(x: int) -> tuple[int, int, int, int]:
    return (x & _M64, (x >> 64) & _M64, (x >> 128) & _M64, (x >> 192) & _M64)


def to_mont_int(x: int) -> int:
    return (x % Q) * (1 << 256) % Q


def from_mont_int(x: int) -> int:
    return x * pow(1 << 256, -1, Q) % Q


def mont_tuple(x: int) -> tuple:
    """A canonical integer as an Fq element for numba (a tuple of np.uint64, Montgomery form)."""
    return tuple(np.uint64(v) for v in limbs4(to_mont_int(x)))


Q0, Q1, Q2, Q3 = (np.uint64(v) for v in limbs4(Q))
_QINV = (-pow(Q, -1, 1 << 64)) % (1 << 64)
QINV = np.uint64(_QINV)
assert Q >> 192 < (1 << 63) - 1 and 4 * Q < 1 << 256  # the no-carry multiply and lazy operands
_Z = np.uint64(0)
FQ_ZERO = (_Z, _Z, _Z, _Z)
FQ_ONE = mont_tuple(1)
# q - 2: Fermat inversion exponent, as bits from the top (a frozen constant array)
_QM2_BITS = np.array([int(b) for b in bin(Q - 2)[2:]], dtype=np.uint8)
_B2_MONT_INT = (to_mont_int(CURVE.b2[0]), to_mont_int(CURVE.b2[1]))

# ---------------------------------------------------------------------------------------------
# LLVM IR emitters (operands: lists of i64 values, 4 per Fq element)

_I64 = ir.IntType(64)
_I128 = ir.IntType(128)
_I256 = ir.IntType(256)
_QV = ir.Constant(_I256, Q)


class _Emit:
    def __init__(self, builder):
        self.b = builder

    def c64(self, v: int):
        return ir.Constant(_I64, v)

    def mac(self, t, a, x, c):
        """t + a*x + c -> (low, high) words."""
        b = self.b
        w = b.add(b.add(b.mul(b.zext(a, _I128), b.zext(x, _I128)), b.zext(t, _I128)), b.zext(c, _I128))
        return b.trunc(w, _I64), b.trunc(b.lshr(w, ir.Constant(_I128, 64)), _I64)

    def pack(self, a):
        b = self.b
        v = b.zext(a[0], _I256)
        for i in range(1, 4):
            v = b.or_(v, b.shl(b.zext(a[i], _I256), ir.Constant(_I256, 64 * i)))
        return v

    def unpack(self, v):
        b = self.b
        return [b.trunc(b.lshr(v, ir.Constant(_I256, 64 * i)), _I64) if i else b.trunc(v, _I64) for i in range(4)]

    def reduce(self, v):
        """v < 2q (i256) -> v mod q."""
        b = self.b
        return b.select(b.icmp_unsigned(">=", v, _QV), b.sub(v, _QV), v)

    def mul(self, a, x):
        """Montgomery a*x/2^256 mod q for a, x < 2q; result < q."""
        z = self.c64(0)
        q = [self.c64(v) for v in limbs4(Q)]
        inv = self.c64(_QINV)
        t = [z, z, z, z]
        for i in range(4):
            xi = x[i]
            t0, A = self.mac(t[0], a[0], xi, z)
            m = self.b.mul(t0, inv)
            _, C = self.mac(t0, m, q[0], z)
            t1, A = self.mac(t[1], a[1], xi, A)
            n0, C = self.mac(t1, m, q[1], C)
            t2, A = self.mac(t[2], a[2], xi, A)
            n1, C = self.mac(t2, m, q[2], C)
            t3, A = self.mac(t[3], a[3], xi, A)
            n2, C = self.mac(t3, m, q[3], C)
            t = [n0, n1, n2, self.b.add(C, A)]
        return self.unpack(self.reduce(self.pack(t)))

    def add_lazy(self, a, x):
        """a + x without reduction (< 2q for reduced operands)."""
        return self.unpack(self.b.add(self.pack(a), self.pack(x)))

    def add(self, a, x):
        return self.unpack(self.reduce(self.b.add(self.pack(a), self.pack(x))))

    def sub(self, a, x):
        b = self.b
        pa, px = self.pack(a), self.pack(x)
        d = b.sub(pa, px)
        return self.unpack(b.select(b.icmp_unsigned("<", pa, px), b.add(d, _QV), d))

    def neg(self, a):
        return self.sub([self.c64(0)] * 4, a)

    def const(self, v: int):
        return [self.c64(x) for x in limbs4(v)]

    # Fq2 (pairs of limb lists)

    def f2_mul(self, a, x):
        v0 = self.mul(a[0], x[0])
        v1 = self.mul(a[1], x[1])
        s = self.mul(self.add_lazy(a[0], a[1]), self.add_lazy(x[0], x[1]))
        return [self.sub(v0, v1), self.sub(self.sub(s, v0), v1)]

    def f2_sqr(self, a):
        t = self.mul(a[0], a[1])
        return [self.mul(self.add_lazy(a[0], a[1]), self.sub(a[0], a[1])), self.add(t, t)]

    def f2_mul_xi(self, a):
        """a (9 + u) = (9 a0 - a1) + (9 a1 + a0) u."""
        out = []
        for h in range(2):
            v = a[h]
            v2 = self.add(v, v)
            v4 = self.add(v2, v2)
            v8 = self.add(v4, v4)
            out.append(self.add(v8, v))
        return [self.sub(out[0], a[1]), self.add(out[1], a[0])]


def _kind(t) -> int:
    """1: an Fq tuple, 2: an Fq2 pair, 0: anything else."""
    if isinstance(t, types.UniTuple) and t.count == 4 and t.dtype == types.uint64:
        return 1
    if isinstance(t, types.UniTuple) and t.count == 2 and _kind(t.dtype) == 1:
        return 2
    return 0


def _get(builder, v, k):
    if k == 1:
        return [builder.extract_value(v, i) for i in range(4)]
    return [[builder.extract_value(v, [h, i]) for i in range(4)] for h in range(2)]


def _put(context, builder, typ, k, val):
    out = ir.Constant(context.get_value_type(typ), ir.Undefined)
    if k == 1:
        for i in range(4):
            out = builder.insert_value(out, val[i], i)
        return out
    for h in range(2):
        for i in range(4):
            out = builder.insert_value(out, val[h][i], [h, i])
    return out


def _unary(op1, op2):
    """An intrinsic f(a) for a an Fq or Fq2 value; op1 / op2 emit the operation on limb lists."""

    def typer(typingctx, a):
        k = _kind(a)
        if not k or (k == 1 and op1 is None) or (k == 2 and op2 is None):
            return None

        def codegen(context, builder, sig, args):
            e = _Emit(builder)
            res = (op1 if k == 1 else op2)(e, _get(builder, args[0], k))
            return _put(context, builder, sig.return_type, k, res)

        return a(a), codegen

    return typer


def _binary(op1, op2):
    def typer(typingctx, a, x):
        k = _kind(a)
        if not k or a != x:
            return None

        def codegen(context, builder, sig, args):
            e = _Emit(builder)
            res = (op1 if k == 1 else op2)(e, _get(builder, args[0], k), _get(builder, args[1], k))
            return _put(context, builder, sig.return_type, k, res)

        return a(a, x), codegen

    return typer


def _f2_each(f):
    return lambda e, a: [f(e, a[0]), f(e, a[1])]


def _f2_each2(f):
    return lambda e, a, x: [f(e, a[0], x[0]), f(e, a[1], x[1])]


_fq_mul_inline = intrinsic(_binary(lambda e, a, x: e.mul(a, x), None))


def _fq_mul_impl(a, x):
    return _fq_mul_inline(a, x)


def _fq_sqr_impl(a):
    return _fq_mul_inline(a, a)


def _f2_mul_impl(a, x):
    """Karatsuba, the sums a0 + a1 and x0 + x1 left unreduced (< 2q)."""
    v0 = fmul(a[0], x[0])
    v1 = fmul(a[1], x[1])
    s = fmul(_add_lazy(a[0], a[1]), _add_lazy(x[0], x[1]))
    return fsub(v0, v1), fsub(fsub(s, v0), v1)


def _f2_sqr_impl(a):
    """(a0 + a1)(a0 - a1) + 2 a0 a1 u."""
    t = fmul(a[0], a[1])
    return fmul(_add_lazy(a[0], a[1]), fsub(a[0], a[1])), fadd(t, t)


def _called(impl1, impl2, nargs: int):
    """An intrinsic whose Fq / Fq2 body is one compiled function per type (context.compile_internal),
    called from every use: a multiply inlined at every use made the G2 formulas ~3x slower to compile and
    no faster (NOTES.md)."""

    if nargs == 1:

        def typer1(typingctx, a):
            k = _kind(a)
            if not k:
                return None

            def codegen(context, builder, sig, args):
                return context.compile_internal(builder, impl1 if k == 1 else impl2, sig, args)

            return a(a), codegen

        return typer1

    def typer2(typingctx, a, x):
        k = _kind(a)
        if not k or a != x:
            return None

        def codegen(context, builder, sig, args):
            return context.compile_internal(builder, impl1 if k == 1 else impl2, sig, args)

        return a(a, x), codegen

    return typer2


fmul = intrinsic(_called(_fq_mul_impl, _f2_mul_impl, 2))
fsqr = intrinsic(_called(_fq_sqr_impl, _f2_sqr_impl, 1))
_add_lazy = intrinsic(_binary(lambda e, a, x: e.add_lazy(a, x), None))
fadd = intrinsic(_binary(lambda e, a, x: e.add(a, x), _f2_each2(lambda e, a, x: e.add(a, x))))
fsub = intrinsic(_binary(lambda e, a, x: e.sub(a, x), _f2_each2(lambda e, a, x: e.sub(a, x))))
fdbl = intrinsic(_unary(lambda e, a: e.add(a, a), _f2_each(lambda e, a: e.add(a, a))))
fneg = intrinsic(_unary(lambda e, a: e.neg(a), _f2_each(lambda e, a: e.neg(a))))
# times the curve constant: 3 (G1) or b' = 3 / (9 + u) (G2)
fmul_b = intrinsic(
    _unary(
        lambda e, a: e.add(e.add(a, a), a),
        lambda e, a: e.f2_mul(a, [e.const(_B2_MONT_INT[0]), e.const(_B2_MONT_INT[1])]),
    )
)
f2_mul_xi = intrinsic(_unary(None, lambda e, a: e.f2_mul_xi(a)))
f2_conj = intrinsic(_unary(None, lambda e, a: [a[0], e.neg(a[1])]))


@intrinsic
def f2_mul_fq(typingctx, a, s):
    """(a0 + a1 u) * s for s in Fq."""
    if _kind(a) != 2 or _kind(s) != 1:
        return None

    def codegen(context, builder, sig, args):
        e = _Emit(builder)
        av, sv = _get(builder, args[0], 2), _get(builder, args[1], 1)
        return _put(context, builder, sig.return_type, 2, [e.mul(av[0], sv), e.mul(av[1], sv)])

    return a(a, s), codegen


# the names the pairing code reads best with (every one is the generic intrinsic)
fq_mul = f2_mul = fmul
fq_sqr = f2_sqr = fsqr
fq_add = f2_add = fadd
fq_sub = f2_sub = fsub
fq_dbl = f2_dbl = fdbl
fq_neg = f2_neg = fneg

# ---------------------------------------------------------------------------------------------
# small helpers (plain njit: short enough for LLVM to inline)


@nb.njit(cache=True)
def fq_is_zero(a):
    return (a[0] | a[1] | a[2] | a[3]) == _Z


@nb.njit(cache=True)
def fq_eq(a, b):
    return a[0] == b[0] and a[1] == b[1] and a[2] == b[2] and a[3] == b[3]


@nb.njit(cache=True)
def f2_is_zero(a):
    return fq_is_zero(a[0]) and fq_is_zero(a[1])


@nb.njit(cache=True)
def f2_eq(a, b):
    return fq_eq(a[0], b[0]) and fq_eq(a[1], b[1])


@nb.njit(cache=True)
def fq_pow_bits(a, bits):
    """a^e for e given as its bits from the top (bits[0] == 1)."""
    r = a
    for i in range(1, bits.shape[0]):
        r = fsqr(r)
        if bits[i]:
            r = fmul(r, a)
    return r


@nb.njit(cache=True)
def fq_inv(a):
    """a^-1 (Fermat; 0 -> 0)."""
    return fq_pow_bits(a, _QM2_BITS)


@nb.njit(cache=True)
def f2_inv(a):
    t = fq_inv(fadd(fsqr(a[0]), fsqr(a[1])))
    return fmul(a[0], t), fneg(fmul(a[1], t))


@nb.njit(cache=True)
def fq_below(a):
    """A canonical 4-limb integer is < q."""
    return mont4.below(a[0], a[1], a[2], a[3], Q0, Q1, Q2, Q3)


# ---------------------------------------------------------------------------------------------
# generic helpers by overload (type witnesses, loads and stores)


def finv(a):
    raise NotImplementedError("numba only")


def fis_zero(a):
    raise NotImplementedError("numba only")


def feq(a, b):
    raise NotImplementedError("numba only")


def fzero(a):
    """The zero of a's field (a is only a type witness)."""
    raise NotImplementedError("numba only")


def fone(a):
    raise NotImplementedError("numba only")


def fload(w, arr, i, off):
    """The element of w's field stored at arr[i, off:off + 4] (Fq) or arr[i, off:off + 8] (Fq2: c0, c1)."""
    raise NotImplementedError("numba only")


def fstore(arr, i, off, a):
    raise NotImplementedError("numba only")


def fwords(w):
    """uint64 words of an element of w's field (4 or 8)."""
    raise NotImplementedError("numba only")


def fcurve_b(w):
    """The curve constant b of w's group (3 or b'), Montgomery form."""
    raise NotImplementedError("numba only")


@overload(finv)
def _ov_finv(a):
    return (lambda a: fq_inv(a)) if _kind(a) == 1 else (lambda a: f2_inv(a))


@overload(fis_zero)
def _ov_fis_zero(a):
    return (lambda a: fq_is_zero(a)) if _kind(a) == 1 else (lambda a: f2_is_zero(a))


@overload(feq)
def _ov_feq(a, b):
    return (lambda a, b: fq_eq(a, b)) if _kind(a) == 1 else (lambda a, b: f2_eq(a, b))


@overload(fzero)
def _ov_fzero(a):
    if _kind(a) == 1:
        return lambda a: FQ_ZERO
    return lambda a: (FQ_ZERO, FQ_ZERO)


@overload(fone)
def _ov_fone(a):
    if _kind(a) == 1:
        return lambda a: FQ_ONE
    return lambda a: (FQ_ONE, FQ_ZERO)


@overload(fwords)
def _ov_fwords(w):
    if _kind(w) == 1:
        return lambda w: 4
    return lambda w: 8


@overload(fload)
def _ov_fload(w, arr, i, off):
    if _kind(w) == 1:
        return lambda w, arr, i, off: (arr[i, off], arr[i, off + 1], arr[i, off + 2], arr[i, off + 3])

    def ld2(w, arr, i, off):
        return (
            (arr[i, off], arr[i, off + 1], arr[i, off + 2], arr[i, off + 3]),
            (arr[i, off + 4], arr[i, off + 5], arr[i, off + 6], arr[i, off + 7]),
        )

    return ld2


@overload(fstore)
def _ov_fstore(arr, i, off, a):
    if _kind(a) == 1:

        def st1(arr, i, off, a):
            arr[i, off], arr[i, off + 1], arr[i, off + 2], arr[i, off + 3] = a

        return st1

    def st2(arr, i, off, a):
        arr[i, off], arr[i, off + 1], arr[i, off + 2], arr[i, off + 3] = a[0]
        arr[i, off + 4], arr[i, off + 5], arr[i, off + 6], arr[i, off + 7] = a[1]

    return st2


B1_MONT = mont_tuple(CURVE.b)
B2_MONT = (mont_tuple(CURVE.b2[0]), mont_tuple(CURVE.b2[1]))
B2x3_MONT = (mont_tuple(3 * CURVE.b2[0]), mont_tuple(3 * CURVE.b2[1]))  # 3b' (the pairing's doubling step)


@overload(fcurve_b)
def _ov_fcurve_b(w):
    if _kind(w) == 1:
        return lambda w: B1_MONT
    return lambda w: B2_MONT
