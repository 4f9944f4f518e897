"""BLS12-381 groups through py-arkworks-bls12381: bulk point encodings, thread-pooled MSM, pairings."""
