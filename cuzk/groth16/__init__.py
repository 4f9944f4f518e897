"""Groth16: keys and their formats (zkey, bellperson params, JSON), prover, verifier, dev setup."""
