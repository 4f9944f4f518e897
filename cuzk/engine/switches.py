"""Every optimization switch of cuzk, in one registry (issue 22, item 1).

A switch is an optimization that can be on or off, or has a few settings, each a real trade-off that a
machine may decide differently. Each is a key of the daemon's TOML (``gpu.*``: the GPU backend's
:class:`~cuzk.backends.gpu.config.GpuConfig`; ``synthesis.*``: :mod:`cuzk.circuit.cs`; ``gpus.*``: the
engine), settable with ``--set KEY=VALUE`` on ``cuzk daemon``, ``prove``, ``setup``, ``demo`` and
``config switches``; most also have an environment variable.

**Precedence** (highest first): the environment variable, ``--set``, the TOML file, the default. The
variables are overrides for benchmarks and debugging, applied last by the code that reads a switch
(``GpuConfig.from_env`` over the configured table; :func:`cuzk.circuit.cs.switch`), as before this
registry; the daemon logs a warning for every variable that overrides a configured value, and
``cuzk config switches`` shows where each value came from.

The registry records, per switch, the default, the allowed values, the variable, where and when the
default was measured (BENCHMARKS.md), and what it trades. :data:`NOT_SWITCHES` names the optimizations
the issue lists that are not switches here, and why; :data:`OTHER_VARIABLES` every other ``CUZK_*``
variable cuzk reads, and why it is not a switch (a test checks the source against both lists).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..backends.gpu import config as gpu_config
from ..backends.gpu.config import GpuConfig
from .config import Config, ConfigError, load_config


@dataclass(frozen=True)
class Switch:
    key: str  # the dotted TOML key, e.g. "gpu.b_g2"
    default: Any
    allowed: str  # the values it accepts, as its error messages say them
    env: str  # the environment variable that overrides it; "" = none
    seed: str  # the seed's name for the optimization (A1, A2, A4, B1, D4), or ""
    measured: str  # where and when the default was measured
    trades: str  # what it trades, one line
    doc: str  # what it does
    hidden: bool = False  # a test switch: listed and honoured only when CUZK_TEST_SWITCHES=1

    @property
    def section(self) -> str:
        return self.key.partition(".")[0]

    @property
    def name(self) -> str:
        return self.key.partition(".")[2]


# GPU switches: GpuConfig field -> (seed, measured, trades). Default, allowed values, variable and meaning
# come from the field itself. The H200 is the lent `nvidia-h200` (SXM, 132 SMs, 16 host cores).
_GPU: dict[str, tuple[str, str, str]] = {
    "b_g2": (
        "A4",
        "H200, 2026-12-02 (device runs s2-5/s2-6), BENCHMARKS 4: porep 2^24 interleaved, 3 runs each: gpu 0.520 s, "
        "cpu 3.680 s; dense circuits not run on the CPU",
        "a G2 MSM on the device vs on CPU threads beside the GPU work (those threads hold the GIL that drives the GPU)",
    ),
    "pinned": (
        "B1",
        "H200, 2026-12-02, BENCHMARKS 2 (witness upload): 2^26 248 vs 283 ms pageable; equal in 2c (2026-12-03)",
        "a page-locked staging buffer the size of the largest witness, held per device, vs pageable uploads",
    ),
    "upload_copy": (
        "",
        "H200, 2026-12-03 (runs s1-1..s2-3), BENCHMARKS 2c: witness upload 2^26 102 vs 272 ms, 2^24 24 vs 72 ms",
        "every host core for the copy into the staging buffer (taken from synthesis) vs one thread",
    ),
    "ntt_batch": (
        "",
        "H200, 2026-12-03, BENCHMARKS 2c: a, b, c at 2^16 0.236 vs 0.389 ms; equal from 2^20 up",
        "one launch per pass for a, b and c (launch overhead at small domains) vs three NTTs one by one",
    ),
    "ntt_radix": (
        "",
        "H200, 2026-12-03, BENCHMARKS 2c: NTT 2^26 35.8 vs 37.1 ms, 2^27 72.6 vs 76.9; radix 2 ahead at 2^24 alone (+3%)",
        "two butterfly stages per barrier (fewer barriers, more registers per thread) vs one",
    ),
    "ntt_plan": (
        "",
        "H200, 2026-12-04 (runs s5-1..s5-3), BENCHMARKS 2f: 2^24 greedy 9.61 vs balanced 8.43 ms; 2^27 72.5 vs 73.7",
        "passes of even size (balanced) vs as many stages per pass as fit (greedy); auto picks per size",
    ),
    "ntt_fused": (
        "",
        "not measured: built 2026-12-06 (fourth session) while no device was lent; NOTES predicts iNTT and coset "
        "iNTT 2^24 -20% on the H100",
        "one pass fewer per iNTT, coset iNTT and coset NTT and a coalesced bit reversal vs the scaling pass and "
        "the scattered swap",
    ),
    "msm_acc": (
        "",
        "H200, 2026-12-02 (runs s2-2..s2-5), BENCHMARKS 2b: G1 2^26 1278 -> 1113 ms, G2 2^24 1308 -> 1080 ms",
        "S entries per thread across bucket boundaries (even load, pieces to combine) vs one thread per bucket item",
    ),
    "msm_ones": (
        "",
        "H200, 2026-12-03, BENCHMARKS 2c: the 0/1 sum at 2^26 66.8 -> 41.5 ms (compact)",
        "a compaction pass and an index list in device memory vs a masked loop over every scalar",
    ),
    "msm_table": (
        "",
        "H100, 2026-12-06 (runs s11-1..s11-4), BENCHMARKS 12b/14: G1 MSM 2^22/2^24/2^26 -18/-19/-9%; cuzk tune: porep 2^24 "
        "msm_h 222 -> 180 ms, gpu_compute -12% (faster); dense 2^22 msm_h -17%, gpu_compute -2.2% (noise)",
        "GPU memory beside the SRS (up to ~12 copies of the H bases) and a table build at key load vs more windows and bucket reductions",
    ),
    "msm_window": (
        "D4",
        "H200, 2026-12-02 (run s2-5), BENCHMARKS 2b: per MSM G1 2^26 986.7 vs 22 fixed 1081.3 ms; G2 2^24 1073.7 vs 1229.2",
        "a window per MSM from a cost model (buckets grow as 2^c) vs one window for every MSM",
    ),
    "msm_even_s": (
        "",
        "H100, 2026-12-06 (runs s12-2, s11-4), BENCHMARKS 14: 64 vs 0 (the fill rule: fewer below ~2^19 threads) "
        "porep 2^24 gpu_compute 297.2 vs 316.4 ms (faster: the 0/1 MSMs), dense 2^22 489.4 vs 488.8 (noise); 32 slower on dense",
        "longer runs per thread (fewer pieces to combine) vs enough threads to fill the GPU",
    ),
    "acc_minb": (
        "",
        "H200, 2026-12-04 (run s5-3), BENCHMARKS 2f: cap 4 G1 2^26 756.1 vs 768.1 ms but G2 +3.5% (one cap then)",
        "more resident warps per SM vs register spills; compile time (a cubin per value)",
    ),
    "acc2_minb": (
        "",
        "H200, 2026-12-04 (run s5-3), BENCHMARKS 2f: 2 (uncapped) G2 2^24 735.7 -> 662.1 ms",
        "more resident warps per SM vs register spills in the G2 hot loop; compile time (a cubin per value)",
    ),
    "ntt_minb": (
        "",
        "H200, 2026-12-04 (run s5-3), BENCHMARKS 2f: cap 3 NTT 2^26 35.65 -> 33.35 ms; cap 4 34.1",
        "more resident warps per SM vs register spills; compile time (a cubin per value)",
    ),
}

# synthesis switches (cuzk.circuit.cs.SWITCHES): name -> (seed, measured, trades, doc)
_SYNTHESIS: dict[str, tuple[str, str, str, str]] = {
    "lc_storage": (
        "A1",
        "2-core development machine, 2026-12-05, BENCHMARKS 6b: recording SHA-256 2^18 3.4 vs 9.3 s, Poseidon 2^18 "
        "1.9 vs 12.9 s; 2.3-5.6x less memory",
        "flat arrays merged in blocks vs a dict per row (the seed's small-vector indexer family)",
        "how a Python circuit's recording holds its linear combinations",
    ),
    "witness_buffer": (
        "A2",
        "2-core development machine, 2026-12-05, BENCHMARKS 6b: equal within the spread (SHA-256 2^20 713 vs "
        "712 ms, Poseidon 2^20 293 vs 318 ms)",
        "the whole witness allocated at once (an over-long witness refused at once) vs buffers grown as they fill",
        "a Python circuit's witness buffers, pre-sized from the recorded layout or growing",
    ),
}

# engine switches (keys of the engine's SCHEMA): key -> (seed, measured, trades)
_ENGINE: dict[str, tuple[str, str, str]] = {
    "gpus.pinned_witness": (
        "B1",
        "H200, 2026-12-03 (runs s2-6/s2-7), BENCHMARKS 4b: porep 130M 2.929 -> 2.822 s, upload 181 -> 71 ms; the "
        "default (off) is not a measured verdict",
        "page-locked host memory per witness in flight (the seed's pinning cost 5.7 s on a NUMA host) vs an upload "
        "copy on the GPU's critical path",
    ),
}

# hidden test switches (the daemon config's [test] section; cuzk.groth16.prover.set_test_switches): a real
# code path in the prover, honoured only when TEST_ENV=1, so `cuzk tune` can be tested on a switch known to
# be slow and one known to change nothing. key -> (measured, trades)
TEST_ENV = "CUZK_TEST_SWITCHES"
_TEST: dict[str, tuple[str, str]] = {
    "test.delay_ms": (
        "not an optimization: a deliberately slow configuration for tests (the prover sleeps delay_ms per proof)",
        "nothing: costs delay_ms per proof when CUZK_TEST_SWITCHES=1",
    ),
    "test.noop": (
        "not an optimization: the no-op reference for tests (read by the prover, changes nothing)",
        "nothing: changes nothing, so any measured difference is noise",
    ),
}

# Optimizations the issue names that are not switches here, and why (no key: nothing to flip).
NOT_SWITCHES: dict[str, str] = {
    "pinned a/b/c buffers (seed B1 as such)": "a, b and c never exist on the host: the prover computes them on the "
    "device from the uploaded witness (phase spmv); the host buffer that can be pinned is the witness: gpu.pinned "
    "and gpus.pinned_witness",
    "pre-sized device buffers (seed A2 on the GPU)": "device memory comes from CuPy's memory pool, reused by "
    "construction: there is no fresh-allocation path to switch to; the host side is synthesis.witness_buffer and "
    "the reused staging buffer of gpu.pinned",
    "out-of-line Fq multiply (CUZK_FQ_OUTLINE)": "a #define fixed in msm.cu's source (the inlined form is 1.3x "
    "slower on G1 and 1.4x on G2, BENCHMARKS 2e; a by-reference form faulted); other modules can take it "
    "through gpu.module_defines, never measured there",
}

# Every other CUZK_* variable cuzk (outside cuzk/bench) reads, and why it is not an optimization switch.
OTHER_VARIABLES: dict[str, str] = {
    TEST_ENV: "tests: reveals and honours the hidden test switches ([test] delay_ms and noop) of `cuzk tune`'s tests",
    "CUZK_SYNC_LAUNCH": "debugging (gpu.sync_launch): waits for every kernel so a fault names it; always slower",
    "CUZK_MSM_PROFILE": "benchmark instrumentation (gpu.msm_profile): per-kernel CUDA events",
    "CUZK_GPU_POISON": "tests (gpu.poison): fills scratch outputs with 0xFF so unwritten values show",
    "CUZK_KERNEL_DEFINES": "free-form #defines for experiments (gpu.kernel_defines), not one optimization",
    "CUZK_KERNEL_DEFINES_": "per-module form of CUZK_KERNEL_DEFINES (CUZK_KERNEL_DEFINES_<MODULE>, gpu.module_defines)",
    "CUZK_PTXAS_O": "not an environment variable: a build #define (given through gpu.module_defines) that build.py "
    "also turns into ptxas's optimization level for that module",
    "CUZK_CACHE_DIR": "where compiled kernels, recordings and wasm are cached",
    "CUZK_CPU_THREADS": "a resource (cpu.threads): the CPU MSM pool's size, not an on/off choice",
    "CUZK_COMMP_BACKEND": "a fallback (hashlib) for machines where the commitment kernels cannot build; tests",
    "CUZK_COMMP_THREADS": "a resource: threads of the commitment kernels",
    "CUZK_STATE_DIR": "where the daemon keeps its state (daemon.state_dir)",
    "CUZK_TIMELINE": "observability: timeline lines on stderr (logging.timeline)",
    "CUZK_TIMING": "observability: per-phase timing lines on stderr",
    "CUZK_TOKENS_FILE": "security: the bearer-token file of `cuzk token`",
    "CUZK_TOKEN": "client: the bearer token to send",
    "CUZK_CA": "client: the CA bundle for TLS",
    "CUZK_ADDR": "client: the daemon's address",
}


def _gpu_switch(name: str, seed: str, measured: str, trades: str) -> Switch:
    f = next(f for f in dataclasses.fields(GpuConfig) if f.name == name)
    return Switch(
        f"gpu.{name}", f.default, gpu_config.expected(name), f.metadata["env"], seed, measured, trades, f.metadata["doc"]
    )


def _build() -> list[Switch]:
    from ..circuit.cs import SWITCH_ENV, SWITCHES
    from .config import SCHEMA

    out = [_gpu_switch(name, *row) for name, row in _GPU.items()]
    for name, (seed, measured, trades, doc) in _SYNTHESIS.items():
        choices = SWITCHES[name]
        out.append(Switch(f"synthesis.{name}", choices[0], " or ".join(choices), SWITCH_ENV[name], seed, measured, trades, doc))
    for key, (seed, measured, trades) in _ENGINE.items():
        s, _, k = key.partition(".")
        default, kind, doc = next((d, kind, doc) for sec, name, d, kind, doc in SCHEMA if (sec, name) == (s, k))
        assert kind == "bool", key
        out.append(Switch(key, default, "true or false", "", seed, measured, trades, doc))
    for key, (measured, trades) in _TEST.items():
        s, _, k = key.partition(".")
        default, kind, doc = next((d, kind, doc) for sec, name, d, kind, doc in SCHEMA if (sec, name) == (s, k))
        allowed = {"int": "an integer >= 0 (milliseconds)", "bool": "true or false"}[kind]
        out.append(Switch(key, default, allowed, "", "", measured, trades, doc, hidden=True))
    return out


SWITCHES: list[Switch] = _build()
BY_KEY: dict[str, Switch] = {s.key: s for s in SWITCHES}


def test_switches_on(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the hidden test switches are shown and honoured (TEST_ENV=1)."""
    return (os.environ if environ is None else environ).get(TEST_ENV, "") == "1"


