"""``cuzk tune`` (also ``cuzk-bench ablate``): every optimization switch measured alone, on this machine.

    cuzk tune --python pkg.mod:Class [--circuit-params JSON] ...   a Python circuit (dev key made here)
    cuzk tune --dev SHAPE:LOG ...                                   a synthetic circuit (hash:12, dense:14, ...)
    cuzk tune --config F --circuit ID=INPUT[,INPUT...] ...          registered circuits of a daemon config
          [--switch KEY[=VALUE]]... [--runs 5] [--warmup 1] [--set KEY=VALUE]... [--backend cpu|gpu]
          [--threshold 0.03] [--min-ms 1.0] [--budget SECONDS] [--json F] [--markdown F] [--toml F]

(``--python``, ``--dev`` and ``--circuit`` may be repeated and mixed.) The baseline configuration (the
config file, if any, with ``--set``) runs in one daemon process; for each switch value tried, a second
daemon runs the configuration with only that key changed (``--set KEY=VALUE``: kernel #defines and the
synthesis switches are process-wide, so each configuration has its own process). After ``--warmup``
proofs on each daemon (SRS load, kernel compile, numba), ``--runs`` proofs per circuit alternate
baseline, flipped, baseline, flipped ... one at a time; then the flipped daemon stops and the next
switch starts beside the same baseline daemon (all of them children of this process).

Phases: the daemon's job timings (``total`` = submit to proof, ``queue_wait``, ``srs_load``,
``synthesis``, ``gpu_compute`` = the prover's compute on either backend, ``finalize``) and every phase
the prover reports (``prover.*``: upload, spmv, ntt_h, msm, verify, ...); a phase one side lacks counts 0.

Switches tried by default: every switch of :mod:`cuzk.engine.switches` that acts on the backend the
baseline daemon runs (``gpu.*`` and ``gpus.pinned_witness``: GPU backend only) and on the circuits
(``synthesis.*``: Python circuits only), except those whose environment variable is set (it would
override every configuration); each to every value :func:`cuzk.engine.switches.candidates` lists other
than the baseline's. Skipped switches are printed with the reason. ``--switch KEY=VALUE``: only the
named ones (a switch the backend ignores is measured anyway, with a note). The hidden test switches
(``test.*``) need CUZK_TEST_SWITCHES=1 and are never tried by default.

Verdicts. For each phase, :func:`cuzk.bench.compare.compare` (the noise rule of ``cuzk-bench
compare``): the noise is the largest of the two sides' run-to-run bands (p10-p90 with 5 runs or more,
max - min below), ``--threshold`` x the baseline median and ``--min-ms``; a phase is *slower* or
*faster* beyond it, else *noise*. A value tried is judged on one phase (:func:`judged_phase`:
``gpu_compute`` for the GPU kernels' switches, ``total`` for the others): *slower* if it is slower on any
circuit, *faster* if faster on at least one and slower on none, else *noise*. A switch is then:

* ``flip to V (faster by X%)`` if a value is faster (the fastest by median total ratio; X = 1 - ratio);
* ``keep default`` if no value is faster and one is slower (the baseline's value stays; "default" is the
  baseline configuration's value, the registry default unless the config or --set changed it);
* ``noise`` if every value is within the noise (the baseline's value stays; the switch does not matter
  here at this size).

Output: a table per switch and phase (median and spread of each side, ratio, noise, verdict), the
verdicts, and the winning configuration as a TOML fragment of ``[gpu]`` / ``[synthesis]`` / ``[gpus]``
keys, each with a comment giving its measured ratio (``--toml F`` writes it; ``cuzk daemon --config F``
loads it, or paste its tables into a config). ``--json F`` and ``--markdown F`` (``-`` = stdout) for
BENCHMARKS.md. A progress bar (tqdm) with the time left, on a terminal.

What it cannot see: ``synthesis.lc_storage`` acts on the recording, made once per circuit topology and
cached (``$CUZK_CACHE_DIR``), never per proof; ``cuzk-bench synth --record --lc-storage`` measures it.
"""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import CuzkError
from ..cli.main import EXIT_OK
from ..engine.config import toml_value
from ..server.client import DaemonProcess
from . import compare as cmp

