"""Prometheus metrics of one engine (its own registry, so several engines can live in one process).

Counters and histograms are updated as jobs move; gauges (queue depths, stage occupancy, SRS bytes,
busy ratios, uptime, memory) are read from the engine at scrape time by a collector.
"""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily

disable_created_metrics()  # no *_created series: they double the exposition for nothing

PHASE_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900)


class Metrics:
    def __init__(self):
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.submitted = Counter("cuzk_jobs_submitted", "Jobs accepted", ["circuit"], registry=r)
        self.rejected = Counter("cuzk_jobs_rejected", "Submissions refused", ["reason"], registry=r)
        self.completed = Counter(
            "cuzk_proofs_completed", "Jobs completed (all partitions proved and verified)", ["circuit"], registry=r
        )
        self.failed = Counter("cuzk_proofs_failed", "Jobs failed", ["circuit"], registry=r)
        self.cancelled = Counter("cuzk_proofs_cancelled", "Jobs cancelled", ["circuit"], registry=r)
        self.partitions = Counter("cuzk_partitions_proved", "Partition proofs made", ["circuit", "device"], registry=r)
        self.phase = Histogram("cuzk_phase_seconds", "Per-job phase durations", ["phase"], buckets=PHASE_BUCKETS, registry=r)
        self.prover_phase = Histogram(
            "cuzk_prover_phase_seconds", "Prover phases per partition (timer dict)", ["phase"], buckets=PHASE_BUCKETS, registry=r
        )
        self.duration = Histogram(
            "cuzk_proof_duration_seconds",
            "Submit-to-result time of completed jobs",
            ["circuit"],
            buckets=PHASE_BUCKETS,
            registry=r,
        )
        self.batches = Counter("cuzk_batches", "Batches released by the batch collector", ["reason"], registry=r)
        self.batch_size = Histogram(
            "cuzk_batch_size", "Jobs per released batch", buckets=(1, 2, 3, 4, 6, 8, 12, 16, 32), registry=r
        )
        self.srs_loads = Counter("cuzk_srs_loads", "SRS promotions", ["tier", "source"], registry=r)
        self.srs_evictions = Counter("cuzk_srs_evictions", "SRS evictions", ["tier", "reason"], registry=r)
        self.recovered = Counter("cuzk_jobs_recovered", "Unfinished jobs re-queued from the journal at start-up", registry=r)

    def attach(self, engine) -> None:
        self.registry.register(_EngineCollector(engine))

    def text(self) -> str:
        return generate_latest(self.registry).decode()


class _EngineCollector:
    def __init__(self, engine):
        self.engine = engine

    def describe(self):
        return []

    def collect(self):
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