def visible(environ: Mapping[str, str] | None = None) -> list[Switch]:
    """The switches `cuzk config switches` lists: every one, the hidden test switches only under TEST_ENV=1."""
    on = test_switches_on(environ)
    return [sw for sw in SWITCHES if on or not sw.hidden]


# values to try for the switches whose allowed values are a range (`cuzk tune` flips to each)
_RANGE_CANDIDATES: dict[str, tuple[Any, ...]] = {
    "window": (0, 16, 22),  # per MSM, and the fixed windows BENCHMARKS 2b compared
    "count": (0, 32, 64),
    "cap": (0, 2, 3, 4),
    "int": (0, 100),  # test.delay_ms: none, or a clearly slow 100 ms
}


def candidates(sw: Switch) -> list[Any]:
    """The values of ``sw`` worth measuring: every allowed value for a choice or a bool, a few for a range."""
    from ..circuit.cs import SWITCHES as SYNTH_CHOICES

    if sw.section == "synthesis":
        return list(SYNTH_CHOICES[sw.name])
    if isinstance(sw.default, bool):
        return [False, True]
    if sw.section == "gpu":
        f = next(f for f in dataclasses.fields(GpuConfig) if f.name == sw.name)
        if f.metadata["choices"]:
            return list(f.metadata["choices"])
        vals = list(_RANGE_CANDIDATES[f.metadata["kind"]])
    else:
        vals = list(_RANGE_CANDIDATES["int"])
    return vals if sw.default in vals else [sw.default, *vals]


