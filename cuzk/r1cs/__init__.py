"""Circuits: file formats (.r1cs, .wtns, .sym), the pre-compiled constraint evaluator, synthesis."""
