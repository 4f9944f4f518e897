"""Gadgets: constraint-system building blocks, each a function of a constraint system and batches of
variables (one call constrains and computes B identical instances at once: the shape's leading axes)."""
