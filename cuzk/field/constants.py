"""BLS12-381 field constants.

Fr (scalar field, 255 bits) and Fq (base field, 381 bits). Montgomery constants use R = 2^(64*limbs),
which is what snarkjs/ffjavascript ("LEM" encoding), blst, bellperson and our GPU kernels all store.
"""

R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
Q = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB

FR_LIMBS = 4
FQ_LIMBS = 6
FR_BYTES = 32
FQ_BYTES = 48

FR_MONT_R = pow(2, 64 * FR_LIMBS, R)  # R_r = 2^256 mod r
FR_MONT_R2 = pow(2, 128 * FR_LIMBS, R)
FR_MONT_RINV = pow(2, -64 * FR_LIMBS, R)
FQ_MONT_R = pow(2, 64 * FQ_LIMBS, Q)  # R_q = 2^384 mod q
FQ_MONT_R2 = pow(2, 128 * FQ_LIMBS, Q)
FQ_MONT_RINV = pow(2, -64 * FQ_LIMBS, Q)

FR_TWO_ADICITY = 32  # r - 1 = t * 2^32, t odd
FR_TRACE = (R - 1) >> FR_TWO_ADICITY

# snarkjs/ffjavascript build roots of unity from the smallest quadratic non-residue, 5.
# bellperson/blstrs (and arkworks) use the multiplicative generator 7; the two give different
# (permuted) domains, so each parameter style keeps its own.
SNARKJS_ROOT_GENERATOR = 5
BELLPERSON_GENERATOR = 7


def root_of_unity(log_n: int, generator: int = SNARKJS_ROOT_GENERATOR) -> int:
    """Primitive 2^log_n-th root of unity: generator^((r-1)/2^log_n)."""
    if not 0 <= log_n <= FR_TWO_ADICITY:
        raise ValueError(f"domain 2^{log_n} exceeds the two-adicity 2^{FR_TWO_ADICITY} of Fr")
    return pow(generator, (R - 1) >> log_n, R)


def limbs(x: int, n: int) -> list[int]:
    """Little-endian 64-bit limbs of x."""
    return [(x >> (64 * i)) & 0xFFFFFFFFFFFFFFFF for i in range(n)]
