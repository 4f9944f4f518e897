#!/usr/bin/env bash
# Regenerate the circom/snarkjs interop fixtures under tests/fixtures/: the
# example and other circuits for BLS12-381 (--prime bls12381) in
# tests/fixtures/{example,other}, and for BN254 (--prime bn128, circom's
# default) in tests/fixtures/bn254/{example,other}.
#
# Usage (from anywhere; the script cd's to the repo root):
#     scripts/make_fixtures.sh
#
# Needs `npm install` to have been run in the repo root (circom2 0.2.23,
# snarkjs 0.7.6 from package.json); uses only node_modules/.bin tools.
#
# Randomness: `snarkjs powersoftau contribute` / `zkey contribute` always mix
# crypto.randomBytes into the -e entropy, so they can never be reproduced.
# By default this script therefore uses the *beacon* variants (a fixed beacon
# hash, 2^10 iterations), which are deterministic: rerunning the script gives
# byte-identical r1cs/sym/wasm/wtns/ptau/zkey/vkey/json files, and only
# proof.json changes (Groth16 proofs are randomized).
# Set FIXTURE_CONTRIB=contribute to use the random `contribute` commands instead.
#
# Per-step wall times are printed to stderr.

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

CIRCOM="node_modules/.bin/circom2"
SNARKJS="node_modules/.bin/snarkjs"
FIX="tests/fixtures"
CIRCUITS=(example other)
CURVES=(bls12381 bn128)                # snarkjs/circom names; see curve_dir
CONTRIB_MODE="${FIXTURE_CONTRIB:-beacon}"
PTAU_KEEP_MAX_BYTES=$((1536 * 1024))   # commit the ptau only if smaller than 1.5 MiB
JSON_KEEP_MAX_BYTES=$((1024 * 1024))   # commit zkey.json / r1cs.json only if < 1 MiB
MIN_POWER=8                            # ptau power floor

# Fixed beacon hashes / entropy strings (only the beacon ones give determinism).
PTAU_BEACON="0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20"
ZKEY_BEACON="6375757a2d666978747572652d7a6b65792d626561636f6e2d76312d30303031"
PTAU_ENTROPY="cuzk fixture powers of tau entropy v1"
ZKEY_ENTROPY="cuzk fixture zkey entropy v1"

for tool in "$CIRCOM" "$SNARKJS"; do
    if [[ ! -x "$tool" ]]; then
        echo "error: $tool not found; run 'npm install' in $ROOT first" >&2
        exit 1
    fi
done
case "$CONTRIB_MODE" in
    beacon|contribute) ;;
    *) echo "error: FIXTURE_CONTRIB must be 'beacon' or 'contribute'" >&2; exit 1 ;;
esac

TMP="$(mktemp -d "${TMPDIR:-/tmp}/cuzk-fixtures.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
LOG="$TMP/log.txt"

# run LABEL CMD... : run a command quietly, print its wall time, dump its
# output (and fail) if it exits non-zero.
run() {
    local label="$1"; shift
    local t0 t1 rc=0
    : >"$TMP/step.out"
    t0=$(date +%s.%N)
    "$@" >"$TMP/step.out" 2>&1 || rc=$?
    t1=$(date +%s.%N)
    cat "$TMP/step.out" >>"$LOG"
    if (( rc != 0 )); then
        echo "FAILED ($rc): $label" >&2
        echo "  command: $*" >&2
        sed 's/^/  | /' "$TMP/step.out" >&2
        exit 1
    fi
    awk -v l="$label" -v a="$t0" -v b="$t1" 'BEGIN { printf "  %-46s %7.2f s\n", l, b - a }' >&2
}

filesize() { stat -c %s "$1"; }

# r1cs_field FILE KEY : read one "# of KEY: N" value from `snarkjs r1cs info`.
r1cs_field() {
    "$SNARKJS" r1cs info "$1" 2>&1 | sed -n "s/.*# of $2: \([0-9]*\).*/\1/p" | head -n1
}

# The fixture folder of a curve (snarkjs/circom name): BLS12-381 at the top
# level (where the fixtures always were), BN254 under bn254/.
curve_dir() {
    case "$1" in
        bls12381) echo "$FIX" ;;
        bn128) echo "$FIX/bn254" ;;
        *) echo "unknown curve $1" >&2; exit 1 ;;
    esac
}

