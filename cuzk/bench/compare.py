"""``cuzk-bench compare OLD.json NEW.json``: which phases got slower beyond the noise (a CI regression guard).

    cuzk-bench compare OLD.json NEW.json [--threshold 0.03] [--min-ms 1.0] [--json]

Both files are result JSONs of our benchmarks. Each is first normalised, by one function per known
shape, to phases with a median (milliseconds, or proofs/min for a throughput) and, where the file has
them, the runs or a measured spread:

* ``phases``   the common shape, ``{"phases": {NAME: {"median": x, "runs": [...], "spread": s | [lo, hi],
               "unit": "ms", "higher_is_better": false}}}`` (runs and spread optional; what ``cuzk tune``
               and any new benchmark should write)
* ``synth``    ``cuzk-bench synth --json`` and each case file of ``python -m cuzk.bench.synth_suite --out``:
               every ``*_ms`` entry of the form ``{"median", "spread", "runs"}``
* ``gpu_prove`` ``python -m cuzk.bench.gpu_prove --json``: a list of rows (curve, case, backend) with
               ``total_s`` ``{median, min, max, runs}`` and ``phases_ms`` (medians only; failed rows skipped)
* ``porep_e2e`` ``python -m cuzk.bench.porep_e2e --reps N --json``: ``median``, ``spread`` and ``runs``
* ``stress``   ``cuzk-bench stress --json``: per circuit p50/p95/max latency, and proofs/min overall

Anything else is refused with one line naming the file and what was expected (exit 2).

Noise: for each side, the runs' band — the 10th to 90th percentile with 5 runs or more, max - min with
2 to 4 — else the spread the file states; a phase whose file has only a median (gpu_prove's phases)
takes its row's total's relative spread; a file with no spread at all (stress) has none. The noise of a
phase is the largest of the two sides' bands, ``--threshold`` x the old median (the relative floor) and
``--min-ms`` (phases in ms). A phase is *slower* when it got worse by more than its noise, *faster* when
it got better by more, else *noise*. Exit 0 when no phase got slower, 1 when one did, 2 for bad input.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from .. import CuzkError
from ..cli.main import EXIT_INVALID, EXIT_OK


@dataclass
class Phase:
    name: str
    median: float
    band: float = 0.0  # the run-to-run spread measured (same unit as the median); 0 = none known
    band_src: str = "none"  # how the band was found: "p10-p90 of N runs", "max-min of N runs", "spread", ...
    unit: str = "ms"
    higher_is_better: bool = False


@dataclass
class Row:
    phase: str
    unit: str
    old: float
    new: float
    ratio: float
    noise: float
    noise_src: str
    verdict: str  # slower | faster | noise


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _band(runs: list[float]) -> tuple[float, str]:
    """The run-to-run band of a list of runs: p10-p90 with 5 runs or more, else max - min."""
    xs = sorted(float(x) for x in runs if _num(x))
    if len(xs) < 2:
        return 0.0, "none"
    if len(xs) >= 5:
        q = statistics.quantiles(xs, n=10, method="inclusive")
        return q[8] - q[0], f"p10-p90 of {len(xs)} runs"
    return xs[-1] - xs[0], f"max-min of {len(xs)} runs"


def phase_of_runs(name: str, runs: list[float], unit: str = "ms", higher_is_better: bool = False) -> Phase:
    """A phase measured here: the median of ``runs`` and their band (p10-p90 with 5 runs or more, else
    max - min), as :func:`compare` takes it (``cuzk tune`` builds its phases with this)."""
    return _stat(name, {"median": statistics.median(runs), "runs": list(runs)}, unit=unit, higher=higher_is_better)


def _stat(name: str, d: dict, scale: float = 1.0, unit: str = "ms", higher: bool = False) -> Phase:
    """A phase from ``{"median": x, "runs": [...]?, "spread": s | [lo, hi]?}`` (values x scale)."""
    med = d["median"]
    if not _num(med):
        raise ValueError(f"{name}: median is not a number")
    p = Phase(name, med * scale, unit=unit, higher_is_better=higher)
    runs = d.get("runs")
    if isinstance(runs, list) and sum(1 for x in runs if _num(x)) >= 2:
        b, src = _band(runs)
        p.band, p.band_src = b * scale, src
        return p
    sp = d.get("spread")
    if _num(sp):
        p.band, p.band_src = abs(sp) * scale, "spread"
    elif isinstance(sp, list) and len(sp) == 2 and all(_num(x) for x in sp):
        p.band, p.band_src = abs(sp[1] - sp[0]) * scale, "spread"
    elif _num(d.get("min")) and _num(d.get("max")):
        p.band, p.band_src = (d["max"] - d["min"]) * scale, "max-min"
    return p


# -- one normaliser per known shape -------------------------------------------------------------------
def _is_canonical(o: Any) -> bool:
    ph = o.get("phases") if isinstance(o, dict) else None
    return isinstance(ph, dict) and bool(ph) and all(isinstance(v, dict) and "median" in v for v in ph.values())


def _canonical(o: dict) -> list[Phase]:
    out = []
    for k, v in o["phases"].items():
        out.append(_stat(k, v, unit=str(v.get("unit", "ms")), higher=bool(v.get("higher_is_better", False))))
    return out


def _is_synth(o: Any) -> bool:
    return isinstance(o, dict) and isinstance(o.get("witness_ms"), dict) and "median" in o["witness_ms"]


def _synth(o: dict) -> list[Phase]:
    return [_stat(k[: -len("_ms")], v) for k, v in o.items() if k.endswith("_ms") and isinstance(v, dict) and "median" in v]


def _is_gpu_prove(o: Any) -> bool:
    return (
        isinstance(o, list)
        and bool(o)
        and all(isinstance(r, dict) and "case" in r and "backend" in r for r in o)
        and any("phases_ms" in r and "total_s" in r for r in o)
    )


def _gpu_prove(o: list) -> list[Phase]:
    out = []
    for r in o:
        if "error" in r or "phases_ms" not in r:
            continue  # a failed case: nothing measured
        key = "/".join(str(r[k]) for k in ("curve", "case", "backend") if k in r)
        total = _stat(f"{key}/total", r["total_s"], scale=1e3)
        out.append(total)
        rel = total.band / total.median if total.median > 0 else 0.0
        for ph, ms in r["phases_ms"].items():
            if ph == "total" or not _num(ms):
                continue
            out.append(Phase(f"{key}/{ph}", ms, ms * rel, "total's relative spread" if rel else "none"))
    return out


def _is_porep_e2e(o: Any) -> bool:
    return isinstance(o, dict) and isinstance(o.get("median"), dict) and isinstance(o.get("runs"), list)


def _porep_e2e(o: dict) -> list[Phase]:
    out = []
    for k, med in o["median"].items():
        if not _num(med):
            continue
        scale, name = (1e3, k[:-2]) if k.endswith("_s") else (1.0, k[:-3] if k.endswith("_ms") else k)
        runs = [r.get(k) for r in o["runs"] if isinstance(r, dict)]
        out.append(_stat(name, {"median": med, "runs": runs, "spread": o.get("spread", {}).get(k)}, scale=scale))
    return out


def _is_stress(o: Any) -> bool:
    return isinstance(o, dict) and isinstance(o.get("kinds"), list) and "proofs_per_min" in o


def _stress(o: dict) -> list[Phase]:
    out = [Phase("throughput", o["proofs_per_min"], unit="proofs/min", higher_is_better=True)]
    for r in o["kinds"]:
        for q in ("p50_s", "p95_s", "max_s"):
            if _num(r.get(q)):
                out.append(Phase(f"{r['circuit']}/{q[:-2]} latency", r[q] * 1e3))
    return out


SHAPES: list[tuple[str, Callable[[Any], bool], Callable[[Any], list[Phase]]]] = [
    ("phases", _is_canonical, _canonical),
    ("synth", _is_synth, _synth),
    ("gpu_prove", _is_gpu_prove, _gpu_prove),
    ("porep_e2e", _is_porep_e2e, _porep_e2e),
    ("stress", _is_stress, _stress),
]
EXPECTED = 'a result JSON of cuzk-bench synth / stress, gpu_prove, porep_e2e --reps, or {"phases": {NAME: {"median": ...}}}'


def load(path: str) -> tuple[str, list[Phase]]:
    """(shape name, phases) of one result file; CuzkError (one line) if unreadable or of no known shape."""
    try:
        with open(path, encoding="utf-8") as fh:
            obj = json.load(fh)
    except FileNotFoundError:
        raise CuzkError(f"{path}: no such file") from None
    except OSError as e:
        raise CuzkError(f"{path}: cannot read: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CuzkError(f"{path}: not JSON ({e}); expected {EXPECTED}") from None
    for shape, is_it, norm in SHAPES:
        if is_it(obj):
            try:
                phases = norm(obj)
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                raise CuzkError(f"{path}: looks like a {shape} result but is malformed ({type(e).__name__}: {e})") from None
            if not phases:
                raise CuzkError(f"{path}: a {shape} result with no measured phase")
            return shape, phases
    raise CuzkError(f"{path}: unknown result shape; expected {EXPECTED}")


def compare(old: list[Phase], new: list[Phase], threshold: float = 0.03, min_ms: float = 1.0) -> list[Row]:
    """One row per phase in both lists, in the old file's order."""
    by_new = {p.name: p for p in new}
    rows = []
    for o in old:
        n = by_new.get(o.name)
        if n is None:
            continue
        floor = threshold * abs(o.median)
        cands = [(o.band, f"old {o.band_src}"), (n.band, f"new {n.band_src}"), (floor, f"{100 * threshold:g}% floor")]
        if o.unit == "ms":
            cands.append((min_ms, f"{min_ms:g} ms floor"))
        noise, src = max(cands, key=lambda c: c[0])
        worse = (o.median - n.median) if o.higher_is_better else (n.median - o.median)
        verdict = "slower" if worse > noise else "faster" if -worse > noise else "noise"
        ratio = n.median / o.median if o.median else math.inf
        rows.append(Row(o.name, o.unit, o.median, n.median, ratio, noise, src, verdict))
    return rows


