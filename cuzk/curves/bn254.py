"""BN254 (alt_bn128, "bn128" in circom and snarkjs): circom's default curve and Ethereum's precompiles.

Scalar field r (254 bits, two-adicity 28), base field q (254 bits, four 64-bit limbs, like Fr). Roots
of unity from 5 (ffjavascript's first quadratic non-residue of r, and arkworks' generator). G2 is on
the D-type sextic twist y^2 = x^3 + 3/(9 + u). CPU group arithmetic: cuzk's own numba library
(:mod:`cuzk.curve.bn254`), since no maintained Python binding with bulk operations exists (NOTES.md).
Binary proofs use the EVM layout (A, B, C uncompressed, big-endian, G2 as c1 || c0: 256 bytes), the
order of `snarkjs zkey export soliditycalldata`.
"""

from . import Curve

CURVE = Curve(
    name="bn254",
    title="BN254",
    snarkjs_name="bn128",
    json_names=("bn128", "bn254", "alt_bn128", "altbn128"),
    circom_prime="bn128",
    r=21888242871839275222246405745257275088548364400416034343698204186575808495617,
    q=21888242871839275222246405745257275088696311157297823662689037894645226208583,
    fq_limbs=4,
    root_generator=5,
    g1=(1, 2),
    g2=(
        (
            10857046999023057135944570762232829481370756359578518086990519993285655852781,
            11559732032986387107991004021392285783925812861821192530917403151452391805634,
        ),
        (
            8495653923123431417604973247489272438418190587263600148770280649306958101930,
            4082367875863433681332203403145435568316851327593401208105741076214120093531,
        ),
    ),
    b=3,
    b2=(
        19485874751759354771024239261021720505790618469301721065564631296452457478373,
        266929791119991161246907387137283842545076965332900288569378510910307636690,
    ),
    cpu_library="cuzk.curve.bn254",
    proof_bytes=256,
)