@dataclass(frozen=True)
class Setting:
    """A switch's value in a configuration: ``configured`` (TOML or --set, else the default) and ``value``
    (the one in effect: the environment's override when its variable is set)."""

    switch: Switch
    configured: Any
    value: Any
    source: str  # "default", "config" (the TOML file), "--set", or "env"


def resolve(cfg: Config | None = None, environ: Mapping[str, str] | None = None) -> list[Setting]:
    """Every switch's setting under ``cfg`` (default: the defaults) and the environment; ConfigError (one
    line naming the key or variable and the allowed values) for a bad value."""
    from ..circuit.cs import SWITCH_ENV
    from ..circuit.cs import SWITCHES as SYNTH_CHOICES

    cfg = cfg or load_config()
    env = os.environ if environ is None else environ
    try:
        configured = GpuConfig.from_mapping(cfg.gpu)
        effective = GpuConfig.from_env(configured, env)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    out = []
    for sw in visible(env):
        section, name = sw.section, sw.name
        source = {"config": "config", "override": "--set"}.get(cfg.sources.get(sw.key, ""), "default")
        if section == "gpu":
            conf, value = getattr(configured, name), getattr(effective, name)
        elif section == "synthesis":
            conf = value = getattr(cfg.synthesis, name)
            raw = env.get(SWITCH_ENV[name], "")
            if raw:
                if raw not in SYNTH_CHOICES[name]:
                    raise ConfigError(f"{SWITCH_ENV[name]} = {raw!r}: expected {sw.allowed}")
                value = raw
        else:
            conf = value = getattr(getattr(cfg, section), name)
        if sw.env and env.get(sw.env, ""):
            source = "env"
        out.append(Setting(sw, conf, value, source))
    return out