LC_NOTE = (
    "acts on the recording only (once per circuit topology, cached): per-proof phases cannot see it; "
    "`cuzk-bench synth --record --lc-storage dicts` measures it"
)


@dataclass
class Circuit:
    id: str
    python: bool  # a Python circuit (the synthesis switches act on it)
    submit: dict[str, Any]  # Client.prove keyword arguments: witness / inputs / partitions
    spec: dict[str, Any] | None = None  # a [[circuits]] table to write (None: in the user's config)


@dataclass
class Tried:
    """One switch value tried against the baseline."""

    key: str
    value: Any
    baseline: Any
    note: str = ""
    base_runs: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # circuit -> phase -> ms per run
    runs: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    rows: dict[str, list[cmp.Row]] = field(default_factory=dict)  # circuit -> compare rows
    bands: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)  # circuit -> phase -> (base, flip)
    verdict: str = ""  # slower | faster | noise (on the judged phase, over the circuits)
    phase: str = "total"  # the judged phase (judged_phase)
    ratio: float = 1.0  # the judged phase's, geometric mean over the circuits


@dataclass
class Result:
    key: str
    baseline: Any
    tried: list[Tried]
    verdict: str  # "keep default" | "flip to V (faster by X%)" | "noise"
    winner: Any
    ratio: float  # the winner's total ratio (1.0 when the baseline stays: the best value tried otherwise)


def _show(v: Any) -> str:
    return toml_value(v).strip('"')


# -- circuits ----------------------------------------------------------------------------------------


def _python_circuit(spec: str, params: str, work: Path, n: int) -> Circuit:
    from ..circuit.circuit import CircuitSpec, record
    from ..groth16 import setup, zkey

    cs = CircuitSpec.parse(spec, params or "")
    circuit = cs.load()
    rec = record(circuit)
    key = work / f"py{n}.zkey"
    zkey.write_zkey(key, setup.setup(rec.pce, quiet=True))
    parts = int(getattr(circuit, "partitions", 1) or 1)
    inputs = circuit.sample_inputs(1) if parts == 1 else [circuit.sample_inputs(1 + i) for i in range(parts)]
    table: dict[str, Any] = {"id": f"py{n}", "python": spec, "zkey": str(key)}
    if params:
        table["python_params"] = json.loads(params)
    return Circuit(f"py{n}", True, {"inputs": inputs}, table)


def _dev_circuit(spec: str, work: Path, n: int, backend: str = "") -> Circuit:
    from ..engine.devcircuit import make_dev_circuit
    from ..r1cs import synthetic

    shape, _, size = spec.partition(":")
    if shape not in synthetic.SHAPES:
        raise CuzkError(f"--dev {spec}: unknown shape {shape!r}; one of {', '.join(synthetic.SHAPES)}")
    try:
        log_n = int(size)
    except ValueError:
        raise CuzkError(f"--dev {spec}: expected SHAPE:LOG2, e.g. hash:12") from None
    # porep-shaped circuits get Filecoin's (bellperson) key style, as the GPU benchmarks prove them; on the
    # GPU backend the key is made on the GPU (a 2^24 CPU setup would take longer than the whole tune)
    style = "bellperson" if shape == "porep" else "snarkjs"
    dc = make_dev_circuit(work / f"dev{n}", shape, log_n, style=style, setup_on="gpu" if backend == "gpu" else "cpu")
    return Circuit(f"dev{n}-{shape}{log_n}", False, {"witness": dc.witness(1)}, dc.spec(f"dev{n}-{shape}{log_n}"))


def _backend_of(cfg) -> str:
    from ..backends import gpu_available

    b = cfg.gpus.backend
    return b if b != "auto" else ("gpu" if gpu_available() else "cpu")


