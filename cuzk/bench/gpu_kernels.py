"""GPU kernel benchmark: G1/G2 MSM and NTT on the device, CUDA-event timing.

Data is generated on the device and stays there (distinct bases P[i % 64] + Q[i / 64]); each figure is
the median of --reps timed runs after one warm-up, with the min-max spread and the ratio to the physical
floor of the performance anchors (G1 MSM 2^26: 0.25 s; NTT 2^26: ~15 ms; floors scale linearly in n).
A CPU (arkworks, all cores) MSM at 2^16 and 2^18 gives the GPU/CPU ratio.

    python -m cuzk.bench.gpu_kernels --curve bn254 --g1 16 26 --g1-bits 24 26 --g2 16 24 --ntt 16 27 --reps 5 --json out.json

--curve picks the curve (default BLS12-381); every row carries it.

Side by side in the same process: --variants (kernel #defines or host switches, compared first), and
for every NTT size the other radix, both pass plans (GpuConfig.ntt_plan), the scalings fused or not
(GpuConfig.ntt_fused) and each --ntt-variant build.
Switches are changed through the GPU configuration object (cuzk/backends/gpu/config.py), never by
setting environment variables mid-run; the environment still sets the starting configuration.
"""

# ruff: noqa: B023  (every lambda over a loop variable is timed at once, inside its iteration)
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import secrets
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import cupy
import numpy as np

from ..backends.gpu import config
from ..backends.gpu import msm as gmsm
from ..backends.gpu import ntt as gntt
from ..backends.gpu.runtime import grid_for, launch
from ..curve import library
from ..curve import points as pts
from ..curves import Curve
from ..curves import get as get_curve
from . import kernels  # noqa: F401  (registers the bench-only "probe" module)

FLOOR_G1_2_26 = 0.25  # s, anchors section 4c (XYZZ, form A)
FLOOR_NTT_2_26 = 0.015  # s, anchors section 2
FLOOR_G2_FACTOR = 2.8  # G2 madd ~2.8x a G1 madd

C: Curve = get_curve("bls12_381")  # the curve benchmarked (--curve)


def _launch(*args) -> None:
    launch(*args, curve=C)


@contextmanager
def switches(values: dict[str, str]):
    """Host-side switches, named by their environment variables ({"CUZK_MSM_ACC": "items"}), set in the
    GPU configuration for the duration of a measurement, then put back as they were. They are set in the
    environment too, for backend.py's switches that it still reads from there (CUZK_PINNED, CUZK_NTT_BATCH)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        with config.using(config.GpuConfig.from_env(config.current(), values)):
            yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


VARIANT_MODULES = ("msm", "ntt", "probe")  # the modules a --variants build changes


def kernel_defines(defines: tuple[tuple[str, str], ...]) -> config.GpuConfig:
    """The current configuration with ``defines`` for the msm, ntt and probe modules (a --variants build)."""
    cfg = config.current()
    per_module = {**dict(cfg.module_defines), **dict.fromkeys(VARIANT_MODULES, defines)}
    return dataclasses.replace(cfg, module_defines=tuple(sorted(per_module.items())))


def timed(fn, reps: int) -> list[float]:
    fn()  # warm-up (compilation, pools)
    out = []
    for _ in range(reps):
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(cupy.cuda.get_elapsed_time(a, b) / 1e3)
    return out


def device_bases(group: int, n: int) -> cupy.ndarray:
    """n distinct points: tables grown 64x per level by adding 64 fresh random points (P[i % m] + Q[i / m])."""
    lib = C.lib
    base = lib.G1Point() if group == 1 else lib.G2Point()

    def fresh(k):
        points = [base * lib.Scalar(1 + secrets.randbelow(C.r - 1)) for _ in range(k)]
        return gmsm.upload_points(pts.to_lem(C, group, points), group, C)

    table = fresh(64)
    while table.shape[0] < n:
        m = table.shape[0]
        size = min(n, m * 64)
        q = fresh(-(-size // m))
        out = cupy.empty((size, gmsm.point_words(C, group)), dtype=cupy.uint64)
        _launch(
            "probe",
            f"g{group}_add_tables",
            grid_for(size, 128),
            128,
            (table, np.uint32(m), q, np.uint32(size), out),
            "bench bases",
        )
        table = out
    cupy.cuda.get_current_stream().synchronize()
    return table[:n]


def cpu_msm(group: int, raw: bytes, n: int, s: np.ndarray):
    """The curve's CPU library MSM of Montgomery scalars over LEM bases (the reference, and the CPU rows)."""
    bases = C.lib.load_bases(group, raw, n, "bench bases")
    return library.submit_msm(C.lib, group, bases, C.fr.from_mont(s)).result()


