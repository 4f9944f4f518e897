"""The ``cuzk`` command line.

Verbs follow snarkjs' argument order where they overlap, so one tool can stand in for the other:
``cuzk prove ZKEY WTNS PROOF PUBLIC`` and ``cuzk verify VKEY PUBLIC PROOF``.

Exit status: 0 success; 1 a proof that does not verify or a witness that violates the circuit (a
daemon job that FAILED); 2 bad input or usage (a one-line message on stderr, never a traceback); 3 a
daemon job that has not finished (``--timeout-ms`` passed: TIMEOUT) or was cancelled (``await``,
``prove-remote``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from .. import CuzkError, __version__

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_UNFINISHED = 0, 1, 2, 3


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


def load_proof(path: str, curve):
    """proof.json, or the curve's binary proof (bellperson's 192 bytes on BLS12-381, EVM's 256 on BN254)."""
    from ..groth16 import formats

    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise CuzkError(f"{path}: cannot open: {e.strerror}") from None
    if size == curve.proof_bytes:
        with open(path, "rb") as fh:
            data = fh.read()
        if not data.lstrip().startswith(b"{"):
            return formats.Proof.from_bytes(data, curve, path)
    return formats.read_proof_json(path, curve)


def _curve(name: str):
    """The curve named by a --curve option; an unknown name is a usage error (one line), not a traceback."""
    from .. import curves

    try:
        return curves.get(name)
    except curves.CurveError as e:
        raise CuzkError(f"--curve: {e}") from None


def _python_circuit(spec: str, params: str | None):
    """The Python circuit a ``package.module:ClassName`` argument and its --circuit-params name."""
    from ..circuit.circuit import CircuitSpec

    return CircuitSpec.parse(spec, params or "").load()