def _config_circuit(item: str, cfg) -> Circuit:
    from ..cli.main import _inputs

    cid, eq, files = item.partition("=")
    if not eq or not files:
        raise CuzkError(f"--circuit {item!r}: expected ID=INPUT[,INPUT...] (a .wtns or inputs .json per partition)")
    cc = next((c for c in cfg.circuits if c.id == cid), None)
    if cc is None:
        raise CuzkError(f"--circuit {cid}: not a circuit of {cfg.path} ({', '.join(c.id for c in cfg.circuits) or 'none'})")
    return Circuit(cid, bool(cc.python), {"partitions": _inputs(files.split(","))})


def _write_config(path: Path, user_config: str, circuits: list[Circuit]) -> str:
    """The daemons' config: the user's file, or a generated one with the dev circuits' tables."""
    tables = [c.spec for c in circuits if c.spec is not None]
    if not tables:
        return user_config
    lines = [] if not user_config else [Path(user_config).read_text(), ""]
    if not user_config:
        lines += ["[synthesis]", "partition_workers = 1", ""]
    for t in tables:
        lines.append("[[circuits]]")
        for k, v in t.items():
            if isinstance(v, dict):
                lines.append(f"{k} = {{ " + ", ".join(f"{kk} = {toml_value(vv)}" for kk, vv in v.items()) + " }")
            else:
                lines.append(f"{k} = {toml_value(v)}")
        lines.append("")
    path.write_text("\n".join(lines))
    return str(path)


# -- which switches -----------------------------------------------------------------------------------


def plan(a, backend: str, circuits: list[Circuit], settings, environ=None) -> tuple[list[Tried], dict[str, str]]:
    """The values to try (each against the baseline) and the switches skipped, with the reason."""
    from ..engine import switches
    from ..engine.config import parse_override

    env = os.environ if environ is None else environ
    base = {s.switch.key: s.value for s in settings}
    base.update({sw.key: sw.default for sw in switches.SWITCHES if sw.key not in base})  # hidden, when off
    any_python = any(c.python for c in circuits)

    def not_applicable(sw) -> str:
        if sw.section == "gpu" and backend != "gpu":
            return f"the {backend} backend reads no gpu.* key"
        if sw.key == "gpus.pinned_witness" and backend != "gpu":
            return "pins witnesses for the GPU upload: nothing to upload on the CPU backend"
        if sw.section == "synthesis" and not any_python:
            return "no Python circuit: the witness comes with the request, nothing is synthesized"
        return ""

    tried: list[Tried] = []
    skipped: dict[str, str] = {}
    if a.switch:
        for item in a.switch:
            if "=" in item:
                key, value = parse_override(item)
                values = [value]
            else:
                key, value = item.strip(), None
            sw = switches.BY_KEY.get(key)
            if sw is None:
                raise CuzkError(f"--switch {key}: not an optimization switch (`cuzk config switches` lists them)")
            if sw.hidden and not switches.test_switches_on(env):
                raise CuzkError(f"--switch {key}: a hidden test switch; set {switches.TEST_ENV}=1 to use it")
            if sw.env and env.get(sw.env, ""):
                raise CuzkError(f"--switch {key}: {sw.env} is set in the environment and would override every configuration")
            if value is None:
                values = [v for v in switches.candidates(sw) if v != base[key]]
            elif value == base[key]:
                raise CuzkError(f"--switch {item}: that is the baseline's value; name another")
            note = not_applicable(sw)
            for v in values:
                tried.append(Tried(key, v, base[key], f"measured anyway: {note}" if note else ""))
        return tried, skipped
    for sw in switches.SWITCHES:
        if sw.hidden:
            continue
        why = not_applicable(sw)
        if not why and sw.env and env.get(sw.env, ""):
            why = f"{sw.env} is set in the environment: it would override every configuration"
        if why:
            skipped[sw.key] = why
            continue
        note = LC_NOTE if sw.key == "synthesis.lc_storage" else ""
        tried += [Tried(sw.key, v, base[sw.key], note) for v in switches.candidates(sw) if v != base[sw.key]]
    return tried, skipped


# -- measuring ----------------------------------------------------------------------------------------