def check_against_cpu(group: int, log_n: int) -> bool:
    n = 1 << log_n
    b = device_bases(group, n)
    s = C.fr.random(n)
    want = cpu_msm(group, cupy.asnumpy(b).tobytes(), n, s)
    return gmsm.msm(group, b, cupy.asarray(s), curve=C) == want


def check_ntt_against_cpu(log_n: int) -> bool:
    """Natural-order NTT and the prover's iNTT + coset NTT, GPU against cuzk.field.ntt."""
    from cuzk.field.ntt import domain as cpu_domain

    x = C.fr.random(1 << log_n)
    cd, gd = cpu_domain(C.fr, log_n, C.root_generator), gntt.domain(log_n, curve=C)
    ok = np.array_equal(cupy.asnumpy(gd.ntt(cupy.asarray(x))), cd.ntt(x))
    return ok and np.array_equal(cupy.asnumpy(gd.evals_to_coset(cupy.asarray(x), 7)), cd.coset_ntt(cd.intt(x), 7))


def mul_probe(field: str) -> float:
    """Field multiplications per second (4 independent chains per thread, 132*8 blocks of 256)."""
    words = C.fq_limbs if field == "fq" else 4
    threads = 132 * 8 * 256
    data = cupy.asarray(
        np.tile(C.fr.random(1)[0] if field == "fr" else np.arange(1, words + 1, dtype=np.uint64), (4 * threads, 1))
    )
    iters = 2000
    xs = timed(lambda: _launch("probe", f"{field}_mul_probe", 132 * 8, 256, (data, np.int32(iters)), "probe"), 3)
    return threads * 4 * iters / statistics.median(xs)


def chain_probe() -> dict[str, float]:
    """Fq multiplies (and squares) per second with K independent chains per thread, same grid as
    mul_probe: a rate that grows with K means the multiply is latency-bound (kernels/probe.cu)."""
    threads = 132 * 8 * 256
    iters = 1000
    out = {}
    for name, k in (("mul_chains_1", 1), ("mul_chains_2", 2), ("mul_chains_4", 4), ("mul_chains_8", 8), ("sqr_chains_4", 4)):
        data = cupy.asarray(np.tile(np.arange(1, C.fq_limbs + 1, dtype=np.uint64), (k * threads, 1)))
        xs = timed(lambda: _launch("probe", f"fq_{name}", 132 * 8, 256, (data, np.int32(iters)), "probe"), 3)
        out[name] = threads * k * iters / statistics.median(xs)
    return out


def device_scalars(n: int, kind: str) -> cupy.ndarray:
    """Random Montgomery scalars generated on the device (uniform below r, up to a negligible bias)."""
    if kind == "bits":
        s = cupy.zeros((n, 4), dtype=cupy.uint64)
        s[:, 0] = (cupy.random.random(n) < 0.5).astype(cupy.uint64)  # 0/1, canonical
        out = cupy.empty_like(s)
        _launch("fr_ops", "fr_to_mont", grid_for(n), 256, (s, out, np.uint32(n)), "bench scalars")
        return out
    lo = cupy.random.randint(0, 2**32, size=(n, 4), dtype=cupy.int64).astype(cupy.uint64)
    hi = cupy.random.randint(0, 2**32, size=(n, 4), dtype=cupy.int64).astype(cupy.uint64)
    raw = (hi << cupy.uint64(32)) | lo
    top = C.r.bit_length() - 1 - 192  # bits of the top limb that keep every value below 2^(bits(r) - 1) < r
    raw[:, 3] &= cupy.uint64((1 << top) - 1)
    out = cupy.empty_like(raw)
    _launch("fr_ops", "fr_to_mont", grid_for(n), 256, (raw, out, np.uint32(n)), "bench scalars")
    return out


