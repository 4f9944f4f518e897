"""``cuzk-bench gen-vanilla``: the inputs of a storage-proof load test in one folder: a PoRep partition's,
a WindowPoSt partition's and a WinningPoSt's vanilla proofs of freshly sealed sectors, and (``--keys``)
a daemon configuration registering the three proof kinds with development keys (NORMAL, HIGH, CRITICAL
with its deadline), ready for ``cuzk daemon --config DIR/cuzk.toml`` and ``cuzk-bench stress``.

    cuzk-bench gen-vanilla --sector-size 2KiB --out DIR [--kinds porep,window-post,winning-post]
        [--window-sectors 2] [--keys] [--backend cpu|gpu] [--winning-deadline 25s]

Each kind is written by ``cuzk gen-vanilla`` (checked natively first) and timed. Keys are cached in
``DIR/keys`` by the circuit's recording key (an edited circuit gets a new key); the CPU setup of a 2 KiB
PoRep partition takes minutes on a small machine.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from .. import CuzkError

KINDS = (  # (file stem, gen-vanilla --kind, circuit class, priority)
    ("porep", "porep", "cuzk.filecoin.porep:PoRep", "normal"),
    ("window-post", "window-post", "cuzk.filecoin.post:WindowPoSt", "high"),
    ("winning-post", "winning-post", "cuzk.filecoin.post:WinningPoSt", "critical"),
)


def circuit_params(kind: str, size: int, window_sectors: int) -> dict:
    """The Python circuit's parameters for one partition of ``kind`` at ``size`` (Filecoin's counts)."""
    from ..filecoin import params as P
    from ..filecoin import post

    sp = P.PARAMS[size]
    if kind == "porep":
        return {"proof_id": sp.seal_proof_ids["V1_1"], "challenges": sp.porep_challenges_per_partition}
    return {"proof_id": post.post_proof_id(kind, size), "sectors": window_sectors if kind == "window-post" else 1}


def development_key(spec_text: str, params: dict, keys: Path, backend: str) -> tuple[Path, int, float]:
    """A key for the circuit (cached by its recording key): (path, constraints, setup seconds or 0)."""
    from ..circuit.circuit import CircuitSpec, record
    from ..groth16 import zkey

    rec = record(CircuitSpec.parse(spec_text, params).load())
    path = keys / f"{spec_text.rsplit(':', 1)[1].lower()}-{rec.key}.zkey"
    if path.exists():
        return path, rec.layout.n_constraints, 0.0
    t = time.perf_counter()
    if backend == "gpu":
        from ..backends.gpu import setup as gpu_setup

        pk = gpu_setup.setup(rec.pce, style="snarkjs")
    else:
        from ..groth16 import setup

        pk = setup.setup(rec.pce, quiet=True)
    keys.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    zkey.write_zkey(tmp, pk)
    tmp.rename(path)
    return path, rec.layout.n_constraints, time.perf_counter() - t


def cmd_gen_vanilla(a) -> int:
    from ..cli.filecoin import parse_size
    from ..cli.main import main as cuzk_main
    from ..engine.config import parse_duration
    from ..filecoin import params as P

    size = parse_size(a.sector_size, "--sector-size")
    if size not in P.PARAMS:
        raise CuzkError(f"--sector-size: {size} bytes is not a Filecoin sector size")
    if a.window_sectors < 1:
        raise CuzkError(f"--window-sectors: {a.window_sectors}; at least 1")
    deadline = parse_duration(a.winning_deadline, "--winning-deadline")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    figures: dict = {"sector_size": size, "kinds": {}}
    circuits = []
    wanted = [k.strip() for k in a.kinds.split(",") if k.strip()]
    unknown = sorted(set(wanted) - {k for _, k, _, _ in KINDS})
    if unknown or not wanted:
        raise CuzkError(f"--kinds: {', '.join(unknown) or '(none)'}; expected some of porep, window-post, winning-post")
    for stem, kind, cls, prio in KINDS:
        if kind not in wanted:
            continue
        argv = ["gen-vanilla", "--kind", kind, "--sector-size", a.sector_size, "-o", str(out / f"{stem}.cvp")]
        argv += ["--json", str(out / f"{stem}.json")]
        if kind == "window-post":
            argv += ["--sectors", str(a.window_sectors)]
        t = time.perf_counter()
        rc = cuzk_main(argv)
        if rc != 0:
            raise CuzkError(f"cuzk gen-vanilla --kind {kind} failed (exit {rc})")
        row = {"gen_vanilla_s": time.perf_counter() - t, "bytes": (out / f"{stem}.cvp").stat().st_size}
        params = circuit_params(kind, size, a.window_sectors)
        if a.keys:
            key, n, setup_s = development_key(cls, params, out / "keys", a.backend)
            row.update(constraints=n, setup_s=setup_s, key=str(key))
            print(f"{stem}: {n:,} constraints, key {key.name}" + (f" (setup {setup_s:.1f} s)" if setup_s else " (cached)"))
            c = {"id": stem, "python": cls, "python_params": params, "zkey": str(key), "default_priority": prio}
            if kind == "winning-post" and deadline > 0:
                c["deadline"] = f"{deadline:g}s"
            circuits.append(c)
        figures["kinds"][stem] = row
    if circuits:
        lines = [f"# written by cuzk-bench gen-vanilla for {a.sector_size} sectors", "[gpus]", f'backend = "{a.backend}"', ""]
        for c in circuits:
            lines.append("[[circuits]]")
            for k, v in c.items():
                if isinstance(v, dict):
                    table = ", ".join(f"{kk} = {json.dumps(vv)}" for kk, vv in v.items())
                    lines.append(f"{k} = {{ {table} }}")
                else:
                    lines.append(f"{k} = {json.dumps(v)}")
            lines.append("")
        (out / "cuzk.toml").write_text("\n".join(lines))
        print(f"wrote {out / 'cuzk.toml'}; then:")
        print(f"  cuzk daemon --config {out / 'cuzk.toml'} &")
        jobs = " ".join(f"--job {s}={out / (s + '.cvp')}" for s, k, *_ in KINDS if k in wanted)
        print(f"  cuzk-bench stress {jobs} -c 12 -j 3")
    (out / "figures.json").write_text(json.dumps(figures, indent=1))
    return 0


def add_parser(sub) -> None:
    s = sub.add_parser("gen-vanilla", help="vanilla proofs of every proof kind (and a daemon config) for a stress run")
    s.add_argument("--sector-size", default="2KiB")
    s.add_argument("--out", required=True, help="folder for the .cvp files, their JSON views, keys and cuzk.toml")
    s.add_argument("--kinds", default="porep,window-post,winning-post", help="which proof kinds (comma-separated)")
    s.add_argument("--window-sectors", type=int, default=2, help="sectors in the WindowPoSt partition")
    s.add_argument("--keys", action="store_true", help="also make development keys and the daemon's cuzk.toml")
    s.add_argument("--backend", default="cpu", choices=["cpu", "gpu"], help="where the keys' setup runs and the daemon proves")
    s.add_argument("--winning-deadline", default="25s", help="the WinningPoSt circuit's deadline (0 = none)")
    s.set_defaults(fn=cmd_gen_vanilla)