def _read_json(path: str):
    import json

    try:
        with open(path, "rb") as fh:
            return json.loads(fh.read().decode("utf-8"))
    except OSError as e:
        raise CuzkError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise CuzkError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise CuzkError(f"{path}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None


def _python_inputs(circuit, path: str, partition: int | None):
    """One partition's inputs from an inputs JSON file (``--partition`` picks one of several)."""
    obj = _read_json(path)
    parts = circuit.partition_inputs(obj)
    if partition is None:
        if len(parts) != 1:
            raise CuzkError(
                f"{path}: the inputs make {len(parts)} partitions; pick one with --partition I (or prove through the daemon)"
            )
        partition = 0
    if not 0 <= partition < len(parts):
        raise CuzkError(f"--partition: {partition} is not one of the {len(parts)} partitions of {path}")
    circuit.parse_inputs(parts[partition])  # bad inputs: a one-line error before any work
    return parts[partition]


def _python_witness(circuit, path: str, partition: int | None):
    from ..circuit.circuit import record, witness

    rec = record(circuit)
    return witness(circuit, _python_inputs(circuit, path, partition), rec.layout), rec


# ---------------------------------------------------------------------------------------------
# verbs


def cmd_prove(a) -> int:
    from ..backends import get_backend
    from ..groth16 import formats, prover
    from ..r1cs.wtns import read_wtns
    from .config import apply_switches

    apply_switches(a, "prove")
    steps = _Steps(["load key", "load witness", "prove", "write"], a.quiet)
    try:
        steps.step("load key")
        py = _python_circuit(a.circuit, a.circuit_params) if a.circuit else None
        if py is not None and not _is_zkey(a.zkey):
            from ..circuit.circuit import record
            from ..groth16 import params

            pk = params.read_params(a.zkey, record(py).pce)
        else:
            pk = load_proving_key(a.zkey, a.r1cs)
        steps.done()
        steps.step("load witness")
        if py is not None:
            w, _rec = _python_witness(py, a.wtns, a.partition)
            if a.wtns_out:
                from ..r1cs.wtns import write_wtns

                write_wtns(a.wtns_out, w, pk.curve)
        else:
            w = read_wtns(a.wtns, curve=pk.curve, expected_what=f"the key {a.zkey}")
        if w.shape[0] != pk.n_vars:
            raise CuzkError(f"{a.wtns}: witness has {w.shape[0]} values, the key {a.zkey} is for a circuit of {pk.n_vars} wires")
        steps.done()
        steps.step("prove")
        res = prover.prove(pk, w, get_backend(a.backend), label=os.path.basename(a.wtns))
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
    public = formats.read_public_json(a.public, vk.curve, check_range=False)
    proof = load_proof(a.proof, vk.curve)
    if len(public) != vk.n_public:
        print(f"INVALID: {a.public} has {len(public)} public signals, the key expects {vk.n_public}")
        return EXIT_INVALID
    ok = verifier.verify(vk, public, proof)
    print("OK" if ok else "INVALID")
    return EXIT_OK if ok else EXIT_INVALID


def cmd_setup(a) -> int:
    from ..circuit.circuit import looks_like_spec
    from ..groth16 import formats, params, setup, zkey
    from ..r1cs.r1cs import read_r1cs
    from ..timing import Timer
    from .config import apply_switches

    apply_switches(a, "setup")
    if looks_like_spec(a.r1cs):
        from ..circuit.circuit import record
        from ..r1cs.r1cs import write_r1cs

        py = _python_circuit(a.r1cs, a.circuit_params)
        rec = record(py)
        rc = _Recorded(rec.pce, py.curve_)
        base = type(py).__name__.lower()
        if a.r1cs_out:
            write_r1cs(a.r1cs_out, rec.pce, rec.layout.n_inputs - 1, 0, 0)
        what = f"{a.r1cs}"
    else:
        rc = read_r1cs(a.r1cs)
        base = os.path.splitext(a.r1cs)[0]
        what = a.r1cs
    if a.format == "bellperson" and not rc.curve.bellperson:
        raise CuzkError(f"{what}: the circuit is over {rc.curve}; bellperson parameters exist only for BLS12-381")
    timer = Timer("setup")
    backend = a.backend
    from ..backends import gpu_available

    if backend == "auto":
        backend = "gpu" if gpu_available() else "cpu"
    if backend == "gpu":
        if not gpu_available():
            raise CuzkError("--backend gpu: no CUDA GPU visible (CuPy missing or no device)")
        from ..backends.gpu import setup as gpu_setup

        pk = gpu_setup.setup(rc.pce, style=a.format, timer=timer)
    else:
        try:
            pk = setup.setup(rc.pce, style=a.format, timer=timer)
        except ValueError as e:
            raise CuzkError(f"{what}: {e}") from None
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
    print(f"wrote {out} and {vk_out} ({pk.curve}, domain 2^{pk.domain_log}, {pk.n_vars} wires, {t['total'] / 1e3:.1f} s)")
    return EXIT_OK


class _Recorded:
    """A Python circuit's recording where the verbs expect a read .r1cs (its PCE and curve)."""

    def __init__(self, pce, curve):
        self.pce, self.curve = pce, curve
        self.n_wires, self.n_constraints = pce.n_wires, pce.n_constraints


def cmd_check(a) -> int:
    from ..circuit.circuit import looks_like_spec
    from ..r1cs.r1cs import read_r1cs
    from ..r1cs.wtns import read_wtns

    if looks_like_spec(a.r1cs):
        from ..circuit.circuit import check, record

        py = _python_circuit(a.r1cs, a.circuit_params)
        n = record(py).layout.n_constraints
        where = check(py, _python_inputs(py, a.wtns, a.partition))
        if where is None:
            print(f"OK: all {n} constraints satisfied")
            return EXIT_OK
        print(f"UNSATISFIED: {where} is violated")
        return EXIT_INVALID
    rc = read_r1cs(a.r1cs)
    w = read_wtns(a.wtns, expected_wires=rc.n_wires, curve=rc.curve, expected_what=f"the circuit {a.r1cs}")
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
        _print_kv(
            [
                ("file", a.file),
                ("kind", f"circom r1cs ({rc.curve})"),
                ("constraints", rc.n_constraints),
                ("wires", rc.n_wires),
                ("public outputs", rc.n_pub_out),
                ("public inputs", rc.n_pub_in),
                ("private inputs", rc.n_prv_in),
                ("labels", rc.n_labels),
                ("domain", f"2^{rc.domain_log} = {1 << rc.domain_log} (snarkjs: constraints + public + 1 rows)"),
                ("nonzeros A/B/C", f"{p.A.nnz} / {p.B.nnz} / {p.C.nnz}"),
                (
                    "nonzeros per row",
                    f"{p.A.nnz / max(1, p.n_constraints):.2f} / {p.B.nnz / max(1, p.n_constraints):.2f} / {p.C.nnz / max(1, p.n_constraints):.2f}",
                ),
                ("wires in A", f"{int(da.sum())} ({100 * da.mean():.1f}%)"),
                ("wires in B", f"{int(db.sum())} ({100 * db.mean():.1f}%)"),
            ]
        )
    elif magic == b"zkey":
        from ..groth16 import zkey

        pk = zkey.read_zkey(a.file)
        inf = {k: int((~pk.nonzero_mask(k)).sum()) for k in ("a", "b1", "b2")}
        _print_kv(
            [
                ("file", a.file),
                ("kind", f"snarkjs Groth16 zkey ({pk.curve})"),
                ("wires", pk.n_vars),
                ("public signals", pk.n_public),
                ("domain", f"2^{pk.domain_log} = {pk.domain_size}"),
                ("coefficients A/B", f"{pk.A.nnz} / {pk.B.nnz}"),
                (
                    "points A/B1/B2/L/H",
                    f"{pk.count('a')} / {pk.count('b1')} / {pk.count('b2')} / {pk.count('l')} / {pk.count('h')}",
                ),
                ("A/B1/B2 at infinity", f"{inf['a']} / {inf['b1']} / {inf['b2']}"),
                ("SRS bytes", pk.raw_bytes()),
            ]
        )
    elif magic == b"wtns":
        from ..r1cs.wtns import read_witness

        wit = read_witness(a.file)
        _print_kv([("file", a.file), ("kind", f"circom witness ({wit.curve})"), ("values", wit.values.shape[0])])
    else:
        from ..groth16.params import params_layout
        from ..r1cs.binfile import FormatError

        try:
            lay = params_layout(a.file)
        except FormatError as e:
            raise CuzkError(
                f"{a.file}: unrecognised file (magic {magic!r}); expected .r1cs, .zkey, .wtns, or bellperson .params / .vk ({e})"
            ) from None
        if lay.get("vk_only"):
            _print_kv([("file", a.file), ("kind", "bellperson verifying key (BLS12-381)"), ("public inputs", lay["ic"] - 1)])
        else:
            _print_kv(
                [
                    ("file", a.file),
                    ("kind", "bellperson Groth16 parameters (BLS12-381)"),
                    ("public inputs", lay["ic"] - 1),
                    ("private wires (l)", lay["l"]),
                    ("domain", f"{lay['h'] + 1} (h has {lay['h']} points)"),
                    ("points a / b_g1 / b_g2", f"{lay['a']} / {lay['b1']} / {lay['b2']}"),
                    ("file bytes", lay["bytes"]),
                ]
            )
    return EXIT_OK


def cmd_witness(a) -> int:
    from ..circuit.circuit import looks_like_spec
    from ..r1cs.witness import WitnessCalculator, load_inputs_json
    from ..r1cs.wtns import write_wtns

    if looks_like_spec(a.wasm):
        py = _python_circuit(a.wasm, a.circuit_params)
        w, _rec = _python_witness(py, a.input, a.partition)
        write_wtns(a.wtns, w, py.curve_)
        return EXIT_OK
    calc = WitnessCalculator(a.wasm)
    write_wtns(a.wtns, calc.calculate(load_inputs_json(a.input)), calc.curve)
    return EXIT_OK


def cmd_synth_circuit(a) -> int:
    from ..r1cs import synthetic
    from ..r1cs.r1cs import write_r1cs
    from ..r1cs.wtns import write_wtns

    curve = _curve(a.curve)
    n = a.constraints if a.constraints else synthetic.fit_domain(a.shape, a.domain)
    c = synthetic.make(a.shape, n, curve=curve)
    os.makedirs(a.output, exist_ok=True)
    write_r1cs(os.path.join(a.output, "circuit.r1cs"), c.pce, c.n_pub_out, c.n_pub_in, c.n_prv_in)
    write_wtns(os.path.join(a.output, "witness.wtns"), c.witness, curve)
    print(f"wrote {a.output}/circuit.r1cs and witness.wtns ({curve}, {c.pce.n_constraints} constraints, {c.pce.n_wires} wires)")
    return EXIT_OK


def cmd_export_calldata(a) -> int:
    """The arguments of a Solidity verifier's verifyProof call, exactly as `snarkjs zkey export
    soliditycalldata PUBLIC PROOF` prints them."""
    from ..groth16 import formats

    public = formats.read_public_json(a.public, check_range=False)
    if a.proof.endswith(".json") or _looks_json(a.proof):
        proof = formats.read_proof_json(a.proof)
    else:
        proof = load_proof(a.proof, _curve(a.curve))
    print(formats.solidity_calldata(proof, public))
    return EXIT_OK


def _looks_json(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(64).lstrip()[:1] == b"{"
    except OSError as e:
        raise CuzkError(f"{path}: cannot open: {e.strerror}") from None


def _print_timings(t: dict[str, float]) -> None:
    width = max([10] + [len(k) for k in t])
    for k, v in t.items():
        print(f"  {k:<{width}} {v:10.1f} ms")


def cmd_demo(a) -> int:
    """Set up a built-in circuit, prove it through a daemon on a temporary unix socket, verify, print
    the timings, shut the daemon down."""
    import shutil
    import tempfile

    from ..engine.config import load_config
    from ..engine.devcircuit import make_dev_circuit
    from ..groth16 import formats, verifier
    from ..server.client import Client
    from ..server.daemon import Daemon
    from ..server.logs import setup_logging
    from .config import overrides

    log_n = a.domain
    tmp = tempfile.mkdtemp(prefix="cuzk-demo-", dir="/tmp")  # short: unix socket paths are limited to 107 bytes
    try:
        t = time.perf_counter()
        from .. import curves

        curve = curves.get(a.curve)
        dc = make_dev_circuit(os.path.join(tmp, "circuit"), "hash", log_n=log_n, curve=curve.name)
        print(
            f"circuit: hash-{dc.n_constraints} ({curve}, {dc.n_constraints} constraints, {dc.n_wires} wires, "
            f"domain 2^{dc.domain_log})"
        )
        print(f"setup:   {time.perf_counter() - t:.2f} s (development keys)")
        setup_logging("warning")
        cfg = load_config(
            overrides=overrides(a)
            | {
                "daemon.state_dir": os.path.join(tmp, "state"),
                "daemon.listen": f"unix://{tmp}/cuzk.sock",
                "gpus.backend": a.backend,
                "registration.roots": [tmp],
            }
        )
        with Daemon(cfg) as d, Client(d.address) as c:
            print(f"daemon:  listening on {d.address} ({d.engine.backend_name} backend)")
            c.register("demo-hash", dc.r1cs, zkey=dc.key)
            with open(dc.wtns, "rb") as fh:
                res = c.prove("demo-hash", witness=fh.read(), request_id="demo-1")
            vk = formats.read_vk_json(os.path.join(tmp, "circuit", "verification_key.json"))
            proof = formats.Proof.from_bytes(res.proofs[0], vk.curve, "proof from the daemon")
            ok = verifier.verify(vk, res.public[0], proof) and formats.proof_from_json(res.proof_json[0], curve=vk.curve) == proof
            print(
                f"prove:   {res.timings['total_ms'] / 1e3:.3f} s through the daemon on the {res.backend} backend; "
                f"verify: {'OK' if ok else 'INVALID'}"
            )
            _print_timings(res.timings | {k: v for k, v in res.phases.items() if k not in ("total",)})
            print(f"proof ({len(res.proofs[0])} bytes): {res.proofs[0].hex()[:64]}...")
        print("daemon:  stopped")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return EXIT_OK if ok else EXIT_INVALID


# ---------------------------------------------------------------------------------------------
# daemon verbs


def _client(a):
    from ..server.client import Client

    return Client(
        a.addr,
        token=getattr(a, "token", None),
        ca=getattr(a, "ca", None),
        cert=getattr(a, "cert", None),
        key=getattr(a, "key", None),
    )


def _inputs(paths: list[str], by_reference: bool = False) -> list:
    """Each partition's input read from its file, or (``by_reference``) named by its path on the daemon's
    side ([inputs] roots): a .cvp vanilla proof by its name, anything else as a .wtns witness."""
    if by_reference:
        return [("vanilla_proof_path" if p.endswith(".cvp") else "witness_path", os.path.abspath(p)) for p in paths]
    out = []
    for p in paths:
        try:
            with open(p, "rb") as fh:
                data = fh.read()
        except OSError as e:
            raise CuzkError(f"{p}: cannot read: {e.strerror}") from None
        if data[:4] == b"wtns":
            out.append(data)
        elif data[:8] == b"cuzk-cvp":  # a vanilla proof (cuzk.filecoin.vanilla): the circuit parses the bytes
            out.append(("vanilla", data))
        elif p.endswith(".json") or data.lstrip()[:1] == b"{":
            try:
                out.append(data.decode("utf-8"))
            except UnicodeDecodeError:
                raise CuzkError(f"{p}: not UTF-8 JSON") from None
        else:
            raise CuzkError(f"{p}: neither a .wtns witness, an inputs .json file nor a .cvp vanilla proof")
    return out


def cmd_daemon(a) -> int:
    from ..engine.config import load_config, reference_text
    from ..server.daemon import run
    from ..server.logs import setup_logging
    from .config import overrides

    if a.print_config:
        sys.stdout.write(reference_text())
        return EXIT_OK
    ov = overrides(a)  # --set KEY=VALUE, then the named options
    if a.listen:
        ov["daemon.listen"] = a.listen
    if a.log_level:
        ov["logging.level"] = a.log_level
    if a.state_dir:
        ov["daemon.state_dir"] = a.state_dir
    cfg = load_config(a.config, ov)
    setup_logging(cfg.logging.level, cfg.logging.format, cfg.logging.file)
    return run(cfg)


def cmd_submit(a) -> int:
    with _client(a) as c:
        r = c.submit(a.circuit, partitions=_inputs(a.inputs, a.by_reference), priority=a.priority, request_id=a.request_id or "")
    print(r.job_id)
    if r.duplicate:
        sys.stderr.write(f"cuzk: request_id {a.request_id!r} was submitted before: job {r.job_id} ({r.status})\n")
    return EXIT_OK


def _write_result(a, res) -> None:
    from ..groth16 import formats

    if a.proof:
        obj = res.proof_json[0] if len(res.proof_json) == 1 else res.proof_json
        formats._dump(a.proof, obj)
    if a.public:
        pub = res.public[0] if len(res.public) == 1 else res.public
        formats._dump(a.public, [str(x) for x in pub] if len(res.public) == 1 else [[str(x) for x in p] for p in pub])
    if a.proof_bin:
        with open(a.proof_bin, "wb") as fh:
            fh.write(res.proof)


def _report(a, res) -> int:
    if res.ok:
        _write_result(a, res)
        if a.verbose:
            print(f"{res.status} job {res.job_id} ({len(res.proofs)} partition{'s' * (len(res.proofs) != 1)}, {res.backend})")
            _print_timings(res.timings)
        return EXIT_OK
    _err(f"job {res.job_id}: {res.status}" + (f": {res.error}" if res.error else ""))
    return EXIT_UNFINISHED if res.status in ("TIMEOUT", "CANCELLED") else EXIT_INVALID


def cmd_await(a) -> int:
    with _client(a) as c:
        res = c.await_proof(a.job_id, timeout_ms=a.timeout_ms)
    return _report(a, res)


def cmd_prove_remote(a) -> int:
    with _client(a) as c:
        res = c.prove(
            a.circuit,
            partitions=_inputs([a.input] + (a.more or [])),
            priority=a.priority,
            request_id=a.request_id or "",
            timeout_ms=a.timeout_ms,
            check=False,
        )
    return _report(a, res)


def cmd_cancel(a) -> int:
    with _client(a) as c:
        r = c.cancel(a.job_id)
    if r["cancelled"]:
        print(f"cancelled job {a.job_id}" + (" (it was running; stopped at the next stage boundary)" if r["was_running"] else ""))
    else:
        print(f"job {a.job_id} had already finished: {r['status']}")
    return EXIT_OK


def cmd_status(a) -> int:
    import json as _json

    with _client(a) as c:
        s = c.status()
    s.pop("_pb", None)
    if a.json:
        print(_json.dumps(s, indent=1))
        return EXIT_OK
    cnt = s["counters"]
    print(
        f"uptime {s['uptime_secs']:.0f} s, backend {s['backend']}{' (draining)' if s['draining'] else ''}; "
        f"completed {cnt['total_completed']}, failed {cnt['total_failed']}, cancelled {cnt['total_cancelled']}; "
        f"rss {s['memory']['rss'] / 2**20:.0f} MiB, working memory {s['memory']['working_used'] / 2**20:.0f}"
        f"/{s['memory']['working_budget'] / 2**20:.0f} MiB"
    )
    for w in s["workers"]:
        state = f"proving {w['current_circuit']} ({w['current_job'][:8]})" if w["current_job"] else "idle"
        mem = f", {w['memory_free'] / 2**20:.0f}/{w['memory_total'] / 2**20:.0f} MiB free" if w["backend"] == "gpu" else ""
        print(f"  worker {w['worker_id']} [{w['device']}] {w['name']}{mem}: {state}, busy {100 * w['busy_ratio']:.0f}%")
    for q in s["queues"]:
        print(f"  queue {q['circuit_id']}: pending {q['pending']}, batching {q['batching']}, in progress {q['in_progress']}")
    print("  stages: " + ", ".join(f"{k} {v['in_flight']}/{v['capacity']}" for k, v in s["stages"].items()))
    for e in s["srs"]:
        print(
            f"  srs {e['circuit_id']}: {e['tier']} {e['size_bytes'] / 2**20:.1f} MiB, refs {e['ref_count']}"
            + (f", on {','.join(e['hot_devices'])}" if e["hot_devices"] else "")
        )
    return EXIT_OK


def cmd_gpu_info(a) -> int:
    from ..backends import gpu

    if not gpu.available():
        raise CuzkError("no CUDA GPU visible (CuPy missing or no device); the CPU backend is used")
    from ..backends.gpu import build

    info = build.info()
    _print_kv(
        [
            ("device", info["device"]),
            ("architecture", info["arch"]),
            ("NVRTC", info["nvrtc"]),
            ("options", " ".join(info["options"])),
            ("cache folder", info["cache_dir"]),
        ]
    )
    for name, m in info["modules"].items():
        print(f"  module {name:<8} {'cached' if m['cached'] else 'not cached (compiled on first use)'}  {m['cubin']}")
    return EXIT_OK


def _py_args(s, partition: bool = True) -> None:
    s.add_argument("--circuit-params", metavar="JSON", help="a Python circuit's parameters, a JSON object")
    if partition:
        s.add_argument("--partition", type=int, help="a multi-partition Python circuit: the partition to use")


def build_parser() -> argparse.ArgumentParser:
    from .config import add_parsers as add_config_parsers
    from .config import add_set_option

    p = argparse.ArgumentParser(prog="cuzk", description="Groth16 prover, verifier and proving daemon (BN254, BLS12-381)")
    p.add_argument("--version", action="version", version=f"cuzk {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    s = sub.add_parser("prove", help="prove: cuzk prove ZKEY WTNS PROOF PUBLIC")
    s.add_argument("zkey", help="proving key: snarkjs .zkey or bellperson .params (with --r1cs)")
    s.add_argument("wtns", help="witness (.wtns)")
    s.add_argument("proof", help="output proof.json")
    s.add_argument("public", help="output public.json")
    s.add_argument("--r1cs", help="the circuit, required with bellperson .params")
    s.add_argument("--circuit", help="a Python circuit package.module:ClassName: then WTNS is its inputs JSON")
    _py_args(s)
    s.add_argument("--wtns-out", help="with --circuit: also write the computed witness (.wtns)")
    s.add_argument("--proof-bin", help="also write the binary proof here (BLS12-381: bellperson's 192 bytes; BN254: EVM's 256)")
    s.add_argument("--backend", default="cpu", choices=["cpu", "gpu", "auto"])
    s.add_argument("-v", "--verbose", action="store_true", help="print the phase timings")
    s.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    s.add_argument("--config", help="a daemon config file: its optimization switches apply (`cuzk config switches`)")
    add_set_option(s)
    s.set_defaults(fn=cmd_prove)

    s = sub.add_parser("verify", help="verify: cuzk verify VKEY PUBLIC PROOF (exit 0 iff valid)")
    s.add_argument("vkey", help="verification_key.json or bellperson .vk")
    s.add_argument("public", help="public.json")
    s.add_argument("proof", help="proof.json or a binary proof (192 bytes on BLS12-381, 256 on BN254)")
    s.set_defaults(fn=cmd_verify)

    s = sub.add_parser("export", help="export: cuzk export calldata PUBLIC PROOF (snarkjs zkey export soliditycalldata)")
    s.add_argument("what", choices=["calldata"])
    s.add_argument("public", help="public.json")
    s.add_argument("proof", help="proof.json (or a binary proof, with --curve)")
    s.add_argument("--curve", default="bn254", help="the curve of a binary proof (default bn254)")
    s.set_defaults(fn=cmd_export_calldata)

    s = sub.add_parser("setup", help="development setup: keys for a circuit from fresh toxic waste")
    s.add_argument("r1cs", help="circuit: a .r1cs, or a Python circuit package.module:ClassName")
    _py_args(s, partition=False)
    s.add_argument("--r1cs-out", help="a Python circuit: also write its recording as a .r1cs")
    s.add_argument("-o", "--output", help="proving key to write (default CIRCUIT.zkey / CIRCUIT.params)")
    s.add_argument("--vkey", help="verification key to write (default verification_key.json / .vk)")
    s.add_argument("--format", default="snarkjs", choices=["snarkjs", "bellperson"])
    s.add_argument(
        "--backend",
        default="cpu",
        choices=["cpu", "gpu", "auto"],
        help="gpu: fixed-base kernels on the device (minutes for a 2^27 key instead of hours)",
    )
    s.add_argument("--config", help="a daemon config file: its optimization switches apply (`cuzk config switches`)")
    add_set_option(s)
    s.set_defaults(fn=cmd_setup)

    s = sub.add_parser("check", help="check a witness against a circuit; report the first unsatisfied constraint")
    s.add_argument("r1cs", help="a .r1cs, or a Python circuit package.module:ClassName")
    s.add_argument("wtns", help="the witness (.wtns), or the Python circuit's inputs JSON")
    _py_args(s)
    s.add_argument("--sym", help="circom .sym file, to name the signals of a failing constraint")
    s.set_defaults(fn=cmd_check)

    s = sub.add_parser("info", help="describe a .r1cs, .zkey or .wtns file")
    s.add_argument("file")
    s.set_defaults(fn=cmd_info)

    s = sub.add_parser("witness", help="compute a witness: cuzk witness CIRCUIT.wasm INPUT.json OUT.wtns")
    s.add_argument("wasm", help="circom's .wasm, or a Python circuit package.module:ClassName")
    s.add_argument("input")
    s.add_argument("wtns")
    _py_args(s)
    s.set_defaults(fn=cmd_witness)

    s = sub.add_parser("synth-circuit", help="write a synthetic benchmark circuit and its witness")
    s.add_argument(
        "--shape",
        default="chain",
        choices=["chain", "hash", "porep", "dense"],
        help="chain: squaring chain (dense wires); hash: x^5 rounds with linear layers; "
        "porep: Filecoin PoRep statistics (0/1-heavy witness); dense: porep structure, random values",
    )
    s.add_argument("--constraints", type=int, default=0, help="constraint count (default: fill --domain)")
    s.add_argument("--domain", type=int, default=12, help="log2 domain to fill when --constraints is not given")
    s.add_argument("--curve", default="bls12_381", help="bls12_381 (default) or bn254")
    s.add_argument("-o", "--output", required=True, help="output folder")
    s.set_defaults(fn=cmd_synth_circuit)

    s = sub.add_parser("gpu", help="GPU backend: `cuzk gpu info` (device, compiler options, kernel cache)")
    s.add_argument("what", choices=["info"])
    s.set_defaults(fn=cmd_gpu_info)

    s = sub.add_parser("demo", help="set up a built-in circuit, prove and verify it through a temporary daemon")
    s.add_argument("--domain", type=int, default=12)
    s.add_argument("--backend", default="auto", choices=["cpu", "gpu", "auto"])
    s.add_argument("--curve", default="bls12_381", help="bls12_381 (default) or bn254")
    add_set_option(s)
    s.set_defaults(fn=cmd_demo)

    s = sub.add_parser("daemon", help="run the proving daemon (gRPC cuzk.daemon.v1 and Curio's cuzk.v1) until SIGTERM")
    s.add_argument("--config", help="TOML config file (see cuzk/engine/cuzk.example.toml); default: built-in defaults")
    s.add_argument("--listen", help="override daemon.listen: unix:///path.sock or host:port")
    s.add_argument("--log-level", help="override logging.level (debug, info, warning, error)")
    s.add_argument("--state-dir", help="override daemon.state_dir")
    s.add_argument("--print-config", action="store_true", help="print every config key with its default and exit")
    add_set_option(s)
    s.set_defaults(fn=cmd_daemon)

    def client_opts(s):
        s.add_argument("--addr", default=None, help="daemon address (default: $CUZK_ADDR, else the default daemon.listen)")
        s.add_argument("--token", default=None, help="bearer token (default: $CUZK_TOKEN)")
        s.add_argument("--ca", default=None, help="CA bundle (PEM): TLS to a TCP address (default: $CUZK_CA)")
        s.add_argument("--cert", default=None, help="client certificate (PEM), for mutual TLS")
        s.add_argument("--key", default=None, help="client certificate's private key (PEM)")

    def result_opts(s):
        s.add_argument("--proof", help="write proof.json (a JSON array for several partitions)")
        s.add_argument("--public", help="write public.json")
        s.add_argument("--proof-bin", help="write the 192-byte proofs, concatenated in partition order")
        s.add_argument("--timeout-ms", type=int, default=0, help="stop waiting after this long (0 = until done)")
        s.add_argument("-v", "--verbose", action="store_true", help="print the status and timings")

    s = sub.add_parser("submit", help="queue a proof: cuzk submit CIRCUIT INPUT... (prints the job id)")
    s.add_argument("circuit", help="registered circuit id")
    s.add_argument("inputs", nargs="+", help="one .wtns witness or inputs .json per partition")
    s.add_argument("--priority", default="", help="low, normal, high, critical (default: the circuit's)")
    s.add_argument("--request-id", help="idempotency key: resubmitting it returns the same job")
    s.add_argument(
        "--by-reference",
        action="store_true",
        help="send the inputs' paths, not their bytes: files the daemon reads under its [inputs] roots "
        "(a cluster's shared folder)",
    )
    client_opts(s)
    s.set_defaults(fn=cmd_submit)

    s = sub.add_parser("await", help="wait for a job: cuzk await JOB_ID [--proof F --public F] (exit 3: TIMEOUT or CANCELLED)")
    s.add_argument("job_id")
    result_opts(s)
    client_opts(s)
    s.set_defaults(fn=cmd_await)

    s = sub.add_parser("prove-remote", help="prove through the daemon: cuzk prove-remote CIRCUIT INPUT PROOF PUBLIC")
    s.add_argument("circuit", help="registered circuit id")
    s.add_argument("input", help=".wtns witness or inputs .json (partition 0)")
    s.add_argument("proof", nargs="?", help="output proof.json")
    s.add_argument("public", nargs="?", help="output public.json")
    s.add_argument("--more", action="append", help="the input of the next partition (repeat for each)")
    s.add_argument("--priority", default="")
    s.add_argument("--request-id")
    s.add_argument("--proof-bin", help="write the 192-byte proofs, concatenated in partition order")
    s.add_argument("--timeout-ms", type=int, default=0)
    s.add_argument("-v", "--verbose", action="store_true")
    client_opts(s)
    s.set_defaults(fn=cmd_prove_remote)

    s = sub.add_parser("cancel", help="cancel a queued or running job")
    s.add_argument("job_id")
    client_opts(s)
    s.set_defaults(fn=cmd_cancel)

    s = sub.add_parser("status", help="daemon status: workers, queues, stages, SRS tiers")
    s.add_argument("--json", action="store_true", help="the full status snapshot as JSON")
    client_opts(s)
    s.set_defaults(fn=cmd_status)

    from .filecoin import add_parsers as add_filecoin_parsers
    from .porep import add_parsers as add_porep_parsers

    add_filecoin_parsers(sub)
    add_porep_parsers(sub)
    from .journal import add_parsers as add_journal_parsers  # cuzk journal check|salvage (issue 19)

    add_journal_parsers(sub)
    __import__("cuzk.cli.token", fromlist=["add_parsers"]).add_parsers(sub)  # cuzk token add|list|revoke (issue 19)
    __import__("cuzk.cli.circuits", fromlist=["add_parsers"]).add_parsers(sub)  # cuzk register|circuits (issue 19)
    __import__("cuzk.cli.cluster", fromlist=["add_parsers"]).add_parsers(sub)  # cuzk cluster status (issue 23)
    __import__("cuzk.bench.tune", fromlist=["add_parsers"]).add_parsers(sub)  # cuzk tune (issue 22)
    add_config_parsers(sub)  # cuzk config switches (issue 22)
    return p


def run_verb(fn, args) -> int:
    """Run a verb; user mistakes become one line on stderr and exit 2, never a traceback."""
    try:
        return fn(args)
    except CuzkError as e:
        _err(str(e))
        return EXIT_USAGE
    except FileNotFoundError as e:
        _err(f"{e.filename}: no such file")
        return EXIT_USAGE
    except OSError as e:  # a directory given as a file, a permission, a full disk: one line (issue 19)
        _err(f"{e.filename}: {e.strerror}" if e.filename else f"{e.strerror or e}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _err("interrupted")
        return 130


def _check_args(args) -> str | None:
    """Arguments that would hang or mean nothing, as one line (issue 19): a negative --timeout-ms, a
    FIFO or socket named as a file (opening a FIFO waits for a writer)."""
    import stat

    t = getattr(args, "timeout_ms", None)
    if isinstance(t, int) and t < 0:
        return f"--timeout-ms: {t} is negative (0 waits until the job is done)"
    for name, v in vars(args).items():
        if name in ("addr", "listen"):
            continue
        for s in v if isinstance(v, list) else [v]:
            if not isinstance(s, str) or not s or "\0" in s:
                continue
            try:
                mode = os.stat(s).st_mode
            except (OSError, ValueError):
                continue
            if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
                return f"{s}: not a regular file (a {'FIFO' if stat.S_ISFIFO(mode) else 'socket'})"
    return None


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    bad = _check_args(args)
    if bad:
        _err(bad)
        return EXIT_USAGE
    return run_verb(args.fn, args)


if __name__ == "__main__":
    sys.exit(main())
