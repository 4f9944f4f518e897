"""128-bit integer primitives for numba kernels.

numba has no 128-bit integer type; these intrinsics emit LLVM i128 arithmetic, which compiles to
single `mul`/`mulx` + `adc` instructions on x86-64. Measured on the 2-core CI-class machine: a 4-limb
Montgomery multiply built on them takes ~27 ns, against ~75 ns for the same algorithm on 32-bit limbs
held in uint64 (NOTES.md, "Fr arithmetic").
"""

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

_U64 = types.uint64
_PAIR = types.UniTuple(_U64, 2)


def _split(builder, context, signature, wide):
    i128 = ir.IntType(128)
    lo = builder.trunc(wide, ir.IntType(64))
    hi = builder.trunc(builder.lshr(wide, ir.Constant(i128, 64)), ir.IntType(64))
    return context.make_tuple(builder, signature.return_type, [lo, hi])


@intrinsic
def mac(typingctx, t, a, b, c):
    """t + a*b + c as (low word, high word); cannot overflow 128 bits."""
    sig = _PAIR(_U64, _U64, _U64, _U64)

    def codegen(context, builder, signature, args):
        i128 = ir.IntType(128)
        t_, a_, b_, c_ = (builder.zext(v, i128) for v in args)
        return _split(builder, context, signature, builder.add(builder.add(builder.mul(a_, b_), t_), c_))

    return sig, codegen


@intrinsic
def adc(typingctx, a, b, c):
    """a + b + c as (sum word, carry word)."""
    sig = _PAIR(_U64, _U64, _U64)

    def codegen(context, builder, signature, args):
        i128 = ir.IntType(128)
        a_, b_, c_ = (builder.zext(v, i128) for v in args)
        return _split(builder, context, signature, builder.add(builder.add(a_, b_), c_))

    return sig, codegen


@intrinsic
def sbb(typingctx, a, b, borrow):
    """a - b - borrow as (difference word, borrow-out in {0, 1})."""
    sig = _PAIR(_U64, _U64, _U64)

    def codegen(context, builder, signature, args):
        i128 = ir.IntType(128)
        a_, b_, c_ = (builder.zext(v, i128) for v in args)
        d = builder.sub(builder.sub(a_, b_), c_)
        lo = builder.trunc(d, ir.IntType(64))
        out = builder.trunc(builder.lshr(d, ir.Constant(i128, 127)), ir.IntType(64))
        return context.make_tuple(builder, signature.return_type, [lo, out])

    return sig, codegen
