"""Phase timing (``CUZK_TIMING``).

Every phase of a proof is timed; the figures are returned as a dict (milliseconds) and, when the
environment variable ``CUZK_TIMING`` is set to a non-empty value other than "0", printed to stderr as
one machine-readable line per phase, flushed at once (the original daemon lost its timing output to
buffering when stderr was redirected to a file):

    CUZK_TIMING phase=ntt_a ms=12.345 job=<label>

GPU phases are timed with CUDA events by the GPU backend and recorded through :meth:`Timer.record`.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager


def enabled() -> bool:
    v = os.environ.get("CUZK_TIMING", "")
    return v not in ("", "0")


_print_lock = threading.Lock()


def emit(phase: str, ms: float, label: str = "", **extra) -> None:
    if not enabled():
        return
    parts = [f"CUZK_TIMING phase={phase} ms={ms:.3f}"]
    if label:
        parts.append(f"job={label}")
    parts.extend(f"{k}={v}" for k, v in extra.items())
    line = " ".join(parts) + "\n"
    with _print_lock:
        sys.stderr.write(line)
        sys.stderr.flush()


class Timer:
    """Collects phase durations (ms) for one job."""

    def __init__(self, label: str = ""):
        self.label = label
        self.phases: dict[str, float] = {}
        self._t0 = time.perf_counter()

    def record(self, phase: str, ms: float, **extra) -> None:
        self.phases[phase] = self.phases.get(phase, 0.0) + ms
        emit(phase, ms, self.label, **extra)

    @contextmanager
    def phase(self, name: str):
        t = time.perf_counter()
        try:
            yield
        finally:
            self.record(name, (time.perf_counter() - t) * 1e3)

    def member(self, label: str) -> Timer:
        """A timer for one proof of a batch proved together: the batch's phases so far (device time the
        batch's proofs shared, not divided) and its start, under the proof's own label."""
        t = Timer(label)
        t.phases = dict(self.phases)
        t._t0 = self._t0
        return t

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self._t0) * 1e3

    def total(self) -> dict[str, float]:
        """Record the wall time since the timer started as phase 'total' and return all phases."""
        self.record("total", self.elapsed_ms())
        return dict(self.phases)
