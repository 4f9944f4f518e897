"""The proving engine behind the daemon: config, circuit registry, SRS tiers, journal, scheduler,
pipeline, executor; :class:`Engine` is the facade over them (see :mod:`cuzk.engine.engine`).
``cuzk.server`` puts it behind gRPC."""

from .config import Config, load_config
from .engine import Engine
from .job import JobRecord, JobState

__all__ = ["Config", "Engine", "JobRecord", "JobState", "load_config"]