# The curve's title for the README, and r - 5 (-5 mod r, r the curve's scalar
# field order; beyond bash arithmetic, so written out).
curve_title() {
    case "$1" in
        bls12381) echo "BLS12-381" ;;
        bn128) echo "BN254" ;;
    esac
}
r_minus_5() {
    case "$1" in
        bls12381) echo "52435875175126190479447740508185965837690552500527637822603658699938581184508" ;;
        bn128) echo "21888242871839275222246405745257275088548364400416034343698204186575808495612" ;;
    esac
}

write_input() {
    case "$1" in
        example)
            # b = r - 5 (i.e. -5 mod r, r = the curve's scalar field order):
            # a full-width public input.
            cat >"$3" <<EOF
{
  "a": "3",
  "b": "$(r_minus_5 "$2")",
  "x": ["5", "7", "13"],
  "w": "40000",
  "s": "1"
}
EOF
            ;;
        other)
            cat >"$3" <<'EOF'
{
  "x": "7",
  "k": ["2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13"]
}
EOF
            ;;
        *) echo "no input for $1" >&2; exit 1 ;;
    esac
}

declare -A NCONS NWIRES NPUB NOUT NPRV POWERS PTAU_KEPT
for curve in "${CURVES[@]}"; do
    dir="$(curve_dir "$curve")"
    echo "== $(curve_title "$curve"): compiling circuits (--prime $curve)" >&2
    POWER=$MIN_POWER
    for name in "${CIRCUITS[@]}"; do
        out="$dir/$name"
        key="$curve/$name"
        mkdir -p "$out" "$TMP/build/$key"
        run "circom2 $name.circom --prime $curve" "$CIRCOM" "$FIX/circuits/$name.circom" \
            --r1cs --wasm --sym --O1 --prime "$curve" -o "$TMP/build/$key"
        cp "$TMP/build/$key/$name.r1cs" "$out/circuit.r1cs"
        cp "$TMP/build/$key/$name.sym" "$out/circuit.sym"
        cp "$TMP/build/$key/${name}_js/$name.wasm" "$out/circuit.wasm"

        NCONS[$key]=$(r1cs_field "$out/circuit.r1cs" "Constraints")
        NWIRES[$key]=$(r1cs_field "$out/circuit.r1cs" "Wires")
        NPUB[$key]=$(r1cs_field "$out/circuit.r1cs" "Public Inputs")
        NOUT[$key]=$(r1cs_field "$out/circuit.r1cs" "Outputs")
        NPRV[$key]=$(r1cs_field "$out/circuit.r1cs" "Private Inputs")
        # Groth16 domain must hold nConstraints + nPublic (outputs + public inputs) + 1 rows.
        need=$(( NCONS[$key] + NPUB[$key] + NOUT[$key] + 1 ))
        p=0
        while (( (1 << p) < need )); do p=$((p + 1)); done
        if (( p > POWER )); then POWER=$p; fi
        echo "  $name: constraints=${NCONS[$key]} wires=${NWIRES[$key]} outputs=${NOUT[$key]} public_inputs=${NPUB[$key]} private_inputs=${NPRV[$key]} (needs 2^$p)" >&2
    done
    POWERS[$curve]=$POWER

    echo "== powers of tau ($curve, power $POWER, mode $CONTRIB_MODE)" >&2
    run "powersoftau new $curve $POWER" "$SNARKJS" powersoftau new "$curve" "$POWER" "$TMP/$curve.pot0.ptau"
    if [[ "$CONTRIB_MODE" == beacon ]]; then
        run "powersoftau beacon" "$SNARKJS" powersoftau beacon "$TMP/$curve.pot0.ptau" "$TMP/$curve.pot1.ptau" \
            "$PTAU_BEACON" 10 -n="cuzk fixture ptau beacon"
    else
        run "powersoftau contribute" "$SNARKJS" powersoftau contribute "$TMP/$curve.pot0.ptau" "$TMP/$curve.pot1.ptau" \
            -n="cuzk fixture ptau" -e="$PTAU_ENTROPY"
    fi
    run "powersoftau prepare phase2" "$SNARKJS" powersoftau prepare phase2 "$TMP/$curve.pot1.ptau" "$TMP/$curve.pot_final.ptau"
    run "powersoftau verify" "$SNARKJS" powersoftau verify "$TMP/$curve.pot_final.ptau"
    PTAU="$TMP/$curve.pot_final.ptau"
    rm -f "$dir/pot_${curve}_final.ptau"
    if (( $(filesize "$PTAU") < PTAU_KEEP_MAX_BYTES )); then
        cp "$PTAU" "$dir/pot_${curve}_final.ptau"
        PTAU_KEPT[$curve]=1
    else
        echo "  ptau is $(filesize "$PTAU") bytes: not kept in $dir" >&2
        PTAU_KEPT[$curve]=0
    fi

    for name in "${CIRCUITS[@]}"; do
        out="$dir/$name"
        echo "== $curve/$name" >&2
        write_input "$name" "$curve" "$out/input.json"
        run "wtns calculate" "$SNARKJS" wtns calculate "$out/circuit.wasm" "$out/input.json" "$out/witness.wtns"
        run "wtns check" "$SNARKJS" wtns check "$out/circuit.r1cs" "$out/witness.wtns"
        run "groth16 setup" "$SNARKJS" groth16 setup "$out/circuit.r1cs" "$PTAU" "$TMP/${curve}_${name}_c0.zkey"
        if [[ "$CONTRIB_MODE" == beacon ]]; then
            run "zkey beacon" "$SNARKJS" zkey beacon "$TMP/${curve}_${name}_c0.zkey" "$out/circuit.zkey" \
                "$ZKEY_BEACON" 10 -n="fixture"
        else
            run "zkey contribute" "$SNARKJS" zkey contribute "$TMP/${curve}_${name}_c0.zkey" "$out/circuit.zkey" \
                -n="fixture" -e="$ZKEY_ENTROPY"
        fi
        run "zkey verify" "$SNARKJS" zkey verify "$out/circuit.r1cs" "$PTAU" "$out/circuit.zkey"
        run "zkey export verificationkey" "$SNARKJS" zkey export verificationkey "$out/circuit.zkey" "$out/verification_key.json"
        run "groth16 prove" "$SNARKJS" groth16 prove "$out/circuit.zkey" "$out/witness.wtns" "$out/proof.json" "$out/public.json"
        run "groth16 verify" "$SNARKJS" groth16 verify "$out/verification_key.json" "$out/public.json" "$out/proof.json"
        if ! grep -q "OK!" "$TMP/step.out"; then
            echo "groth16 verify did not print OK! for $curve/$name" >&2
            cat "$TMP/step.out" >&2
            exit 1
        fi

        rm -f "$out/zkey.json" "$out/r1cs.json" "$out/witness.json"
        if [[ "$name" == example ]]; then
            run "wtns export json" "$SNARKJS" wtns export json "$out/witness.wtns" "$out/witness.json"
            run "zkey export json" "$SNARKJS" zkey export json "$out/circuit.zkey" "$TMP/zkey.json"
            if (( $(filesize "$TMP/zkey.json") < JSON_KEEP_MAX_BYTES )); then
                cp "$TMP/zkey.json" "$out/zkey.json"
            else
                echo "  zkey.json is $(filesize "$TMP/zkey.json") bytes: not kept" >&2
            fi
            run "r1cs export json" "$SNARKJS" r1cs export json "$out/circuit.r1cs" "$TMP/r1cs.json"
            if (( $(filesize "$TMP/r1cs.json") < JSON_KEEP_MAX_BYTES )); then
                cp "$TMP/r1cs.json" "$out/r1cs.json"
            else
                echo "  r1cs.json is $(filesize "$TMP/r1cs.json") bytes: not kept" >&2
            fi
        fi
    done
