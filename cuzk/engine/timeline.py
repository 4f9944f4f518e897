"""Pipeline timeline: one event per stage boundary of every partition, for waterfalls and utilization.

Each event is a CSV record ``TIMELINE,<ms since engine start>,<EVENT>,<job>,<partition>,<device>,<detail>``
(the original daemon's format, so its ``grep ^TIMELINE | sort -t, -k2 -n`` recipe works). Events:
SUBMIT, SYNTH_START, SYNTH_END, PROVE_START (the device is held: kernels of prove_start), PROVE_END,
FINALIZE_START, FINALIZE_END, DONE. They go to a bounded in-memory ring (``recent()``), to the file named by
``logging.timeline`` and, with ``CUZK_TIMELINE=1``, to stderr, each line flushed at once.

:func:`analyze` turns the records back into intervals: per-device busy time (the union of
PROVE_START..PROVE_END), utilization over the span, mean synthesis concurrency, job latencies.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

PAIRS = {"SYNTH_START": "SYNTH_END", "PROVE_START": "PROVE_END", "FINALIZE_START": "FINALIZE_END"}


class Timeline:
    def __init__(self, path: str = "", capacity: int = 200_000, to_stderr: bool | None = None):
        self.t0 = time.monotonic()
        self._ring: deque[str] = deque(maxlen=capacity)
        self._lock = threading.Lock()
        self._fh = open(path, "a", buffering=1) if path else None
        self._stderr = os.environ.get("CUZK_TIMELINE", "") not in ("", "0") if to_stderr is None else to_stderr

    def event(self, name: str, job: str = "", part: int = -1, device: str = "", detail: str = "") -> None:
        line = f"TIMELINE,{(time.monotonic() - self.t0) * 1e3:.3f},{name},{job},{part},{device},{detail}"
        with self._lock:
            self._ring.append(line)
            if self._fh is not None:
                self._fh.write(line + "\n")
            if self._stderr:
                sys.stderr.write(line + "\n")
                sys.stderr.flush()

    def recent(self) -> list[str]:
        with self._lock:
            return list(self._ring)

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None


@dataclass
class Interval:
    kind: str  # SYNTH | PROVE | FINALIZE
    job: str
    part: int
    device: str
    start: float
    end: float


@dataclass
class Analysis:
    span_ms: float
    intervals: list[Interval]
    device_busy_ms: dict[str, float] = field(default_factory=dict)
    device_utilization: dict[str, float] = field(default_factory=dict)
    mean_synthesis_concurrency: float = 0.0
    job_latency_ms: dict[str, float] = field(default_factory=dict)


def parse(lines: Iterable[str]) -> list[tuple[float, str, str, int, str, str]]:
    out: list[tuple[float, str, str, int, str, str]] = []
    for raw in lines:
        ln = raw.strip()
        if not ln.startswith("TIMELINE,"):
            continue
        f = ln.split(",", 6)
        if len(f) < 6:
            continue
        out.append((float(f[1]), f[2], f[3], int(f[4]), f[5], f[6] if len(f) > 6 else ""))
    out.sort(key=lambda r: r[0])
    return out


def _union(spans: list[tuple[float, float]]) -> float:
    """Length of the union of the spans."""
    total = 0.0
    cur: tuple[float, float] | None = None  # the run of overlapping spans being merged
    for s, e in sorted(spans):
        if cur is None or s > cur[1]:
            if cur is not None:
                total += cur[1] - cur[0]
            cur = (s, e)
        else:
            cur = (cur[0], max(cur[1], e))
    if cur is not None:
        total += cur[1] - cur[0]
    return total


def analyze(lines: Iterable[str]) -> Analysis:
    recs = parse(lines)
    if not recs:
        return Analysis(0.0, [])
    open_: dict[tuple[str, str, int], tuple[float, str]] = {}
    ivs: list[Interval] = []
    submit: dict[str, float] = {}
    done: dict[str, float] = {}
    for t, ev, job, part, dev, _ in recs:
        if ev in PAIRS:
            open_[(ev, job, part)] = (t, dev)
        elif ev in PAIRS.values():
            start_ev = next(k for k, v in PAIRS.items() if v == ev)
            if (start_ev, job, part) in open_:
                t0, dev0 = open_.pop((start_ev, job, part))
                ivs.append(Interval(start_ev.split("_")[0], job, part, dev or dev0, t0, t))
        elif ev == "SUBMIT":
            submit.setdefault(job, t)
        elif ev == "DONE":
            done[job] = t
    span = recs[-1][0] - recs[0][0]
    a = Analysis(span, ivs)
    devices = sorted({iv.device for iv in ivs if iv.kind == "PROVE"})
    for d in devices:
        busy = _union([(iv.start, iv.end) for iv in ivs if iv.kind == "PROVE" and iv.device == d])
        a.device_busy_ms[d] = busy
        a.device_utilization[d] = busy / span if span > 0 else 0.0
    synth = sum(iv.end - iv.start for iv in ivs if iv.kind == "SYNTH")
    a.mean_synthesis_concurrency = synth / span if span > 0 else 0.0
    a.job_latency_ms = {j: done[j] - submit[j] for j in done if j in submit}
    return a


def plot(a: Analysis, path: str, title: str = "cuzk pipeline timeline") -> None:
    """A waterfall PNG: one row per partition, synthesis / device / finalize bars (needs matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from .. import CuzkError

        raise CuzkError("plotting a timeline needs matplotlib: pip install -e '.[plot]'") from None
    rows = sorted(
        {(iv.job, iv.part) for iv in a.intervals}, key=lambda r: min(iv.start for iv in a.intervals if (iv.job, iv.part) == r)
    )
    index = {r: i for i, r in enumerate(rows)}
    colors = {"SYNTH": "#4c72b0", "PROVE": "#dd8452", "FINALIZE": "#55a868"}
    fig, ax = plt.subplots(figsize=(11, max(2.5, 0.22 * len(rows) + 1.5)))
    for iv in a.intervals:
        ax.barh(index[(iv.job, iv.part)], (iv.end - iv.start) / 1e3, left=iv.start / 1e3, color=colors[iv.kind], height=0.8)
    ax.set_xlabel("seconds since engine start")
    ax.set_ylabel("job partition")
    util = ", ".join(f"{d} {100 * u:.0f}%" for d, u in a.device_utilization.items())
    ax.set_title(f"{title}\ndevice utilization: {util or 'n/a'}")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colors.values()]
    fig.legend(handles, ["synthesis", "device (prove_start)", "finalize"], loc="lower center", ncol=3, frameon=False)
    ax.invert_yaxis()
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