def apply(cfg: Config, environ: Mapping[str, str] | None = None) -> list[Setting]:
    """Make ``cfg``'s switches the process's: the GPU backend's config (:func:`gpu_config.configure`: what
    the kernels and their #defines read) and the synthesis switches, the environment over both. Returns
    the settings (:func:`resolve`); ConfigError for a bad value, before anything is changed."""
    from ..circuit.cs import configure_switches
    from ..groth16.prover import set_test_switches

    settings = resolve(cfg, environ)
    env = os.environ if environ is None else environ
    gpu_config.configure(GpuConfig.from_env(GpuConfig.from_mapping(cfg.gpu), env))
    configure_switches({name: getattr(cfg.synthesis, name) for name in _SYNTHESIS})
    if test_switches_on(env):
        set_test_switches(cfg.test.delay_ms, cfg.test.noop)
    else:
        set_test_switches()
    return settings


def env_overrides(settings: list[Setting]) -> list[Setting]:
    """The settings whose environment variable changed the configured value (the daemon warns of them)."""
    return [s for s in settings if s.source == "env" and s.value != s.configured]


def as_json(settings: list[Setting]) -> dict[str, Any]:
    """``cuzk config switches --json``."""

    def plain(v: Any) -> Any:
        return list(v) if isinstance(v, tuple) else v

    return {
        "precedence": ["env", "--set", "config", "default"],
        "switches": [
            {
                "key": s.switch.key,
                "value": plain(s.value),
                "source": s.source,
                "configured": plain(s.configured),
                "default": plain(s.switch.default),
                "allowed": s.switch.allowed,
                "env": s.switch.env,
                "seed": s.switch.seed,
                "measured": s.switch.measured,
                "trades": s.switch.trades,
                "doc": s.switch.doc,
            }
            for s in settings
        ],
        "not_switches": NOT_SWITCHES,
    }


