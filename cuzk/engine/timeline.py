"""Pipeline timeline: one event per stage boundary of every partition, for waterfalls and utilization.

Each event is a CSV record ``TIMELINE,<ms since engine start>,<EVENT>,<job>,<partition>,<device>,<detail>``
(the original daemon's format, so its ``grep ^TIMELINE | sort -t, -k2 -n`` recipe works). Events:
SUBMIT, SYNTH_START (detail ``worker=<thread>``: the synthesis worker), SYNTH_END, PROVE_START (the device is
held: kernels of prove_start), PROVE_END, FINALIZE_START, FINALIZE_END, DONE, and PHASE (detail
``<phase>=<ms>``: one prover phase, written when the prover reports it). They go to a bounded in-memory ring
(``recent()``), to the file named by ``logging.timeline`` and, with ``CUZK_TIMELINE=1``, to stderr, each line
flushed at once.

:func:`analyze` turns the records back into intervals: per-device busy time (the union of
PROVE_START..PROVE_END), utilization over the span, idle gaps between consecutive jobs on each device, mean
synthesis concurrency, job latencies, prover phases. :func:`chrome_trace` makes a Chrome / Perfetto trace of
them and :func:`plot` a waterfall PNG.

A PHASE is placed to end when it was reported: exact for the phases the CPU backend times on the host
(reported as they end); a GPU phase timed by CUDA events is reported when its stream is synchronized, so its
duration is exact but its place may be later than it ran.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

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
    lane: str = ""  # the synthesis worker of a SYNTH (from SYNTH_START's detail; "" in older files)


@dataclass
class PhaseSpan:
    """One prover phase of one partition: ``end`` is when it was reported (see the module doc)."""

    name: str
    job: str
    part: int
    device: str
    start: float
    end: float


@dataclass
class Gap:
    """An idle time of a device between two consecutive jobs (ms since engine start)."""

    device: str
    start: float
    end: float
    after: str  # job:partition that ended before it
    before: str  # job:partition that started after it

    @property
    def ms(self) -> float:
        return self.end - self.start


@dataclass
class Analysis:
    span_ms: float
    intervals: list[Interval]
    device_busy_ms: dict[str, float] = field(default_factory=dict)
    device_utilization: dict[str, float] = field(default_factory=dict)
    mean_synthesis_concurrency: float = 0.0
    job_latency_ms: dict[str, float] = field(default_factory=dict)
    phases: list[PhaseSpan] = field(default_factory=list)
    gaps: dict[str, list[Gap]] = field(default_factory=dict)  # per device, in time order
    submit_ms: dict[str, float] = field(default_factory=dict)
    done_ms: dict[str, float] = field(default_factory=dict)


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
    open_: dict[tuple[str, str, int], tuple[float, str, str]] = {}
    ivs: list[Interval] = []
    phases: list[PhaseSpan] = []
    submit: dict[str, float] = {}
    done: dict[str, float] = {}
    for t, ev, job, part, dev, detail in recs:
        if ev in PAIRS:
            lane = detail[len("worker=") :] if ev == "SYNTH_START" and detail.startswith("worker=") else ""
            open_[(ev, job, part)] = (t, dev, lane)
        elif ev in PAIRS.values():
            start_ev = next(k for k, v in PAIRS.items() if v == ev)
            if (start_ev, job, part) in open_:
                t0, dev0, lane = open_.pop((start_ev, job, part))
                ivs.append(Interval(start_ev.split("_")[0], job, part, dev or dev0, t0, t, lane))
        elif ev == "PHASE":
            name, _, ms = detail.rpartition("=")
            try:
                dur = float(ms)
            except ValueError:
                continue
            if name:
                phases.append(PhaseSpan(name, job, part, dev, t - dur, t))
        elif ev == "SUBMIT":
            submit.setdefault(job, t)
        elif ev == "DONE":
            done[job] = t
    span = recs[-1][0] - recs[0][0]
    a = Analysis(span, ivs, phases=phases, submit_ms=submit, done_ms=done)
    devices = sorted({iv.device for iv in ivs if iv.kind == "PROVE"})
    for d in devices:
        busy = _union([(iv.start, iv.end) for iv in ivs if iv.kind == "PROVE" and iv.device == d])
        a.device_busy_ms[d] = busy
        a.device_utilization[d] = busy / span if span > 0 else 0.0
    synth = sum(iv.end - iv.start for iv in ivs if iv.kind == "SYNTH")
    a.mean_synthesis_concurrency = synth / span if span > 0 else 0.0
    a.job_latency_ms = {j: done[j] - submit[j] for j in done if j in submit}
    a.gaps = {d: idle_gaps(ivs, d) for d in devices}
    return a


def idle_gaps(ivs: list[Interval], device: str) -> list[Gap]:
    """The device's idle times between consecutive jobs: the holes in the union of its PROVE intervals
    (before the first job and after the last are not gaps)."""
    runs: list[tuple[float, float, str, str]] = []  # merged busy runs: start, end, first and last job:part
    for iv in sorted((iv for iv in ivs if iv.kind == "PROVE" and iv.device == device), key=lambda iv: iv.start):
        tag = f"{iv.job}:{iv.part}"
        if runs and iv.start <= runs[-1][1]:
            s0, e0, first, last = runs[-1]
            runs[-1] = (s0, max(e0, iv.end), first, tag if iv.end >= e0 else last)
        else:
            runs.append((iv.start, iv.end, tag, tag))
    return [Gap(device, p[1], n[0], p[3], n[2]) for p, n in itertools.pairwise(runs) if n[0] > p[1]]


def _lanes(spans: list[tuple[float, float]]) -> list[int]:
    """A lane per span (in the given order) so that the spans of one lane do not overlap: first fit."""
    ends: list[float] = []
    out = [0] * len(spans)
    for i in sorted(range(len(spans)), key=lambda i: spans[i]):
        s, e = spans[i]
        lane = next((k for k, end in enumerate(ends) if end <= s), len(ends))
        if lane == len(ends):
            ends.append(e)
        else:
            ends[lane] = e
        out[i] = lane
    return out


def chrome_trace(a: Analysis) -> dict[str, Any]:
    """The analysis as a Chrome / Perfetto trace (Trace Event Format, JSON object form): complete events
    (``ph: "X"``, ``ts`` / ``dur`` in microseconds since engine start) on one track per device (its
    prove_start intervals; its finalizes and prover phases on tracks of their own beside it, a second lane
    where they overlap), per synthesis worker and for the jobs (submit to done); metadata events
    (``ph: "M"``) name every process and thread. Open it in https://ui.perfetto.dev or chrome://tracing."""
    events: list[dict[str, Any]] = []
    meta: list[dict[str, Any]] = []
    tids: dict[tuple[int, str], int] = {}
    pids: dict[str, int] = {}

    def pid_of(name: str) -> int:
        if name not in pids:
            pids[name] = len(pids) + 1
            meta.append({"name": "process_name", "ph": "M", "pid": pids[name], "tid": 0, "args": {"name": name}})
            meta.append(
                {"name": "process_sort_index", "ph": "M", "pid": pids[name], "tid": 0, "args": {"sort_index": pids[name]}}
            )
        return pids[name]

    def tid_of(pid: int, name: str) -> int:
        if (pid, name) not in tids:
            tids[(pid, name)] = tid = sum(1 for p, _ in tids if p == pid) + 1
            meta.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
            meta.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": tid}})
        return tids[(pid, name)]

    def x(name: str, cat: str, start: float, end: float, pid: int, tid: int, **args: Any) -> None:
        ts = round(start * 1e3, 3)
        events.append(
            {
                "name": name,
                "cat": cat,
                "ph": "X",
                "ts": ts,
                "dur": max(0.0, round(end * 1e3, 3) - ts),
                "pid": pid,
                "tid": tid,
                "args": args,
            }
        )

    devices = sorted({iv.device for iv in a.intervals if iv.kind in ("PROVE", "FINALIZE")} | {p.device for p in a.phases})
    for d in devices:
        pid = pid_of(f"device {d or '?'}")
        for iv in (iv for iv in a.intervals if iv.kind == "PROVE" and iv.device == d):
            x(
                f"prove_start {iv.job}:{iv.part}",
                "prove",
                iv.start,
                iv.end,
                pid,
                tid_of(pid, "prove_start"),
                job=iv.job,
                partition=iv.part,
            )
        for kind, items in (
            (
                "finalize",
                [
                    (iv.start, iv.end, iv.job, iv.part, "finalize")
                    for iv in a.intervals
                    if iv.kind == "FINALIZE" and iv.device == d
                ],
            ),
            ("phases", [(p.start, p.end, p.job, p.part, p.name) for p in a.phases if p.device == d]),
        ):
            lanes = _lanes([(s, e) for s, e, *_ in items])
            for (s, e, job, part, name), lane in zip(items, lanes, strict=True):
                track = kind if lane == 0 else f"{kind} #{lane + 1}"
                label = f"{name} {job}:{part}" if kind == "finalize" else name
                x(label, kind, s, e, pid, tid_of(pid, track), job=job, partition=part)
    synth = [iv for iv in a.intervals if iv.kind == "SYNTH"]
    if synth:
        pid = pid_of("synthesis")
        anon = [iv for iv in synth if not iv.lane]  # an older file: workers unknown, one lane per overlap
        anon_lane = dict(zip(map(id, anon), _lanes([(iv.start, iv.end) for iv in anon]), strict=True))
        for iv in sorted(synth, key=lambda iv: (iv.lane, iv.start)):
            track = iv.lane or f"synthesis lane {anon_lane[id(iv)] + 1}"
            x(
                f"synthesis {iv.job}:{iv.part}",
                "synthesis",
                iv.start,
                iv.end,
                pid,
                tid_of(pid, track),
                job=iv.job,
                partition=iv.part,
            )
    jobs = [(a.submit_ms[j], a.done_ms[j], j) for j in a.done_ms if j in a.submit_ms]
    if jobs:
        pid = pid_of("jobs")
        for (s, e, j), lane in zip(jobs, _lanes([(s, e) for s, e, _ in jobs]), strict=True):
            x(f"job {j}", "job", s, e, pid, tid_of(pid, f"jobs #{lane + 1}"), job=j)
    for d, gaps in a.gaps.items():
        for g in gaps:
            x(
                "idle",
                "idle",
                g.start,
                g.end,
                pid_of(f"device {d or '?'}"),
                tid_of(pid_of(f"device {d or '?'}"), "prove_start"),
                after=g.after,
                before=g.before,
            )
    events.sort(key=lambda e: (e["pid"], e["tid"], e["ts"]))
    return {"traceEvents": meta + events, "displayTimeUnit": "ms", "otherData": {"source": "cuzk TIMELINE"}}


