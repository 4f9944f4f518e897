"""Prometheus metrics of one engine (its own registry, so several engines can live in one process).

Counters and histograms are updated as jobs move; gauges (queue depths, stage occupancy, SRS bytes,
busy ratios, uptime, memory) are read from the engine at scrape time by :mod:`.status`'s collector.
"""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)

disable_created_metrics()  # no *_created series: they double the exposition for nothing

PHASE_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900)


class Metrics:
    def __init__(self) -> None:
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
        self.deadlines = Counter(
            "cuzk_deadlines", "Finished jobs of circuits with a deadline, by outcome", ["circuit", "outcome"], registry=r
        )
        self.batches = Counter("cuzk_batches", "Batches released by the batch collector", ["reason"], registry=r)
        self.batch_size = Histogram(
            "cuzk_batch_size", "Jobs per released batch", buckets=(1, 2, 3, 4, 6, 8, 12, 16, 32), registry=r
        )
        self.srs_loads = Counter("cuzk_srs_loads", "SRS promotions", ["tier", "source"], registry=r)
        self.srs_evictions = Counter("cuzk_srs_evictions", "SRS evictions", ["tier", "reason"], registry=r)
        self.recovered = Counter("cuzk_jobs_recovered", "Unfinished jobs re-queued from the journal at start-up", registry=r)

    def text(self) -> str:
        return generate_latest(self.registry).decode()