class _Daemon(DaemonProcess):
    """One ``cuzk daemon`` child with its own state folder and socket."""

    SECTION_KEYS = ("daemon.http_listen", "journal.url", "journal.path", "logging.file")

    def __init__(self, work: Path, name: str, config: str, sets: list[str]):
        from ..engine.config import SCHEMA

        state = work / name
        state.mkdir()
        known = {f"{s}.{k}" for s, k, *_ in SCHEMA}
        own = [f"daemon.state_dir={toml_value(str(state))}", f"daemon.listen={toml_value(f'unix://{state}/d.sock')}"]
        # one WARM cache for every daemon: a key is parsed into the device layout once, not once per
        # configuration (a 2^24 key: tens of seconds per daemon start otherwise)
        own.append(f"srs.param_cache={toml_value(str(work / 'srs'))}")
        own += [f'{k}=""' for k in self.SECTION_KEYS if k in known]  # no shared port, journal or log file
        args: list[str] = []
        for item in [*own, *sets]:
            args += ["--set", item]
        self.stderr = state / "stderr.txt"
        super().__init__(config, f"unix://{state}/d.sock", self.stderr, args=args)

    def prove(self, circ: Circuit) -> dict[str, float]:
        res = self.c.prove(circ.id, request_id=str(uuid.uuid4()), check=False, **circ.submit)
        if not res.ok:
            raise CuzkError(f"{circ.id}: proof {res.status}: {res.error} (daemon log: {self.stderr})")
        out = {k[: -len("_ms")]: float(v) for k, v in res.timings.items() if k.endswith("_ms")}
        out = {"total": out.pop("total", 0.0), **out}
        out.update({f"prover.{k}": float(v) for k, v in res.phases.items()})
        return out

    def stop(self, timeout: float = 60.0) -> None:
        try:
            super().stop(timeout)
        except subprocess.TimeoutExpired:  # a daemon that does not drain must not hold up the report
            self.p.kill()
            self.p.wait(10)
            self.c.close()


STAGES = ("total", "queue_wait", "srs_load", "synthesis", "gpu_compute", "finalize")


def _add(acc: dict[str, list[float]], t: dict[str, float], n_before: int) -> None:
    for k in [*t, *(k for k in acc if k not in t)]:
        acc.setdefault(k, [0.0] * n_before).append(t.get(k, 0.0))  # a phase one run lacks: 0 ms


def _order(names: list[str]) -> list[str]:
    """The job's stages first, in their order, then the prover's phases as it reported them."""
    return [s for s in STAGES if s in names] + [n for n in names if n not in STAGES]


def measure(a, config: str, base_sets: list[str], circuits: list[Circuit], plan_fn, work: Path, bar=None, skipped=None):
    """Start the baseline daemon; ``plan_fn(backend)`` -> the values to try; for each, a daemon beside the
    baseline's, both warmed, then A B A B ... Returns (backend, the values measured). With ``a.budget``
    (seconds), a value whose turn comes when the time left is under the mean time of the values measured
    so far is not started: it goes to ``skipped`` as not reached (the order is the registry's)."""
    t0 = time.perf_counter()
    base = _Daemon(work, "base", config, base_sets)
    try:
        backend = str(base.c.status().get("backend", ""))
        tried = plan_fn(backend)  # now that the backend is known
        for c in circuits:
            for _ in range(a.warmup):
                base.prove(c)
        if bar is not None:
            bar.reset(total=len(tried) * len(circuits) * (a.warmup + 2 * a.runs))
        budget = getattr(a, "budget", 0.0) or 0.0
        t_first = time.perf_counter()
        for i, t in enumerate(tried):
            mean = (time.perf_counter() - t_first) / i if i else 0.0
            if budget and time.perf_counter() - t0 + mean > budget:
                for rest in tried[i:]:
                    if skipped is not None:
                        prev = skipped.get(rest.key, "")
                        what = f"{_show(rest.value)} not reached within --budget {budget:g} s"
                        skipped[rest.key] = f"{prev}; {what}" if prev else what
                return backend, tried[:i]
            if bar is not None:
                bar.set_description(f"{t.key}={_show(t.value)}")
            flip = _Daemon(work, f"s{i}", config, [*base_sets, f"{t.key}={toml_value(t.value)}"])
            try:
                for c in circuits:
                    for _ in range(a.warmup):
                        flip.prove(c)
                        if bar is not None:
                            bar.update(1)
                for r in range(a.runs):
                    for c in circuits:  # A B A B ...
                        _add(t.base_runs.setdefault(c.id, {}), base.prove(c), r)
                        _add(t.runs.setdefault(c.id, {}), flip.prove(c), r)
                        if bar is not None:
                            bar.update(2)
            finally:
                flip.stop()
        return backend, tried
    finally:
        base.stop()


