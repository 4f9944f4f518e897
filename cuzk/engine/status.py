"""The engine's status: one JSON-ready snapshot (GetStatus, ``GET /status``, ``cuzk status``) and the
Prometheus gauges read from it at scrape time (the counters and histograms are in :mod:`.metrics`).

Devices are described by the backend (``device_title``, ``memory``); everything else is read from the
engine's parts, each under its own lock, so a snapshot is consistent per part, not across parts.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client.core import GaugeMetricFamily

from ..groth16.backend import Backend
from .executor import ProvingDevice
from .job import JobState
from .metrics import Metrics

if TYPE_CHECKING:
    from .engine import Engine


def rss() -> int:
    """This process's resident memory (bytes; 0 where /proc is not there)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def describe_device(backend: Backend, dev: ProvingDevice) -> dict[str, Any]:
    """What the backend says about a device: its title and memory (zeros where it cannot say)."""
    out: dict[str, Any] = {"name": "", "memory_total": 0, "memory_free": 0}
    try:
        out["name"] = backend.device_title(dev.device)
        mem = backend.memory(dev.device)
        out["memory_total"], out["memory_free"] = mem.total, mem.free
    except Exception:  # a device that stopped answering must not break status
        pass
    return out


def snapshot(engine: Engine) -> dict[str, Any]:
    now = time.monotonic()
    up = now - engine.started_mono
    table, pipeline, executor = engine.table, engine.pipeline, engine.executor
    with table.lock:
        jobs = list(table.active.values())
        stages = dict(pipeline.stage)
        totals = dict(table.totals)
        circuits = list(engine.circuits)
    batching = engine.scheduler.batching()
    queues: list[dict[str, Any]] = []
    for cid in circuits:
        mine = [j for j in jobs if j.circuit.id == cid and not j.final]
        queues.append(
            {
                "circuit_id": cid,
                "pending": sum(1 for j in mine if j.state is JobState.QUEUED and j.in_batch is None),
                "in_progress": sum(1 for j in mine if j.state is JobState.RUNNING),
                "batching": batching.get(cid, 0),
            }
        )
    caps = {
        "synthesis": engine.config.synthesis.partition_workers,
        "prover_queue": engine.prover_queue.capacity,
        "proving": len(executor.workers),
        "finalizing": executor.n_finalizers,
    }
    described = {d.name: describe_device(executor.backend, d) for d in executor.devices}
    workers = []
    for w in executor.workers:
        d = w.device
        row: dict[str, Any] = {
            "worker_id": w.id,
            "device": d.name,
            "ordinal": d.ordinal,
            "backend": d.kind,
            "current_job": w.current_job,
            "current_circuit": w.current_circuit,
            "busy_ratio": min(1.0, w.busy() / up) if up > 0 else 0.0,
            "device_busy_ratio": min(1.0, d.busy() / up) if up > 0 else 0.0,
            "proofs_started": w.started,
        }
        workers.append(row | described[d.name])
    budget = engine.scheduler.budget
    return {
        "uptime_secs": up,
        "backend": executor.backend.name,
        "draining": engine.draining,
        "workers": workers,
        "queues": queues,
        "stages": {k: {"in_flight": max(0, stages.get(k, 0)), "capacity": v} for k, v in caps.items()},
        "srs": engine.srs.status(),
        "srs_totals": engine.srs.totals(),
        "srs_budgets": engine.srs.budgets(),
        "counters": {
            "total_completed": totals.get(JobState.COMPLETED, 0),
            "total_failed": totals.get(JobState.FAILED, 0),
            "total_cancelled": totals.get(JobState.CANCELLED, 0),
            "active_jobs": len(jobs),
            "queue_depth": sum(q["pending"] + q["batching"] for q in queues),
        },
        "memory": {
            "rss": rss(),
            "working_used": budget.used,
            "working_budget": budget.total,
            "working_peak": budget.peak,
        },
    } | ({"cluster": engine.cluster.status()} if engine.cluster is not None else {})


def attach_metrics(metrics: Metrics, engine: Engine) -> None:
    """Serve the engine's gauges from ``metrics``' registry (read from a snapshot at each scrape)."""
    metrics.registry.register(_GaugeCollector(engine))


