"""cuzk-bench: load and timing tool for a running proving daemon."""