# -- verdicts -----------------------------------------------------------------------------------------


def judged_phase(key: str) -> str:
    """The phase a value of switch ``key`` is judged on: ``gpu_compute`` (the prover's own time) for the
    GPU backend's kernel switches, ``total`` for the rest. A GPU switch acts only inside the prover, and
    the daemon's other stages carry spreads of their own (on the device, the queue wait of a proof whose
    0.5 GB witness arrives by RPC spread by 130 ms against the prover's 4 ms): judged on ``total`` they
    hid a 12% gain (BENCHMARKS 14). ``gpu.b_g2`` and ``gpus.pinned_witness`` move work between the prover
    and other threads, so they are judged on ``total``."""
    if key.startswith("gpu.") and key not in ("gpu.b_g2",):
        return "gpu_compute"
    return "total"


def judge(tried: list[Tried], threshold: float, min_ms: float) -> list[Result]:
    for t in tried:
        t.phase = judged_phase(t.key)
        ratios, verdicts = [], []
        for cid, base in t.base_runs.items():
            flip = t.runs[cid]
            names = _order(list(base) + [k for k in flip if k not in base])
            bp = [cmp.phase_of_runs(n, base[n] if n in base else [0.0] * len(flip[n])) for n in names]
            fp = [cmp.phase_of_runs(n, flip[n] if n in flip else [0.0] * len(base[n])) for n in names]
            rows = cmp.compare(bp, fp, threshold, min_ms)
            t.rows[cid] = rows
            t.bands[cid] = {b.name: (b.band, f.band) for b, f in zip(bp, fp)}
            total = next((r for r in rows if r.phase == t.phase), None) or next(r for r in rows if r.phase == "total")
            ratios.append(total.ratio)
            verdicts.append(total.verdict)
        t.ratio = math.exp(statistics.fmean(math.log(r) for r in ratios)) if ratios else 1.0
        t.verdict = "slower" if "slower" in verdicts else "faster" if "faster" in verdicts else "noise"
    out: list[Result] = []
    for key in dict.fromkeys(t.key for t in tried):
        mine = [t for t in tried if t.key == key]
        faster = [t for t in mine if t.verdict == "faster"]
        if faster:
            best = min(faster, key=lambda t: t.ratio)
            verdict = f"flip to {_show(best.value)} (faster by {100 * (1 - best.ratio):.1f}%)"
            out.append(Result(key, best.baseline, mine, verdict, best.value, best.ratio))
        elif any(t.verdict == "slower" for t in mine):
            out.append(Result(key, mine[0].baseline, mine, "keep default", mine[0].baseline, 1.0))
        else:
            out.append(Result(key, mine[0].baseline, mine, "noise", mine[0].baseline, 1.0))
    return out


# -- output -------------------------------------------------------------------------------------------


def _f(x: float) -> str:
    return f"{x:.2f}" if abs(x) < 100 else f"{x:.1f}"


def _ratios(r: Result) -> str:
    return ", ".join(f"{_show(t.value)}: {t.phase} x{t.ratio:.3f} ({t.verdict})" for t in r.tried)


def toml_fragment(results: list[Result], header: list[str]) -> str:
    lines = [f"# {h}" for h in header]
    by_section: dict[str, list[Result]] = {}
    for r in results:
        by_section.setdefault(r.key.partition(".")[0], []).append(r)
    for section, rs in by_section.items():
        lines += ["", f"[{section}]"]
        for r in rs:
            lines.append(f"# {r.verdict}; measured (ratio = flipped / baseline, on the judged phase): {_ratios(r)}")
            lines.append(f"{r.key.partition('.')[2]} = {toml_value(r.winner)}")
    return "\n".join(lines) + "\n"


