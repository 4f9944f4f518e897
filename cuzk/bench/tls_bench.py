"""Transport security overhead (issue 19): proof latency and throughput over TLS with a bearer token
(TCP loopback, a test CA made here, tokens file) against the unix socket with no auth, same run.

Two daemons run in this process (CPU backend, same dev circuit, SRS HOT in both); latency runs alternate
between them one proof at a time (so both see the same machine load), then each serves a throughput batch
(``--clients`` concurrent clients, ``--jobs`` proofs), in alternating order. Every proof is verified.

    .venv/bin/python -m cuzk.bench.tls_bench                  # 2^16, 6 latency runs each side
    .venv/bin/python -m cuzk.bench.tls_bench --domain 12 --runs 3 --jobs 4   # a smoke test

Needs the ``cryptography`` package (the test extras) for the CA.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime
import ipaddress
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")

from cuzk.engine.config import load_config
from cuzk.engine.devcircuit import make_dev_circuit
from cuzk.groth16 import formats, verifier
from cuzk.server.auth import TokenStore
from cuzk.server.client import Client
from cuzk.server.daemon import Daemon


def make_pki(d: Path) -> dict[str, str]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def cert(cn, key, issuer, ikey, ca):
        b = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            b = b.add_extension(
                x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False,
            )
        return b.sign(ikey, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bench CA")])
    ca = cert("bench CA", ca_key, ca_name, ca_key, True)
    srv = cert("localhost", key, ca_name, ca_key, False)
    (d / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (d / "srv.pem").write_bytes(srv.public_bytes(serialization.Encoding.PEM))
    (d / "srv.key").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return {"ca": str(d / "ca.pem"), "cert": str(d / "srv.pem"), "key": str(d / "srv.key")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--domain", type=int, default=16, help="log2 of the dev circuit's domain")
    ap.add_argument("--runs", type=int, default=6, help="sequential latency runs on each side")
    ap.add_argument("--clients", type=int, default=2, help="concurrent clients in the throughput batch")
    ap.add_argument("--jobs", type=int, default=6, help="proofs in each side's throughput batch")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="czb", dir="/tmp"))
    started = datetime.datetime.now(datetime.UTC)
    print(f"tls_bench {started:%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} cpus, 2^{a.domain}", flush=True)
    try:
        t = time.perf_counter()
        dc = make_dev_circuit(tmp / "c", "hash", a.domain)
        vk = formats.read_vk_json(Path(dc.folder) / "verification_key.json")
        print(f"  setup: {time.perf_counter() - t:.1f} s", flush=True)
        pki = make_pki(tmp)
        store = TokenStore(tmp / "tokens.json")
        token = store.add("bench", "submit")
        admin = store.add("admin", "admin")
        common = {"gpus.backend": "cpu", "registration.roots": [str(tmp)], "journal.synchronous": "full"}
        plain = Daemon(
            load_config(overrides={**common, "daemon.state_dir": str(tmp / "s1"), "daemon.listen": f"unix://{tmp}/u.sock"})
        ).start()
        sec = Daemon(
            load_config(
                overrides={
                    **common,
                    "daemon.state_dir": str(tmp / "s2"),
                    "daemon.listen": "127.0.0.1:0",
                    "security.tls_cert": pki["cert"],
                    "security.tls_key": pki["key"],
                    "security.tokens_file": str(tmp / "tokens.json"),
                }
            )
        ).start()
        sides = {
            "unix": lambda tok=None: Client(plain.address),
            "tls+token": lambda tok=token: Client(sec.address, token=tok, ca=pki["ca"]),
        }
        wits = [dc.witness(100 + i) for i in range(max(a.runs, a.jobs) + 1)]
        for name, mk in sides.items():
            with mk(admin if name != "unix" else None) as c:
                c.register("b", dc.r1cs, zkey=dc.key)
                c.preload("b")
            with mk() as c:
                c.prove("b", witness=wits[-1], check=True)  # warm-up
        lat: dict[str, list[float]] = {k: [] for k in sides}
        clients = {k: mk() for k, mk in sides.items()}
        for i in range(a.runs):
            order = list(sides) if i % 2 == 0 else list(reversed(sides))
            for k in order:
                t = time.perf_counter()
                r = clients[k].prove("b", witness=wits[i], check=True)
                lat[k].append(time.perf_counter() - t)
                assert verifier.verify(vk, r.public[0], formats.Proof.from_bytes(r.proofs[0]))
            print(f"  run {i}: " + ", ".join(f"{k} {lat[k][-1]:.3f} s" for k in sides), flush=True)
        for c in clients.values():
            c.close()
        tput: dict[str, float] = {}
        for k in ["tls+token", "unix"]:
            per = [a.jobs // a.clients + (1 if j < a.jobs % a.clients else 0) for j in range(a.clients)]

            def one(j, k=k, per=per):
                with sides[k]() as c:
                    for m in range(per[j]):
                        r = c.prove("b", witness=wits[(j + m * a.clients) % len(wits)], check=True)
                        assert verifier.verify(vk, r.public[0], formats.Proof.from_bytes(r.proofs[0]))

            t = time.perf_counter()
            with cf.ThreadPoolExecutor(a.clients) as ex:
                list(ex.map(one, range(a.clients)))
            tput[k] = a.jobs / (time.perf_counter() - t)
            print(f"  throughput {k}: {a.jobs} proofs, {a.clients} clients: {tput[k]:.3f} proofs/s", flush=True)
        plain.stop(30)
        sec.stop(30)
        res = {
            "date": f"{started:%Y-%m-%d %H:%M} UTC",
            "domain": a.domain,
            "runs": a.runs,
            "latency_s": lat,
            "median_s": {k: statistics.median(v) for k, v in lat.items()},
            "min_s": {k: min(v) for k, v in lat.items()},
            "max_s": {k: max(v) for k, v in lat.items()},
            "throughput_proofs_per_s": tput,
        }
        m = res["median_s"]
        res["latency_ratio"] = m["tls+token"] / m["unix"]
        # each run's two proofs are back to back: the median of their ratios cancels the machine's drift
        res["latency_ratio_paired"] = statistics.median(t / u for t, u in zip(lat["tls+token"], lat["unix"], strict=True))
        res["throughput_ratio"] = tput["tls+token"] / tput["unix"]
        for k in sides:
            print(f"  latency {k}: median {m[k]:.3f} s (min {res['min_s'][k]:.3f}, max {res['max_s'][k]:.3f})")
        print(
            f"  ratio tls+token / unix: latency {res['latency_ratio']:.4f} (paired runs: {res['latency_ratio_paired']:.4f}), "
            f"throughput {res['throughput_ratio']:.4f} "
            f"(target: latency overhead <= 2%)",
            flush=True,
        )
        if a.json:
            Path(a.json).write_text(json.dumps(res, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