def _show(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return f'"{v}"' if isinstance(v, str) else str(v)


def as_text(settings: list[Setting]) -> str:
    """``cuzk config switches``: one block per switch."""
    lines = ["Optimization switches (precedence: environment variable > --set > TOML file > default)", ""]
    for s in settings:
        sw = s.switch
        where = {"default": "the default", "config": "the TOML file", "env": sw.env}.get(s.source, s.source)
        origin = f"from {where}" + ("" if s.source == "default" else f"; default {_show(sw.default)}")
        seed = f"  [seed {sw.seed}]" if sw.seed else ""
        lines.append(f"{sw.key} = {_show(s.value)}   ({origin}){seed}")
        lines.append(f"    {sw.doc}")
        lines.append(f"    allowed: {sw.allowed}; variable: {sw.env or '(none)'}")
        lines.append(f"    measured: {sw.measured}")
        lines.append(f"    trades: {sw.trades}")
    lines += ["", "Not switches here:"]
    lines += [f"  {what}: {why}" for what, why in NOT_SWITCHES.items()]
    return "\n".join(lines) + "\n"


__all__ = [
    "BY_KEY",
    "NOT_SWITCHES",
    "OTHER_VARIABLES",
    "SWITCHES",
    "TEST_ENV",
    "Setting",
    "Switch",
    "apply",
    "as_json",
    "as_text",
    "candidates",
    "env_overrides",
    "resolve",
    "test_switches_on",
    "visible",
]
