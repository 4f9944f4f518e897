"""Seeded, bounded fuzzing of every file format and request message (issue 19 item 7).

Each target gets a valid input (the committed circom fixture, a small dev circuit's bellperson params, a
2 KiB sector's C1 output and vanilla proof, the daemon's request messages) and a fixed number of mutants of
it: byte flips, truncations, inserted and deleted runs, and "length-field inflation" (an aligned u32/u64
overwritten with a huge value, which is what a header's count looks like). For every case:

- **no traceback**: the reader either returns or raises an *expected* error, which is a ``CuzkError``
  (our FormatError, InputError, C1Error, InvalidArgument, ... all derive from it) or a ``ValueError``
  (json's JSONDecodeError, UnicodeDecodeError), with a non-empty one-line message; anything else
  (IndexError, KeyError, TypeError, struct.error, OverflowError, MemoryError, RecursionError, ...) is
  a crash. Over gRPC: every answer is OK or a status other than UNKNOWN/INTERNAL with a one-line
  detail, and the daemon still answers GetStatus afterwards;
- **no hang**: each case runs under an interval timer (``CASE_SECONDS``), which raises in the test's
  thread if a case loops;
- **bounded allocation**: tracemalloc's peak per case stays below 64 x the input's size (at least 16 MiB,
  at most 64 MiB; numpy reports its buffers to tracemalloc; mapped files are not allocations);
- **no invalid proof accepted**: a mutated proof (JSON or binary) or verifying key that parses to
  something different from the original never verifies.

The seed is fixed (``SEED``), so a failure names a reproducible case: ``case <target>#<i>``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import fixture_dir

from cuzk import CuzkError

SEED = 19
CASES = int(os.environ.get("CUZK_FUZZ_CASES", "150"))  # per target (a few targets take a half or a quarter)
REQUEST_CASES = CASES
CASE_SECONDS = 10.0
MAX_ALLOC = 64 << 20  # allocation bound per case: ALLOC_PER_BYTE x the input, at least MIN_ALLOC_BOUND, at most this
MIN_ALLOC_BOUND = 16 << 20
ALLOC_PER_BYTE = 64
EX = fixture_dir("bls12_381")


class _Hang(Exception):
    pass


Field = tuple[int, int, str]  # a header count's (offset, width, "little"|"big")


def mutate(rng: random.Random, data: bytes, fields: list[Field] | None = None) -> bytes:
    """One random mutation (sometimes two stacked) of ``data``; ``fields``: the format's header counts,
    which inflation picks most of the time."""
    b = bytearray(data)
    for _ in range(1 + (rng.random() < 0.3)):
        n = len(b)
        op = 2 if fields and rng.random() < 0.4 else rng.randrange(6)
        if n == 0:
            return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
        if op == 0:  # flip a few bytes
            for _ in range(rng.randrange(1, 9)):
                b[rng.randrange(n)] ^= 1 << rng.randrange(8)
        elif op == 1:  # truncate
            del b[rng.randrange(n) :]
        elif op == 2:  # inflate a length field: a known header count, else any aligned u32/u64
            if fields and rng.random() < 0.8:
                pos, w, order = rng.choice(fields)
            else:
                w, order = rng.choice((4, 8)), "little"
                pos = rng.randrange(0, max(1, n - w + 1)) & ~(w - 1)
            if pos + w <= n:
                pow2 = 1 << rng.randrange(8, 32)
                v = rng.choice((0xFFFFFFFF, 0x80000000, pow2, pow2, rng.randrange(1 << 32)))
                if w == 8:
                    v = rng.choice((v, 1 << 62, (1 << 64) - 1))
                b[pos : pos + w] = v.to_bytes(w, order)
        elif op == 3:  # insert a run
            pos = rng.randrange(n + 1)
            b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
        elif op == 4:  # delete a run
            pos = rng.randrange(n)
            del b[pos : pos + rng.randrange(1, 64)]
        else:  # overwrite a byte with a structural character (for text formats)
            b[rng.randrange(n)] = ord(rng.choice('{}[]",:0123456789-eE.x\\ \n'))
    return bytes(b)


def _expected(e: BaseException) -> bool:
    return isinstance(e, (CuzkError, ValueError)) and not isinstance(e, RecursionError)


class Fuzzer:
    def __init__(self) -> None:
        self.cases = 0
        self.seconds = 0.0
        self.errors: list[str] = []

    def run(
        self, name: str, original: bytes, target: Callable[[bytes], object], n: int = CASES, fields: list[Field] | None = None
    ) -> None:
        rng = random.Random(f"{SEED}:{name}")
        bound = min(MAX_ALLOC, max(MIN_ALLOC_BOUND, ALLOC_PER_BYTE * len(original)))
        target(original)  # the valid input is accepted; and caches it fills are not counted against a case
        old = signal.signal(signal.SIGALRM, self._alarm)
        tracemalloc.start()
        t0 = time.perf_counter()
        try:
            for i in range(n):
                data = mutate(rng, original, fields)
                tracemalloc.reset_peak()
                base = tracemalloc.get_traced_memory()[0]  # caches filled by earlier cases are not this case's
                signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
                t = time.perf_counter()
                try:
                    target(data)
                except _Hang:
                    self.errors.append(f"case {name}#{i}: ran past {CASE_SECONDS}s")
                except BaseException as e:
                    msg = str(e)
                    if not _expected(e):
                        self.errors.append(f"case {name}#{i}: {type(e).__name__}: {msg[:200]}")
                    elif not msg or "\n" in msg.strip():
                        self.errors.append(f"case {name}#{i}: error message not one line: {msg[:200]!r}")
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                peak = tracemalloc.get_traced_memory()[1] - base
                if peak > bound:
                    self.errors.append(f"case {name}#{i}: allocated {peak >> 20} MiB (bound {bound >> 20} MiB)")
                if time.perf_counter() - t > CASE_SECONDS:
                    self.errors.append(f"case {name}#{i}: took {time.perf_counter() - t:.1f}s")
                self.cases += 1
        finally:
            self.seconds += time.perf_counter() - t0
            tracemalloc.stop()
            signal.signal(signal.SIGALRM, old)

    @staticmethod
    def _alarm(signum, frame):
        raise _Hang()


def binfile_fields(data: bytes, header_sections: tuple[int, ...], kind: str = "") -> list[Field]:
    """The section sizes (u64) of an iden3 binary file and every u32 of its header sections."""
    import struct

    out: list[Field] = []
    pos, (nsec,) = 12, struct.unpack_from("<I", data, 8)
    for _ in range(nsec):
        sid, size = struct.unpack_from("<IQ", data, pos)
        out.append((pos + 4, 8, "little"))
        if sid in header_sections and kind == "zkey" and sid == 2:  # nVars, nPublic, domainSize
            n8q = int.from_bytes(data[pos + 12 : pos + 16], "little")
            n8r = int.from_bytes(data[pos + 16 + n8q : pos + 20 + n8q], "little")
            out += [(pos + 20 + n8q + n8r + k, 4, "little") for k in (0, 4, 8)]
        elif sid == 4 and kind == "zkey":  # nCoefs
            out.append((pos + 12, 4, "little"))
        elif sid in header_sections:
            out += [(pos + 12 + k, 4, "little") for k in range(0, size - 3, 4)]
        pos += 12 + size
    return out


def params_fields(data: bytes) -> list[Field]:
    """The vector counts (big-endian u32) of bellperson parameters."""
    from cuzk.groth16.params import _VK_BYTES

    out: list[Field] = []
    pos = _VK_BYTES
    for size in (96, 96, 96, 96, 96, 192):  # ic, h, l, a, b_g1, b_g2
        if pos + 4 > len(data):
            break
        out.append((pos, 4, "big"))
        pos += 4 + size * int.from_bytes(data[pos : pos + 4], "big")
    return out


def _via_file(tmp: Path, suffix: str, reader: Callable[[Path], object]) -> Callable[[bytes], object]:
    p = tmp / f"fuzz{suffix}"

    def f(data: bytes) -> object:
        p.write_bytes(data)
        return reader(p)

    return f


@pytest.fixture(scope="module")
def fuzz_report():
    fz = Fuzzer()
    yield fz
    if fz.cases:
        print(f"\nfuzz: {fz.cases} cases in {fz.seconds:.1f} s = {fz.cases / fz.seconds:.0f} cases/s (seed {SEED})")


def test_fuzz_file_formats(tmp_path, fuzz_report):
    from cuzk import curves
    from cuzk.engine.devcircuit import make_dev_circuit
    from cuzk.groth16 import formats, params, verifier
    from cuzk.groth16.zkey import read_zkey
    from cuzk.r1cs.r1cs import read_r1cs
    from cuzk.r1cs.sym import read_sym
    from cuzk.r1cs.wtns import parse_wtns

    fz = fuzz_report
    bls = curves.get("bls12_381")
    r1cs, wtns, zk = ((EX / f).read_bytes() for f in ("circuit.r1cs", "witness.wtns", "circuit.zkey"))
    fz.run("r1cs", r1cs, _via_file(tmp_path, ".r1cs", read_r1cs), fields=binfile_fields(r1cs, (1,)))
    fz.run("wtns", wtns, parse_wtns, fields=binfile_fields(wtns, (1,)))
    fz.run("zkey", zk, _via_file(tmp_path, ".zkey", read_zkey), fields=binfile_fields(zk, (1, 2), "zkey"))
    fz.run("sym", (EX / "circuit.sym").read_bytes(), _via_file(tmp_path, ".sym", read_sym))
    dc = make_dev_circuit(tmp_path / "dev", "chain", 6, style="bellperson")
    pce = read_r1cs(dc.r1cs).pce
    pb = Path(dc.key).read_bytes()
    pf = params_fields(pb)
    fz.run("params", pb, _via_file(tmp_path, ".params", lambda p: params.read_params(p, pce)), fields=pf)
    fz.run("params-layout", pb, _via_file(tmp_path, ".params", params.params_layout), fields=pf)

    # proofs and verifying keys: a mutant that parses to something else never verifies
    vk = formats.read_vk_json(EX / "verification_key.json")
    public = [int(x) for x in json.loads((EX / "public.json").read_text())]
    proof = formats.read_proof_json(EX / "proof.json", bls)
    assert verifier.verify(vk, public, proof)

    def proof_json(d: bytes) -> None:
        p = formats.proof_from_json(json.loads(d), curve=bls)
        if p != proof:
            assert not verifier.verify(vk, public, p), "a mutated proof.json verified"

    def proof_bin(d: bytes) -> None:
        p = formats.Proof.from_bytes(d, bls)
        if p != proof:
            assert not verifier.verify(vk, public, p), "a mutated binary proof verified"

    def vk_json(d: bytes) -> None:
        v = formats.vk_from_json(json.loads(d))
        if v != vk:
            assert not verifier.verify(v, public, proof), "a proof verified under a mutated verifying key"

    fz.run("proof-json", (EX / "proof.json").read_bytes(), proof_json, n=CASES // 2)
    fz.run("proof-bin", proof.to_bytes(), proof_bin, n=CASES // 2)
    fz.run("vk-json", (EX / "verification_key.json").read_bytes(), vk_json, n=CASES // 2)
    assert not fz.errors, "\n".join(fz.errors[:20])


def test_fuzz_filecoin_inputs(fuzz_report):
    from test_filecoin_c1 import PROVER_ID, SECTOR, TICKET, _sector
    from test_filecoin_c1 import SEED as C1_SEED

    from cuzk.filecoin import c1 as C1
    from cuzk.filecoin import params as P
    from cuzk.filecoin import vanilla as V
    from cuzk.filecoin.porep import challenge_openings

    fz = fuzz_report
    sealed = _sector(5)
    fz.run("c1-json", C1.write_c1(sealed, C1_SEED, TICKET, prover_id=PROVER_ID, sector_id=SECTOR), C1.parse_c1)
    sp = P.PARAMS[2048]
    chal = V.interactive_challenges(sp.nodes, sealed.replica_id, C1_SEED, 0, 2)
    obj = challenge_openings(sealed, chal)
    obj.update({"version": V.VERSION, "partition": 0, "sector_id": SECTOR, "seed": C1_SEED.hex()})
    fz.run("cvp", V.encode(obj), V.decode)
    assert not fz.errors, "\n".join(fz.errors[:20])


def test_fuzz_request_messages(fuzz_report):
    """Mutated SubmitProof/AwaitProof/CancelProof/RegisterCircuit messages, as raw bytes, to an
    in-process daemon serving the circom fixture."""
    import grpc
    from google.protobuf.message import DecodeError
    from test_daemon import daemon

    from cuzk.server._gen import proving_pb2 as pb

    fz = fuzz_report
    inputs = (EX / "input.json").read_text()
    with daemon() as (d, c):
        c.register("example", str(EX / "circuit.r1cs"), zkey=str(EX / "circuit.zkey"), wasm=str(EX / "circuit.wasm"))
        chan = grpc.insecure_channel(d.address)
        accepted: list[str] = []

        undecodable = [0]

        def rpc(method: str, request_type, reply_type):
            call = chan.unary_unary(f"/cuzk.daemon.v1.ProvingEngine/{method}")

            def f(data: bytes) -> None:
                try:
                    out = call(data, timeout=CASE_SECONDS / 2)
                except grpc.RpcError as e:
                    code, detail = e.code(), e.details() or ""
                    if code == grpc.StatusCode.INTERNAL and detail == "Exception deserializing request!":
                        try:  # grpcio's own answer to bytes that are no protobuf message, before our code
                            request_type.FromString(data)
                        except DecodeError:
                            undecodable[0] += 1
                            return
                    assert code not in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL), f"{method}: {code}: {detail}"
                    assert "\n" not in detail.strip() and "Traceback" not in detail, f"{method}: {detail!r}"
                    return
                r = reply_type.FromString(out)
                if getattr(r, "job_id", ""):
                    accepted.append(r.job_id)

            return f

        submit = pb.SubmitProofRequest(circuit_id="example", inputs_json=inputs).SerializeToString()
        wtns = pb.SubmitProofRequest(circuit_id="example", witness=(EX / "witness.wtns").read_bytes()).SerializeToString()
        fz.run("SubmitProof(inputs)", submit, rpc("SubmitProof", pb.SubmitProofRequest, pb.SubmitProofResponse), n=REQUEST_CASES)
        fz.run("SubmitProof(wtns)", wtns, rpc("SubmitProof", pb.SubmitProofRequest, pb.SubmitProofResponse), n=REQUEST_CASES // 2)
        job = c.submit("example", inputs=json.loads(inputs)).job_id
        fz.run(
            "AwaitProof",
            pb.AwaitProofRequest(job_id=job, timeout_ms=1).SerializeToString(),
            rpc("AwaitProof", pb.AwaitProofRequest, pb.AwaitProofResponse),
            n=REQUEST_CASES // 4,
        )
        fz.run(
            "CancelProof",
            pb.CancelProofRequest(job_id="nope").SerializeToString(),
            rpc("CancelProof", pb.CancelProofRequest, pb.CancelProofResponse),
            n=REQUEST_CASES // 4,
        )
        for j in accepted:
            try:
                c.cancel(j)
            except CuzkError:
                pass
        assert c.status() is not None  # still serving
        print(f"\nfuzz: {undecodable[0]} request mutants were no protobuf message (grpcio answers INTERNAL itself)")
        chan.close()
    assert not fz.errors, "\n".join(fz.errors[:20])