def stat(xs: list[float]) -> dict:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "runs": xs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--curve", default="bls12_381", help="bls12_381 (default) or bn254")
    ap.add_argument("--g1", type=int, nargs=2, default=[16, 26])
    ap.add_argument("--g1-bits", type=int, nargs=2, default=[24, 26])
    ap.add_argument("--g2", type=int, nargs=2, default=[16, 24])
    ap.add_argument("--ntt", type=int, nargs=2, default=[16, 27])
    ap.add_argument("--cpu", type=int, nargs="*", default=[16, 18])
    ap.add_argument("--upload", type=int, nargs="*", default=[20, 24, 26], help="witness upload sizes, pinned vs pageable")
    ap.add_argument("--step", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument(
        "--plain", action="store_true", help="NTT rows without the side-by-side plans, radix and batching rows (shorter runs)"
    )
    ap.add_argument("--json", default="")
    ap.add_argument(
        "--variants",
        nargs="*",
        default=[],
        help="kernel variants to compare first, NAME:DEF=V,DEF=V (#defines for every module, e.g. the "
        "register caps CUZK_ACC_MINB=4,CUZK_ACC2_MINB=3; env.VAR=V sets a host-side switch such as "
        "env.CUZK_MSM_ACC=items; empty = default); the fastest G1+G2 variant at the largest "
        "--variant-log is then used for the main run",
    )
    ap.add_argument(
        "--ntt-variant",
        nargs="*",
        default=[],
        help="ntt module variants (#defines DEF=V,...), each timed beside the default NTT rows, e.g. CUZK_NTT_MINB=3",
    )
    ap.add_argument("--variant-log", type=int, nargs="+", default=[22], help="G1 sizes of the comparison (G2: 2^(k-2))")
    a = ap.parse_args()
    global C
    C = get_curve(a.curve)
    print(f"curve {C}", flush=True)
    rows = []
    props = cupy.cuda.runtime.getDeviceProperties(0)
    dev = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]

    def report(kind, log_n, xs, floor=None, extra=""):
        st = stat(xs)
        row = {"curve": C.name, "kind": kind, "log_n": log_n, **st}
        if floor:
            row["floor_s"] = floor
            row["x_floor"] = st["median"] / floor
        rows.append(row)
        f = f"  {row['x_floor']:.2f}x floor" if floor else ""
        print(
            f"{kind:<14} 2^{log_n:<3} median {st['median'] * 1e3:10.3f} ms  ({st['min'] * 1e3:.3f}-{st['max'] * 1e3:.3f}){f} {extra}",
            flush=True,
        )

    def msm_rows(group, lo, hi, kind):
        maxn = 1 << hi
        bases = device_bases(group, maxn)
        for log_n in range(lo, hi + 1, a.step):
            n = 1 << log_n
            s = device_scalars(n, kind)
            b = bases[:n]
            floor = FLOOR_G1_2_26 * n / (1 << 26) * (FLOOR_G2_FACTOR if group == 2 else 1.0)
            gmsm._Profile.totals.clear()
            st = gmsm.MsmStats(n, 0, 0)
            xs = timed(lambda: gmsm.msm(group, b, s, stats=st, curve=C), a.reps)
            prof = {k: v / (a.reps + 1) for k, v in gmsm._Profile.totals.items()}
            report(f"G{group} MSM {kind}", log_n, xs, floor if kind == "random" else None, f"window {st.window}")
            rows[-1]["kernels_ms"] = prof
            print("    " + " ".join(f"{k}={v:.2f}" for k, v in prof.items()), flush=True)
            s = None
        del bases
        cupy.get_default_memory_pool().free_all_blocks()

    if a.variants:
        best = None
        for vlog in a.variant_log:
            vb = device_bases(1, 1 << vlog)
            vs = device_scalars(1 << vlog, "random")
            vbits = device_scalars(1 << vlog, "bits")
            g2_log = vlog - 2
            vb2 = device_bases(2, 1 << g2_log)
            vs2 = device_scalars(1 << g2_log, "random")
            for spec in a.variants:
                name, _, defs = spec.partition(":")
                kvs = [tuple(kv.split("=", 1)) for kv in defs.split(",") if kv]
                defines = tuple(kv for kv in kvs if not kv[0].startswith("env."))
                envs = {k[4:]: v for k, v in kvs if k.startswith("env.")}  # host-side switches
                with config.using(kernel_defines(defines)), switches(envs):
                    gmsm._Profile.totals.clear()
                    rate = mul_probe("fq")
                    chains = chain_probe()
                    t_rand = statistics.median(timed(lambda: gmsm.msm(1, vb, vs, curve=C), 3))
                    t_bits = statistics.median(timed(lambda: gmsm.msm(1, vb, vbits, curve=C), 3))
                    t_g2 = statistics.median(timed(lambda: gmsm.msm(2, vb2, vs2, curve=C), 3))
                    d = gntt.domain(24, curve=C)
                    x = device_scalars(1 << 24, "random")
                    t_ntt = statistics.median(timed(lambda: d.ntt(x), 3))
                    d = x = None
                    gntt._domain_cached.cache_clear()
                    ok = check_against_cpu(1, 12) and check_against_cpu(2, 10) and check_ntt_against_cpu(13)
                    gntt._domain_cached.cache_clear()
                rows.append(
                    {
                        "kind": "variant",
                        "name": name,
                        "defines": defines,
                        "env": envs,
                        "fq_mul_per_s": rate,
                        "g1_random_s": t_rand,
                        "g1_bits_s": t_bits,
                        "g2_random_s": t_g2,
                        "g2_log_n": g2_log,
                        "ntt24_s": t_ntt,
                        "log_n": vlog,
                        "correct": ok,
                        "fq_chains_per_s": chains,
                    }
                )
                print(
                    f"variant {name:<14} fq mul {rate / 1e9:6.2f} G/s  G1 2^{vlog} random {t_rand * 1e3:8.2f} ms  "
                    f"bits {t_bits * 1e3:7.2f} ms  G2 2^{g2_log} {t_g2 * 1e3:8.2f} ms  NTT 2^24 {t_ntt * 1e3:6.2f} ms  "
                    f"correct {ok}",
                    flush=True,
                )
                if gmsm._Profile.totals:  # env.CUZK_MSM_PROFILE=1 in the variant: its kernels, summed over every MSM run
                    rows[-1]["kernels_ms"] = dict(gmsm._Profile.totals)
                    print(
                        "    kernels (ms, all runs): " + " ".join(f"{k}={v:.1f}" for k, v in gmsm._Profile.totals.items()),
                        flush=True,
                    )
                print(
                    "    Fq G/s by chains per thread: "
                    + " ".join(f"{k[-1]}:{v / 1e9:.2f}" for k, v in chains.items() if k.startswith("mul"))
                    + f" (sqr 4: {chains['sqr_chains_4'] / 1e9:.2f})",
                    flush=True,
                )
                if vlog == a.variant_log[-1] and ok and (best is None or t_rand + t_g2 < best[0]):
                    best = (t_rand + t_g2, defines, name, envs)  # one module serves both groups
            vb = vs = vbits = vb2 = vs2 = None
            cupy.get_default_memory_pool().free_all_blocks()
        config.configure(config.GpuConfig.from_env(kernel_defines(best[1]), best[3]))
        os.environ.update(best[3])
        print(f"using variant {best[2]}", flush=True)
        rows.append({"kind": "chosen variant", "name": best[2], "defines": best[1], "env": best[3]})
    for f in ("fq", "fr"):
        rate = mul_probe(f)
        rows.append({"kind": f"{f} mul/s", "value": rate})
        print(f"{f} Montgomery mul: {rate / 1e9:.2f} G/s", flush=True)
    chains = chain_probe()
    rows.append({"kind": "fq chains/s", **chains})
    print(
        "Fq per second by independent chains per thread: " + "  ".join(f"{k} {v / 1e9:.2f} G" for k, v in chains.items()),
        flush=True,
    )
    for g in (1, 2):
        ok = check_against_cpu(g, 14)
        print(f"G{g} MSM 2^14 equals the CPU library's ({C.cpu_library}): {ok}", flush=True)
        if not ok:
            return 1
    config.configure(dataclasses.replace(config.current(), msm_profile=True))
    if a.g1[0] <= a.g1[1]:
        msm_rows(1, a.g1[0], a.g1[1], "random")
    if a.g1_bits[0] <= a.g1_bits[1]:
        msm_rows(1, a.g1_bits[0], a.g1_bits[1], "bits")
    if a.g2[0] <= a.g2[1]:
        msm_rows(2, a.g2[0], a.g2[1], "random")
    ntt_variants = {spec: tuple(tuple(kv.split("=", 1)) for kv in spec.split(",") if kv) for spec in a.ntt_variant}

    def ntt_timed(f, envs=None, variant=None):
        """Median-of-reps timing of f under host switches `envs` and, if given, the ntt kernel variant."""
        cfg = config.current()
        if variant is not None:
            per_module = {**dict(cfg.module_defines), "ntt": variant}
            cfg = dataclasses.replace(cfg, module_defines=tuple(sorted(per_module.items())))
        with config.using(cfg), switches(envs or {}):
            return timed(f, a.reps)

    def side_by_side(kind, log_n, f, floor=None, plans=True):
        """kind's row, then the same under the other pass plans and under each --ntt-variant build."""
        report(kind, log_n, ntt_timed(f), floor)
        if a.plain:
            return
        for plan in ("greedy", "balanced") if plans else ():
            report(f"  same, {plan} plan", log_n, ntt_timed(f, {"CUZK_NTT_PLAN": plan}), floor)
        other = "0" if config.current().ntt_fused else "1"  # the scalings folded in, or in passes of their own
        report(f"  same, ntt_fused={other}", log_n, ntt_timed(f, {"CUZK_NTT_FUSED": other}), floor)
        for spec, defs in ntt_variants.items():
            report(f"  same, ntt {spec}", log_n, ntt_timed(f, variant=defs), floor)

    for log_n in range(a.ntt[0], a.ntt[1] + 1):
        d = gntt.domain(log_n, curve=C)
        x = device_scalars(1 << log_n, "random")
        floor = FLOOR_NTT_2_26 * (1 << log_n) / (1 << 26) * log_n / 26
        side_by_side("NTT", log_n, lambda: d.ntt(x), floor)
        other = "2" if config.current().ntt_radix == 4 else "4"  # the other butterfly form, side by side
        if not a.plain:
            report(f"  same, radix {other}", log_n, ntt_timed(lambda: d.ntt(x), {"CUZK_NTT_RADIX": other}), floor)
        side_by_side("iNTT+coset NTT", log_n, lambda: d.evals_to_coset(x, 7))
        side_by_side("iNTT", log_n, lambda: d.intt(x), plans=False)
        side_by_side("coset iNTT", log_n, lambda: d.coset_intt(x, 7), plans=False)
        if log_n in (16, 20, 24, 26) and not a.plain:  # the prover's a, b, c: one batched launch per pass vs three
            x3 = cupy.concatenate([x[None]] * 3)
            side_by_side("  x3 batched", log_n, lambda: d.evals_to_coset(x3, 7), plans=False)
            report("  x3 one by one", log_n, ntt_timed(lambda: [d.evals_to_coset(x3[i], 7) for i in range(3)]))
            x3 = None
        x = d = None
        gntt._domain_cached.cache_clear()
        cupy.get_default_memory_pool().free_all_blocks()
    from ..backends.gpu.backend import upload_fr

    for log_n in a.upload:
        host = np.ascontiguousarray(np.tile(C.fr.random(1 << 12), (1 << (log_n - 12), 1)))
        for pinned, copy in (("1", "single"), ("1", "parallel"), ("0", "single")):
            xs = []
            with switches({"CUZK_PINNED": pinned, "CUZK_UPLOAD_COPY": copy}):
                for _ in range(a.reps + 1):
                    t = time.perf_counter()
                    d = upload_fr(host)
                    cupy.cuda.get_current_stream().synchronize()
                    xs.append(time.perf_counter() - t)
                    d = None
            report(
                f"upload pinned={pinned} copy={copy}",
                log_n,
                xs[1:],
                extra=f"{host.nbytes / statistics.median(xs[1:]) / 1e9:.1f} GB/s",
            )
    for log_n in a.cpu:
        n = 1 << log_n
        raw = cupy.asnumpy(device_bases(1, n)).tobytes()
        s = C.fr.random(n)
        xs = []
        for _ in range(max(1, a.reps // 2)):
            t = time.perf_counter()
            cpu_msm(1, raw, n, s)
            xs.append(time.perf_counter() - t)
        report("CPU G1 MSM", log_n, xs, extra=f"({library.worker_count()} threads, {C.cpu_library})")
    if a.json:
        Path(a.json).write_text(json.dumps({"device": dev, "curve": C.name, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
