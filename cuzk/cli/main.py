"""The ``cuzk`` command line.

Verbs follow snarkjs' argument order where they overlap, so one tool can stand in for the other:
``cuzk prove ZKEY WTNS PROOF PUBLIC`` and ``cuzk verify VKEY PUBLIC PROOF``.

Exit status: 0 success; 1 a proof that does not verify or a witness that violates the circuit;
2 bad input or usage (a one-line message on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from .. import CuzkError, __version__

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


def _err(msg: str) -> None:
    sys.stderr.write(f"cuzk: error: {msg}\n")
    sys.stderr.flush()


class _Steps:
    """A progress bar over named steps; stays hidden unless the whole run takes over a second."""

    def __init__(self, names: list[str], quiet: bool = False):
        self.bar = None
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=len(names), delay=1.0, leave=False, unit="step", file=sys.stderr)

    def step(self, name: str) -> None:
        if self.bar is not None:
            self.bar.set_description(name)

    def done(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _is_zkey(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"zkey"
    except OSError as e:
        raise CuzkError(f"{path}: cannot open: {e.strerror}") from None


def load_proving_key(path: str, r1cs_path: str | None = None):
    """A .zkey, or bellperson .params (which need the circuit's .r1cs for the wire densities)."""
    from ..groth16 import params, zkey

    if _is_zkey(path):
        return zkey.read_zkey(path)
    if not r1cs_path:
        raise CuzkError(f"{path}: not a .zkey; bellperson .params need the circuit: pass --r1cs CIRCUIT.r1cs")
    from ..r1cs.r1cs import read_r1cs

    return params.read_params(path, read_r1cs(r1cs_path).pce)


def load_verifying_key(path: str):
    from ..groth16 import formats, params

    with open(path, "rb") as fh:
        head = fh.read(1).lstrip()
    if head in (b"{", b" ", b"\n"):
        return formats.read_vk_json(path)
    return params.read_vk(path)


def load_proof(path: str):
    from ..groth16 import formats

    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise CuzkError(f"{path}: cannot open: {e.strerror}") from None
    if size == formats.PROOF_BYTES:
        with open(path, "rb") as fh:
            data = fh.read()
        if not data.lstrip().startswith(b"{"):
            return formats.Proof.from_bytes(data, path)
    return formats.read_proof_json(path)


# ---------------------------------------------------------------------------------------------
# verbs


def cmd_prove(a) -> int:
    from ..groth16 import formats, prover
    from ..r1cs.wtns import read_wtns

    steps = _Steps(["load key", "load witness", "prove", "write"], a.quiet)
    try:
        steps.step("load key")
        pk = load_proving_key(a.zkey, a.r1cs)
        steps.done()
        steps.step("load witness")
        w = read_wtns(a.wtns)
        if w.shape[0] != pk.n_vars:
            raise CuzkError(f"{a.wtns}: witness has {w.shape[0]} values, the key {a.zkey} is for a circuit of {pk.n_vars} wires")
        steps.done()
        steps.step("prove")
        res = prover.prove(pk, w, backend=a.backend, label=os.path.basename(a.wtns))
        steps.done()
        steps.step("write")
        formats.write_proof_json(a.proof, res.proof)
        formats.write_public_json(a.public, res.public)
        if a.proof_bin:
            with open(a.proof_bin, "wb") as fh:
                fh.write(res.proof.to_bytes())
        steps.done()
    finally:
        steps.close()
    if a.verbose:
        _print_timings(res.timings)
    return EXIT_OK


def cmd_verify(a) -> int:
    from ..groth16 import formats, verifier

    vk = load_verifying_key(a.vkey)
    public = formats.read_public_json(a.public, check_range=False)
    proof = load_proof(a.proof)
    if len(public) != vk.n_public:
        print(f"INVALID: {a.public} has {len(public)} public signals, the key expects {vk.n_public}")
        return EXIT_INVALID
    ok = verifier.verify(vk, public, proof)
    print("OK" if ok else "INVALID")
    return EXIT_OK if ok else EXIT_INVALID


def cmd_setup(a) -> int:
    from ..groth16 import formats, params, setup, zkey
    from ..r1cs.r1cs import read_r1cs
    from ..timing import Timer

    rc = read_r1cs(a.r1cs)
    timer = Timer("setup")
    pk = setup.setup(rc.pce, style=a.format, timer=timer)
    base = os.path.splitext(a.r1cs)[0]
    if a.format == "snarkjs":
        out = a.output or base + ".zkey"
        zkey.write_zkey(out, pk)
        vk_out = a.vkey or os.path.join(os.path.dirname(out) or ".", "verification_key.json")
        formats.write_vk_json(vk_out, pk.vk)
    else:
        out = a.output or base + ".params"
        params.write_params(out, pk)
        vk_out = a.vkey or os.path.splitext(out)[0] + ".vk"
        params.write_vk(vk_out, pk.vk)
    t = timer.total()
    print(f"wrote {out} and {vk_out} (domain 2^{pk.domain_log}, {pk.n_vars} wires, {t['total'] / 1e3:.1f} s)")
    return EXIT_OK


def cmd_check(a) -> int:
    from ..r1cs.r1cs import read_r1cs
    from ..r1cs.wtns import read_wtns

    rc = read_r1cs(a.r1cs)
    w = read_wtns(a.wtns, expected_wires=rc.n_wires)
    bad = rc.pce.unsatisfied(w)
    if bad.size == 0:
        print(f"OK: all {rc.n_constraints} constraints satisfied")
        return EXIT_OK
    first = int(bad[0])
    desc = f"constraint {first}"
    if a.sym:
        from ..r1cs.sym import read_sym

        names = read_sym(a.sym)
        wires = set()
        for m in (rc.pce.A, rc.pce.B, rc.pce.C):
            wires.update(int(c) for c in m.cols[m.row_ptr[first] : m.row_ptr[first + 1]])
        signals = [names[wi] for wi in sorted(wires) if wi in names and wi != 0]
        if signals:
            desc += f" (signals {', '.join(signals)})"
    print(f"UNSATISFIED: {desc} is violated; {bad.size} of {rc.n_constraints} constraints fail")
    return EXIT_INVALID


def _print_kv(rows: list[tuple[str, object]]) -> None:
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


def cmd_info(a) -> int:
    with open(a.file, "rb") as fh:
        magic = fh.read(4)
    if magic == b"r1cs":
        from ..r1cs.r1cs import read_r1cs

        rc = read_r1cs(a.file)
        p = rc.pce
        da, db = p.A.column_density(), p.B.column_density()
        _print_kv([
            ("file", a.file), ("kind", "circom r1cs (BLS12-381)"), ("constraints", rc.n_constraints),
            ("wires", rc.n_wires), ("public outputs", rc.n_pub_out), ("public inputs", rc.n_pub_in),
            ("private inputs", rc.n_prv_in), ("labels", rc.n_labels),
            ("domain", f"2^{rc.domain_log} = {1 << rc.domain_log} (snarkjs: constraints + public + 1 rows)"),
            ("nonzeros A/B/C", f"{p.A.nnz} / {p.B.nnz} / {p.C.nnz}"),
            ("nonzeros per row", f"{p.A.nnz / max(1, p.n_constraints):.2f} / {p.B.nnz / max(1, p.n_constraints):.2f} / {p.C.nnz / max(1, p.n_constraints):.2f}"),
            ("wires in A", f"{int(da.sum())} ({100 * da.mean():.1f}%)"),
            ("wires in B", f"{int(db.sum())} ({100 * db.mean():.1f}%)"),
        ])
    elif magic == b"zkey":
        from ..groth16 import zkey

        pk = zkey.read_zkey(a.file)
        inf = {k: int((~pk.nonzero_mask(k)).sum()) for k in ("a", "b1", "b2")}
        _print_kv([
            ("file", a.file), ("kind", "snarkjs Groth16 zkey (BLS12-381)"), ("wires", pk.n_vars),
            ("public signals", pk.n_public), ("domain", f"2^{pk.domain_log} = {pk.domain_size}"),
            ("coefficients A/B", f"{pk.A.nnz} / {pk.B.nnz}"),
            ("points A/B1/B2/L/H", f"{pk.count('a')} / {pk.count('b1')} / {pk.count('b2')} / {pk.count('l')} / {pk.count('h')}"),
            ("A/B1/B2 at infinity", f"{inf['a']} / {inf['b1']} / {inf['b2']}"),
            ("SRS bytes", pk.raw_bytes()),
        ])
    elif magic == b"wtns":
        from ..r1cs.wtns import read_wtns

        w = read_wtns(a.file)
        _print_kv([("file", a.file), ("kind", "circom witness"), ("values", w.shape[0])])
    else:
        raise CuzkError(f"{a.file}: unrecognised file (magic {magic!r}); expected .r1cs, .zkey or .wtns")
    return EXIT_OK


def cmd_witness(a) -> int:
    from ..r1cs.witness import WitnessCalculator, load_inputs_json
    from ..r1cs.wtns import write_wtns

    calc = WitnessCalculator(a.wasm)
    write_wtns(a.wtns, calc.calculate(load_inputs_json(a.input)))
    return EXIT_OK


def cmd_synth_circuit(a) -> int:
    from ..r1cs import synthetic
    from ..r1cs.r1cs import write_r1cs
    from ..r1cs.wtns import write_wtns

    n = a.constraints if a.constraints else synthetic.fit_domain(a.shape, a.domain)
    c = synthetic.make(a.shape, n)
    os.makedirs(a.output, exist_ok=True)
    write_r1cs(os.path.join(a.output, "circuit.r1cs"), c.pce, c.n_pub_out, c.n_pub_in, c.n_prv_in)
    write_wtns(os.path.join(a.output, "witness.wtns"), c.witness)
    print(f"wrote {a.output}/circuit.r1cs and witness.wtns ({c.pce.n_constraints} constraints, {c.pce.n_wires} wires)")
    return EXIT_OK


def _print_timings(t: dict[str, float]) -> None:
    for k, v in t.items():
        print(f"  {k:<10} {v:10.1f} ms")


def cmd_demo(a) -> int:
    """Set up, prove and verify a built-in circuit; print the phase timings."""
    from ..groth16 import prover, setup, verifier
    from ..r1cs import synthetic

    log_n = a.domain
    c = synthetic.make("hash", synthetic.fit_domain("hash", log_n))
    print(f"circuit: {c.name} ({c.pce.n_constraints} constraints, {c.pce.n_wires} wires, domain 2^{log_n})")
    t = time.perf_counter()
    pk = setup.setup(c.pce)
    print(f"setup:   {time.perf_counter() - t:.2f} s")
    pk.load_all()
    res = prover.prove(pk, c.witness, backend=a.backend, label="demo")
    ok = verifier.verify(pk.vk, res.public, res.proof)
    print(f"prove:   {res.timings['total'] / 1e3:.3f} s on the {res.backend} backend; verify: {'OK' if ok else 'INVALID'}")
    _print_timings(res.timings)
    print(f"proof (192 bytes): {res.proof.to_bytes().hex()[:64]}...")
    return EXIT_OK if ok else EXIT_INVALID


def cmd_gpu_info(a) -> int:
    from .. import gpu

    if not gpu.available():
        raise CuzkError("no CUDA GPU visible (CuPy missing or no device); the CPU backend is used")
    from ..gpu import build

    info = build.info()
    _print_kv([("device", info["device"]), ("architecture", info["arch"]), ("NVRTC", info["nvrtc"]),
               ("options", " ".join(info["options"])), ("cache folder", info["cache_dir"])])
    for name, m in info["modules"].items():
        print(f"  module {name:<8} {'cached' if m['cached'] else 'not cached (compiled on first use)'}  {m['cubin']}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cuzk", description="Groth16 (BLS12-381) prover, verifier and proving daemon")
    p.add_argument("--version", action="version", version=f"cuzk {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    s = sub.add_parser("prove", help="prove: cuzk prove ZKEY WTNS PROOF PUBLIC")
    s.add_argument("zkey", help="proving key: snarkjs .zkey or bellperson .params (with --r1cs)")
    s.add_argument("wtns", help="witness (.wtns)")
    s.add_argument("proof", help="output proof.json")
    s.add_argument("public", help="output public.json")
    s.add_argument("--r1cs", help="the circuit, required with bellperson .params")
    s.add_argument("--proof-bin", help="also write the 192-byte bellperson-layout proof here")
    s.add_argument("--backend", default="cpu", choices=["cpu", "gpu", "auto"])
    s.add_argument("-v", "--verbose", action="store_true", help="print the phase timings")
    s.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    s.set_defaults(fn=cmd_prove)

    s = sub.add_parser("verify", help="verify: cuzk verify VKEY PUBLIC PROOF (exit 0 iff valid)")
    s.add_argument("vkey", help="verification_key.json or bellperson .vk")
    s.add_argument("public", help="public.json")
    s.add_argument("proof", help="proof.json or a 192-byte binary proof")
    s.set_defaults(fn=cmd_verify)

    s = sub.add_parser("setup", help="development setup: keys for a circuit from fresh toxic waste")
    s.add_argument("r1cs", help="circuit (.r1cs)")
    s.add_argument("-o", "--output", help="proving key to write (default CIRCUIT.zkey / CIRCUIT.params)")
    s.add_argument("--vkey", help="verification key to write (default verification_key.json / .vk)")
    s.add_argument("--format", default="snarkjs", choices=["snarkjs", "bellperson"])
    s.set_defaults(fn=cmd_setup)

    s = sub.add_parser("check", help="check a witness against a circuit; report the first unsatisfied constraint")
    s.add_argument("r1cs")
    s.add_argument("wtns")
    s.add_argument("--sym", help="circom .sym file, to name the signals of a failing constraint")
    s.set_defaults(fn=cmd_check)

    s = sub.add_parser("info", help="describe a .r1cs, .zkey or .wtns file")
    s.add_argument("file")
    s.set_defaults(fn=cmd_info)

    s = sub.add_parser("witness", help="compute a witness: cuzk witness CIRCUIT.wasm INPUT.json OUT.wtns")
    s.add_argument("wasm")
    s.add_argument("input")
    s.add_argument("wtns")
    s.set_defaults(fn=cmd_witness)

    s = sub.add_parser("synth-circuit", help="write a synthetic benchmark circuit and its witness")
    s.add_argument("--shape", default="chain", choices=["chain", "hash", "porep", "dense"],
                   help="chain: squaring chain (dense wires); hash: x^5 rounds with linear layers; "
                        "porep: Filecoin PoRep statistics (0/1-heavy witness); dense: porep structure, random values")
    s.add_argument("--constraints", type=int, default=0, help="constraint count (default: fill --domain)")
    s.add_argument("--domain", type=int, default=12, help="log2 domain to fill when --constraints is not given")
    s.add_argument("-o", "--output", required=True, help="output folder")
    s.set_defaults(fn=cmd_synth_circuit)

    s = sub.add_parser("gpu", help="GPU backend: `cuzk gpu info` (device, compiler options, kernel cache)")
    s.add_argument("what", choices=["info"])
    s.set_defaults(fn=cmd_gpu_info)

    s = sub.add_parser("demo", help="set up, prove and verify a built-in example circuit")
    s.add_argument("--domain", type=int, default=12)
    s.add_argument("--backend", default="cpu", choices=["cpu", "gpu", "auto"])
    s.set_defaults(fn=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except CuzkError as e:
        _err(str(e))
        return EXIT_USAGE
    except FileNotFoundError as e:
        _err(f"{e.filename}: no such file")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _err("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