def _fmt(x: float) -> str:
    return f"{x:.3f}" if abs(x) < 100 else f"{x:.1f}"


def cmd_compare(a) -> int:
    if not (a.threshold >= 0 and math.isfinite(a.threshold)) or not (a.min_ms >= 0 and math.isfinite(a.min_ms)):
        raise CuzkError("--threshold and --min-ms must be finite and not negative")
    so, old = load(a.old)
    sn, new = load(a.new)
    if so != sn:
        raise CuzkError(f"{a.new}: a {sn} result, but {a.old} is a {so} result; compare results of one benchmark")
    rows = compare(old, new, a.threshold, a.min_ms)
    if not rows:
        raise CuzkError(f"{a.old} and {a.new} have no phase in common")
    only_old = [p.name for p in old if p.name not in {q.name for q in new}]
    only_new = [p.name for p in new if p.name not in {q.name for q in old}]
    slower = [r.phase for r in rows if r.verdict == "slower"]
    if a.json:
        out = {
            "old": a.old,
            "new": a.new,
            "shape": so,
            "threshold": a.threshold,
            "min_ms": a.min_ms,
            "phases": [asdict(r) for r in rows],
            "only_in_old": only_old,
            "only_in_new": only_new,
            "slower": slower,
        }
        json.dump(out, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        w = max(5, *(len(r.phase) for r in rows))
        print(f"{a.old} -> {a.new} ({so} results; noise floor {100 * a.threshold:g}%, {a.min_ms:g} ms)")
        print(f"{'phase':<{w}} {'old median':>12} {'new median':>12} {'ratio':>7} {'noise +-':>10}  verdict  (noise from)")
        for r in rows:
            unit = "" if r.unit == "ms" else f" {r.unit}"
            print(
                f"{r.phase:<{w}} {_fmt(r.old):>12} {_fmt(r.new):>12} {r.ratio:>7.3f} {_fmt(r.noise):>10}  "
                f"{r.verdict:<7}  ({r.noise_src}){unit}"
            )
        for name in only_old:
            print(f"only in {a.old}: {name}")
        for name in only_new:
            print(f"only in {a.new}: {name}")
        print(f"{len(slower)} slower: {', '.join(slower)}" if slower else "nothing slower beyond the noise")
    return EXIT_INVALID if slower else EXIT_OK


def add_parser(sub) -> None:
    s = sub.add_parser("compare", help="phases of NEW slower than OLD beyond the noise: exit 1 if any (a CI guard)")
    s.add_argument("old", help="the reference result JSON")
    s.add_argument("new", help="the result JSON to check")
    s.add_argument("--threshold", type=float, default=0.03, help="relative noise floor (default 0.03 = 3%%)")
    s.add_argument("--min-ms", type=float, default=1.0, help="absolute noise floor for phases in ms (default 1.0)")
    s.add_argument("--json", action="store_true", help="print the comparison as JSON")
    s.set_defaults(fn=cmd_compare)