done

# ---------------------------------------------------------------- README
{
cat <<EOF
# circom / snarkjs interop fixtures

Generated by \`scripts/make_fixtures.sh\` (run from the repo root, after
\`npm install\`). Do not edit by hand; rerun the script instead:

    scripts/make_fixtures.sh

Tools (pinned in \`package.json\`): circom2 npm package 0.2.23 (circom compiler
$("$CIRCOM" --version 2>/dev/null | sed -n 's/^circom compiler //p' | head -n1)), snarkjs 0.7.6. The same two circuits are built for two curves,
compiled with \`--O1\` so linear constraints are kept:

- BLS12-381 (\`--prime bls12381\`, snarkjs curve \`bls12381\`): \`example/\`, \`other/\`
  and the powers of tau at the top level.
- BN254 (\`--prime bn128\`, circom's default; snarkjs curve \`bn128\`):
  \`bn254/example/\`, \`bn254/other/\` and \`bn254/\`'s powers of tau.

Setup contributions were made in \`$CONTRIB_MODE\` mode. In \`beacon\` mode (the
default) everything except \`proof.json\` is reproducible byte for byte:
\`snarkjs ... contribute -e=...\` always mixes in OS randomness, so the script
uses \`powersoftau beacon\` / \`zkey beacon\` with fixed beacon hashes instead
(\`FIXTURE_CONTRIB=contribute scripts/make_fixtures.sh\` uses the random
\`contribute\` commands). Groth16 proofs are randomized, so \`proof.json\`
differs on every run; \`public.json\` does not.

Wire layout (circom): wire 0 = constant 1, then public outputs, then public
inputs, then private inputs, then internal signals.

## Files

EOF
for curve in "${CURVES[@]}"; do
    rel="$(curve_dir "$curve")"
    rel="${rel#"$FIX"}"
    rel="${rel#/}"
    rel="${rel:+$rel/}"
    if (( PTAU_KEPT[$curve] )); then
cat <<EOF
- \`${rel}pot_${curve}_final.ptau\`: powers of tau for $curve, power ${POWERS[$curve]}
  (\`powersoftau new\`, one $CONTRIB_MODE contribution, \`prepare phase2\`);
  shared by the $(curve_title "$curve") circuits.
EOF
    else
cat <<EOF
- (the $curve powers-of-tau file, power ${POWERS[$curve]}, is not committed: it is too large.)
EOF
    fi
done
cat <<EOF
- \`circuits/example.circom\`, \`circuits/other.circom\`: circuit sources.

Per curve and circuit, in \`example/\`, \`other/\`, \`bn254/example/\` and
\`bn254/other/\`:

- \`circuit.r1cs\`: constraint system (\`circom2 --r1cs\`).
- \`circuit.sym\`: signal names (\`circom2 --sym\`).
- \`circuit.wasm\`: witness generator (\`circom2 --wasm\`, \`NAME_js/NAME.wasm\`).
- \`input.json\`: the fixed input the witness is computed from.
- \`witness.wtns\`: \`snarkjs wtns calculate circuit.wasm input.json witness.wtns\`.
- \`circuit.zkey\`: \`snarkjs groth16 setup\` with the curve's ptau above, plus one
  $CONTRIB_MODE contribution named "fixture".
- \`verification_key.json\`: \`snarkjs zkey export verificationkey\`.
- \`proof.json\`, \`public.json\`: \`snarkjs groth16 prove circuit.zkey witness.wtns\`;
  checked with \`snarkjs groth16 verify\` (prints \`OK!\`).

Only in \`example/\` and \`bn254/example/\` (oracles for our binary parsers):

EOF
if [[ -f "$FIX/example/zkey.json" ]]; then
    echo '- `zkey.json`: `snarkjs zkey export json circuit.zkey zkey.json`.'
fi
if [[ -f "$FIX/example/r1cs.json" ]]; then
    echo '- `r1cs.json`: `snarkjs r1cs export json circuit.r1cs r1cs.json`.'
fi
echo '- `witness.json`: `snarkjs wtns export json witness.wtns witness.json`.'
cat <<EOF

## Circuits (\`snarkjs r1cs info\`)

| curve | circuit | constraints | wires | outputs | public inputs | private inputs |
|---|---|---|---|---|---|---|
EOF
for curve in "${CURVES[@]}"; do
    for name in "${CIRCUITS[@]}"; do
        key="$curve/$name"
        echo "| $(curve_title "$curve") | $name | ${NCONS[$key]} | ${NWIRES[$key]} | ${NOUT[$key]} | ${NPUB[$key]} | ${NPRV[$key]} |"
    done
done
cat <<EOF

- \`example\`: public inputs \`a\`, \`b\`; private \`x[3]\`, \`w\` (< 2^16), \`s\`
  (boolean); outputs \`digest\`, \`weighted\`, \`combo\`. Products, a cubic
  polynomial, a boolean check, a selector, a 16-bit decomposition, and 8 rounds
  of a toy x^5 S-box permutation (with round constants up to ~2^215 and a
  mixing matrix with negative entries); the weighted sums survive as linear
  constraints. Input \`b\` is r - 5 (a full-width field element; r is the
  curve's scalar field order).
- \`other\`: public input \`x\`, private \`k[12]\`, output
  \`y = x * k[0] * ... * k[11] + x\`. Its zkey is the "zkey for another
  circuit" in mismatch tests.

public.json (outputs first, then public inputs):

EOF
for curve in "${CURVES[@]}"; do
    dir="$(curve_dir "$curve")"
    for name in "${CIRCUITS[@]}"; do
        echo "- $(curve_title "$curve") \`$name\`: \`$(tr -d ' \n' <"$dir/$name/public.json")\`"
    done
done
} >"$FIX/README.md"

echo "== done" >&2
du -sh "$FIX" >&2