def gap_summary(a: Analysis, gap_ms: float) -> dict[str, dict[str, Any]]:
    """Per device: the idle time between consecutive jobs (total, count, largest and where) and the gaps of
    at least ``gap_ms`` (those the PNG shades)."""
    out = {}
    for d, gaps in a.gaps.items():
        big = max(gaps, key=lambda g: g.ms, default=None)
        out[d] = {
            "total_ms": sum(g.ms for g in gaps),
            "count": len(gaps),
            "largest_ms": big.ms if big else 0.0,
            "largest_after": big.after if big else "",
            "largest_before": big.before if big else "",
            "shaded": [g for g in gaps if g.ms >= gap_ms],
        }
    return out


def plot(a: Analysis, path: str, title: str = "cuzk pipeline timeline", gap_ms: float = 5.0) -> None:
    """A waterfall PNG: one row per partition, synthesis / device / finalize bars (needs matplotlib); every
    idle gap of a device between consecutive jobs of at least ``gap_ms`` shaded and labelled with its length."""
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
    summary = gap_summary(a, gap_ms)
    gap_color = "#c44e52"
    for d, g in summary.items():
        for gp in g["shaded"]:
            ax.axvspan(gp.start / 1e3, gp.end / 1e3, color=gap_color, alpha=0.15, lw=0, zorder=0)
            label = f"{d} idle {gp.ms:.0f} ms" if gp.ms >= 1 else f"{d} idle {gp.ms:.2f} ms"
            ax.annotate(
                label,
                ((gp.start + gp.end) / 2e3, 1.0),
                xycoords=("data", "axes fraction"),
                xytext=(0, -3),
                textcoords="offset points",
                ha="center",
                va="top",
                fontsize=6,
                color=gap_color,
                rotation=90,
                bbox={"fc": "white", "alpha": 0.7, "lw": 0, "pad": 0.5},
            )
    ax.set_xlabel("seconds since engine start")
    ax.set_ylabel("job partition")
    util = ", ".join(f"{d} {100 * u:.0f}%" for d, u in a.device_utilization.items())
    idle = ", ".join(f"{d} {g['total_ms']:.0f} ms in {g['count']} (largest {g['largest_ms']:.0f} ms)" for d, g in summary.items())
    ax.set_title(f"{title}\ndevice utilization: {util or 'n/a'}; idle between jobs: {idle or 'n/a'}", fontsize=9)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colors.values()]
    handles.append(plt.Rectangle((0, 0), 1, 1, color=gap_color, alpha=0.15))
    fig.legend(
        handles,
        ["synthesis", "device (prove_start)", "finalize", f"device idle >= {gap_ms:g} ms"],
        loc="lower center",
        ncol=4,
        frameon=False,
    )
    ax.invert_yaxis()
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