def text_report(results: list[Result], skipped: dict[str, str], circuits: list[Circuit]) -> str:
    out: list[str] = []
    for r in results:
        for t in r.tried:
            out.append(f"{t.key}: {_show(t.baseline)} -> {_show(t.value)}   [{t.verdict} on {t.phase}, x{t.ratio:.3f}]")
            if t.note:
                out.append(f"  note: {t.note}")
            for c in circuits:
                rows = t.rows.get(c.id, [])
                w = max([5, *(len(x.phase) for x in rows)])
                out.append(f"  circuit {c.id}")
                out.append(
                    f"    {'phase (ms)':<{w}} {'baseline':>10} {'spread':>8} {'flipped':>10} {'spread':>8} {'ratio':>7} "
                    f"{'noise+-':>8}  verdict"
                )
                for x, bb, fb, ratio in _shown_rows(t, c):
                    out.append(
                        f"    {x.phase:<{w}} {_f(x.old):>10} {_f(bb):>8} {_f(x.new):>10} {_f(fb):>8} {ratio:>7} "
                        f"{_f(x.noise):>8}  {x.verdict}"
                    )
        out.append("")
    out.append("Verdicts (total; 'default' = the baseline configuration's value):")
    w = max([6, *(len(r.key) for r in results)])
    for r in results:
        out.append(f"  {r.key:<{w}}  baseline {_show(r.baseline):<10} {r.verdict:<32} {_ratios(r)}")
    for key, why in skipped.items():
        out.append(f"  {key:<{w}}  skipped: {why}")
    return "\n".join(out) + "\n"


def _shown_rows(t: Tried, c: Circuit) -> Iterator[tuple[Any, float, float, str]]:
    """The compared phases of one value tried on one circuit that either side has (row, baseline band,
    flipped band, ratio as shown)."""
    for x in t.rows.get(c.id, []):
        if x.old == 0 and x.new == 0:
            continue
        bb, fb = t.bands[c.id][x.phase]
        yield x, bb, fb, (f"{x.ratio:.3f}" if math.isfinite(x.ratio) else "new")


def markdown_report(results: list[Result], skipped: dict[str, str], circuits: list[Circuit], meta: dict[str, Any]) -> str:
    out = [
        f"`cuzk tune` on {meta['host']} ({meta['backend']} backend), {meta['runs']} interleaved runs per side, "
        f"noise floor {100 * meta['threshold']:g}% / {meta['min_ms']:g} ms; circuits: {', '.join(meta['circuit_names'])}",
        "",
        "| switch | baseline | tried | circuit | phase | baseline ms (spread) | flipped ms (spread) | ratio | verdict |",
        "|---|---|---|---|---|---:|---:|---:|---|",
    ]
    for r in results:
        for t in r.tried:
            for c in circuits:
                for x, bb, fb, ratio in _shown_rows(t, c):
                    out.append(
                        f"| {t.key} | {_show(t.baseline)} | {_show(t.value)} | {c.id} | {x.phase} | {_f(x.old)} ({_f(bb)}) "
                        f"| {_f(x.new)} ({_f(fb)}) | {ratio} | {x.verdict} |"
                    )
    out += ["", "| switch | baseline | verdict | measured (total ratio) |", "|---|---|---|---|"]
    out += [f"| {r.key} | {_show(r.baseline)} | {r.verdict} | {_ratios(r)} |" for r in results]
    out += [f"| {k} | | skipped | {why} |" for k, why in skipped.items()]
    return "\n".join(out) + "\n"