class _GaugeCollector:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def describe(self) -> list[GaugeMetricFamily]:
        return []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        s = self.engine.snapshot()
        g = GaugeMetricFamily("cuzk_uptime_seconds", "Seconds since the engine started")
        g.add_metric([], s["uptime_secs"])
        yield g
        q = GaugeMetricFamily("cuzk_queue_depth", "Jobs queued (not started) per circuit", labels=["circuit"])
        ip = GaugeMetricFamily("cuzk_jobs_in_progress", "Jobs started, not finished, per circuit", labels=["circuit"])
        for c in s["queues"]:
            q.add_metric([c["circuit_id"]], c["pending"] + c["batching"])
            ip.add_metric([c["circuit_id"]], c["in_progress"])
        yield q
        yield ip
        st = GaugeMetricFamily("cuzk_stage_in_flight", "Partitions in each pipeline stage", labels=["stage"])
        for name, v in s["stages"].items():
            st.add_metric([name], v["in_flight"])
        yield st
        b = GaugeMetricFamily("cuzk_worker_busy_ratio", "Busy time / uptime of each prover worker", labels=["worker", "device"])
        for w in s["workers"]:
            b.add_metric([str(w["worker_id"]), w["device"]], w["busy_ratio"])
        yield b
        srs = GaugeMetricFamily("cuzk_srs_bytes", "SRS bytes per tier", labels=["tier"])
        for t, v in s["srs_totals"].items():
            srs.add_metric([t], v)
        yield srs
        mem = GaugeMetricFamily("cuzk_working_memory_bytes", "Working memory of partitions in flight", labels=["kind"])
        mem.add_metric(["used"], s["memory"]["working_used"])
        mem.add_metric(["budget"], s["memory"]["working_budget"])
        mem.add_metric(["rss"], s["memory"]["rss"])
        yield mem
        w = GaugeMetricFamily("cuzk_gpu_workers", "Prover workers")
        w.add_metric([], len(s["workers"]))
        yield w
        if "cluster" in s:
            yield from _cluster_gauges(s["cluster"])


def _cluster_gauges(c: dict[str, Any]) -> Iterator[GaugeMetricFamily]:
    """Cluster mode: this host's claims, and the cluster's hosts and queue as the journal sees them."""
    loc = c["local"]
    h = GaugeMetricFamily("cuzk_cluster_held_jobs", "Jobs this host holds claimed (leases it renews)")
    h.add_metric([], loc["held_jobs"])
    yield h
    for name, key, doc in (
        ("cuzk_cluster_claimed", "claimed_total", "Jobs this host claimed since it started"),
        ("cuzk_cluster_lost", "lost_total", "Jobs this host lost (lease expired, cancelled elsewhere) since it started"),
    ):
        g = GaugeMetricFamily(name, doc)
        g.add_metric([], loc[key])
        yield g
    up = GaugeMetricFamily("cuzk_cluster_journal_up", "1 while the shared journal answers this host")
    up.add_metric([], 0 if (loc["db_error"] or "error" in c) else 1)
    yield up
    if "error" in c:
        return
    hs = GaugeMetricFamily("cuzk_cluster_hosts", "Hosts of the cluster by state (up, draining, stopped, lost)", labels=["state"])
    counts: dict[str, int] = {}
    for x in c["hosts"]:
        counts[x["state"]] = counts.get(x["state"], 0) + 1
    for st in ("up", "draining", "stopped", "lost"):
        hs.add_metric([st], counts.get(st, 0))
    yield hs
    q = GaugeMetricFamily(
        "cuzk_cluster_queue_depth", "Jobs queued in the cluster per circuit and priority", labels=["circuit", "priority"]
    )
    r = GaugeMetricFamily("cuzk_cluster_jobs_running", "Jobs claimed by some host, per circuit", labels=["circuit"])
    for x in c["queues"]:
        for prio, n in x["queued_by_priority"].items():
            q.add_metric([x["circuit_id"], prio], n)
        r.add_metric([x["circuit_id"]], x.get("running", 0))
    yield q
    yield r
    t = GaugeMetricFamily("cuzk_cluster_throughput", "Jobs completed per second in the cluster (last minute)")
    t.add_metric([], c["throughput_per_s"])
    yield t
