"""The proving engine behind the daemon: config, circuit registry, SRS tiers, journal, scheduler,
pipeline. ``cuzk.server`` puts it behind gRPC."""

from .config import Config, load_config
from .engine import Engine

__all__ = ["Config", "Engine", "load_config"]