def json_report(results: list[Result], skipped: dict[str, str], meta: dict[str, Any], fragment: str) -> dict[str, Any]:
    def side(runs: dict[str, list[float]]) -> dict[str, Any]:
        return {"phases": {k: {"median": statistics.median(v), "runs": v, "unit": "ms"} for k, v in runs.items()}}

    return {
        **meta,
        "switches": [
            {
                "key": r.key,
                "baseline": r.baseline,
                "verdict": r.verdict,
                "winner": r.winner,
                "ratio": r.ratio,
                "tried": [
                    {
                        "value": t.value,
                        "verdict": t.verdict,
                        "total_ratio": t.ratio,  # the judged phase's ratio (named beside it)
                        "judged_phase": t.phase,
                        "note": t.note,
                        "circuits": {
                            cid: {
                                "baseline": side(t.base_runs[cid]),
                                "flipped": side(t.runs[cid]),
                                "rows": [asdict(x) for x in t.rows[cid]],
                            }
                            for cid in t.rows
                        },
                    }
                    for t in r.tried
                ],
            }
            for r in results
        ],
        "skipped": skipped,
        "toml": fragment,
    }


def _emit(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
    else:
        Path(path).write_text(text)


# -- the verb -----------------------------------------------------------------------------------------


def cmd_tune(a) -> int:
    from ..engine import switches
    from ..engine.config import load_config, parse_override

    if a.runs < 2 or a.warmup < 0:
        raise CuzkError("--runs must be at least 2 (a spread needs two runs) and --warmup at least 0")
    if not (a.python or a.dev or a.circuit):
        raise CuzkError("give a circuit: --python pkg.mod:Class, --dev SHAPE:LOG or --config F --circuit ID=INPUT")
    if a.circuit and not a.config:
        raise CuzkError("--circuit names a circuit of a daemon config: give --config F")
    if len(a.circuit_params) > len(a.python):
        raise CuzkError("--circuit-params: one per --python at most, in the same order")
    for item in a.switch:  # the names, before any work
        key = item.partition("=")[0].strip()
        sw = switches.BY_KEY.get(key)
        if sw is None:
            raise CuzkError(f"--switch {key}: not an optimization switch (`cuzk config switches` lists them)")
        if sw.hidden and not switches.test_switches_on():
            raise CuzkError(f"--switch {key}: a hidden test switch; set {switches.TEST_ENV}=1 to use it")
    base_sets = list(a.set) + ([f"gpus.backend={a.backend}"] if a.backend else [])
    ov = dict(parse_override(x) for x in base_sets)
    user_cfg = load_config(a.config or None, ov)  # a bad --set or config: one line, before any work
    work = Path(tempfile.mkdtemp(prefix="cuzk-tune-", dir="/tmp"))  # short: unix socket paths
    bar = None
    try:
        circuits: list[Circuit] = []
        for i, spec in enumerate(a.python):
            params = a.circuit_params[i] if i < len(a.circuit_params) else ""
            circuits.append(_python_circuit(spec, params, work, i))
        circuits += [_dev_circuit(spec, work, i, _backend_of(user_cfg)) for i, spec in enumerate(a.dev)]
        circuits += [_config_circuit(item, user_cfg) for item in a.circuit]
        names = {c.id: (c.spec or {}).get("python", "") or c.id for c in circuits}
        config = _write_config(work / "tune.toml", a.config, circuits)
        settings = switches.resolve(load_config(config, ov))
        if not a.quiet and (sys.stderr.isatty() or a.progress):
            from tqdm import tqdm

            bar = tqdm(total=1, unit="proof", file=sys.stderr, desc="baseline daemon", leave=False)
        t0 = time.perf_counter()
        skipped: dict[str, str] = {}

        def plan_fn(backend: str) -> list[Tried]:
            tried, why = plan(a, backend, circuits, settings)
            skipped.update(why)
            if not tried:
                raise CuzkError("no switch to try: " + "; ".join(f"{k}: {v}" for k, v in why.items()))
            return tried

        backend, tried = measure(a, config, base_sets, circuits, plan_fn, work, bar, skipped)
        elapsed = time.perf_counter() - t0
    finally:
        if bar is not None:
            bar.close()
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    results = judge(tried, a.threshold, a.min_ms)
    meta = {
        "tool": "cuzk tune",
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "backend": backend,
        "runs": a.runs,
        "warmup": a.warmup,
        "threshold": a.threshold,
        "min_ms": a.min_ms,
        "base_set": base_sets,
        "config": a.config,
        "circuits": [c.id for c in circuits],
        "circuit_names": [f"{c.id} ({names[c.id]})" if names[c.id] != c.id else c.id for c in circuits],
        "elapsed_s": elapsed,
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }
    header = [
        f"cuzk tune {meta['date']} on {meta['host']} ({meta['cpus']} cores, {backend} backend), {a.runs} interleaved runs",
        f"circuits: {', '.join(meta['circuit_names'])}; baseline: {a.config or 'defaults'} {' '.join(base_sets)}".rstrip(),
        "load with `cuzk daemon --config THIS`, or paste these tables into the daemon's config",
    ]
    fragment = toml_fragment(results, header)
    if a.json:
        _emit(a.json, json.dumps(json_report(results, skipped, meta, fragment), indent=1) + "\n")
    if a.markdown:
        _emit(a.markdown, markdown_report(results, skipped, circuits, meta))
    if a.toml:
        Path(a.toml).write_text(fragment)
    if a.json != "-" and a.markdown != "-":
        print(f"{backend} backend, {len(circuits)} circuit(s), {a.runs} runs per side, {elapsed:.1f} s")
        sys.stdout.write(text_report(results, skipped, circuits))
        print()
        sys.stdout.write(fragment)
        if a.toml:
            print(f"(written to {a.toml})")
    return EXIT_OK


def add_arguments(s) -> None:
    from ..cli.config import add_set_option

    s.add_argument("--python", action="append", default=[], metavar="SPEC", help="a Python circuit, pkg.mod:Class (repeatable)")
    s.add_argument(
        "--circuit-params", action="append", default=[], metavar="JSON", help="parameters of the n-th --python circuit"
    )
    s.add_argument("--dev", action="append", default=[], metavar="SHAPE:LOG", help="a synthetic circuit, e.g. hash:12")
    s.add_argument("--config", default="", help="a daemon config (TOML): the baseline, and its circuits for --circuit")
    s.add_argument(
        "--circuit", action="append", default=[], metavar="ID=INPUT[,INPUT]", help="a circuit of --config and its inputs"
    )
    s.add_argument("--switch", action="append", default=[], metavar="KEY[=VALUE]", help="only these switches (repeatable)")
    s.add_argument("--runs", type=int, default=5, help="interleaved proofs per side and circuit (default 5)")
    s.add_argument("--warmup", type=int, default=1, help="untimed proofs per daemon and circuit first (default 1)")
    s.add_argument("--backend", choices=["cpu", "gpu"], default="", help="gpus.backend for every configuration")
    add_set_option(s)
    s.add_argument(
        "--budget", type=float, default=0.0, metavar="SECONDS", help="stop starting new switch values after this long (0 = none)"
    )
    s.add_argument("--threshold", type=float, default=0.03, help="relative noise floor (default 0.03)")
    s.add_argument("--min-ms", type=float, default=1.0, help="absolute noise floor in ms (default 1.0)")
    s.add_argument("--json", default="", metavar="FILE", help="write the results as JSON ('-' = stdout)")
    s.add_argument("--markdown", default="", metavar="FILE", help="write a Markdown table for BENCHMARKS.md ('-' = stdout)")
    s.add_argument("--toml", default="", metavar="FILE", help="write the winning configuration (a TOML fragment)")
    s.add_argument("--progress", action="store_true", help="a progress bar even when stderr is not a terminal")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.add_argument("--keep", action="store_true", help="keep the work folder (daemon logs, keys) under /tmp")
    s.set_defaults(fn=cmd_tune)


HELP = "measure every optimization switch alone on this machine: keep/flip verdicts and a TOML fragment"


def add_parsers(sub) -> None:
    """``cuzk tune``."""
    add_arguments(sub.add_parser("tune", help=HELP, description=__doc__.split("\n\n")[0]))


def add_parser(sub) -> None:
    """``cuzk-bench ablate`` (the same verb)."""
    add_arguments(sub.add_parser("ablate", help=HELP + " (= cuzk tune)", description=__doc__.split("\n\n")[0]))
