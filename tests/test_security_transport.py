"""Transport security and tokens (issue 19, items 1, 2 and the HTTP half of 6): TLS with a CA made here,
mutual TLS, bearer tokens with roles on both gRPC services and the HTTP endpoint, the exposure rule for
non-loopback listeners, ``cuzk token add|list|revoke``, and the HTTP endpoint's read timeout."""

from __future__ import annotations

import datetime
import ipaddress
import logging
import shutil
import socket
import ssl
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest

from cuzk.engine.config import ConfigError, load_config
from cuzk.engine.devcircuit import make_dev_circuit
from cuzk.server import protogen
from cuzk.server.auth import TokenStore
from cuzk.server.client import Client, DaemonError
from cuzk.server.daemon import Daemon

x509 = pytest.importorskip("cryptography.x509")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402


def _cert(name, key, issuer_name, issuer_key, ca=False, san=True):
    now = datetime.datetime.now(datetime.UTC)
    b = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if san:
        b = b.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
    return b.sign(issuer_key, hashes.SHA256())


def _write(path: Path, cert=None, key=None) -> str:
    data = b""
    if cert is not None:
        data += cert.public_bytes(serialization.Encoding.PEM)
    if key is not None:
        data += key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    path.write_bytes(data)
    return str(path)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "cuzk test CA")])
    ca = _cert("cuzk test CA", ca_key, ca_name, ca_key, ca=True, san=False)
    srv_key, cli_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    other_key = ec.generate_private_key(ec.SECP256R1())
    other_ca = _cert("other CA", other_key, x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "other CA")]), other_key, ca=True)
    return {
        "ca": _write(d / "ca.pem", ca),
        "other_ca": _write(d / "other.pem", other_ca),
        "cert": _write(d / "server.pem", _cert("localhost", srv_key, ca_name, ca_key)),
        "key": _write(d / "server.key", key=srv_key),
        "client_cert": _write(d / "client.pem", _cert("prover-1", cli_key, ca_name, ca_key)),
        "client_key": _write(d / "client.key", key=cli_key),
    }


@pytest.fixture(scope="module")
def h8(tmp_path_factory):
    return make_dev_circuit(tmp_path_factory.mktemp("sec-circuits") / "h8", "hash", 8)


@contextmanager
def daemon(**overrides):
    tmp = tempfile.mkdtemp(prefix="czs", dir="/tmp")
    over = {"daemon.state_dir": tmp, "daemon.listen": "127.0.0.1:0", "gpus.backend": "cpu", "daemon.drain_timeout": 10}
    over["registration.roots"] = [tempfile.gettempdir()]
    over.update(overrides)
    d = Daemon(load_config(None, overrides=over)).start()
    try:
        yield d
    finally:
        d.stop(5)
        shutil.rmtree(tmp, ignore_errors=True)


def code_of(fn) -> str:
    try:
        fn()
    except DaemonError as e:
        assert "cuzk_" not in e.details  # a message never echoes a token
        return e.code
    return "OK"


@pytest.fixture(scope="module")
def secured(pki, h8, tmp_path_factory):
    """A daemon on TCP with TLS and tokens (admin, alice and bob: submit) and HTTPS with a short read timeout."""
    tf = tmp_path_factory.mktemp("tok") / "tokens.json"
    store = TokenStore(tf)
    toks = {n: store.add(n, r) for n, r in (("admin", "admin"), ("alice", "submit"), ("bob", "submit"))}
    over = {
        "security.tls_cert": pki["cert"],
        "security.tls_key": pki["key"],
        "security.tokens_file": str(tf),
        "daemon.http_listen": "127.0.0.1:0",
        "security.http_read_timeout": 0.5,
        "security.http_max_connections": 4,
    }
    with daemon(**over) as d:
        with Client(d.address, token=toks["admin"], ca=pki["ca"]) as c:
            c.register("h8", h8.r1cs, zkey=h8.key)
        yield d, toks, tf


def test_tls_and_tokens_roles(secured, pki, h8):
    d, toks, _tf = secured
    assert oct(Path(_tf).stat().st_mode & 0o777) == "0o600"
    # without the CA the server's certificate is not trusted: the call never gets through
    with Client(d.address, token=toks["admin"], ca=pki["other_ca"], timeout=5) as c:
        assert code_of(c.status) == "UNAVAILABLE"
    # plaintext to a TLS port fails too
    with Client(d.address, token=toks["admin"], timeout=5) as c:
        assert code_of(c.status) == "UNAVAILABLE"
    # no token / a bad token
    with Client(d.address, ca=pki["ca"], token="") as c:
        assert code_of(c.status) == "UNAUTHENTICATED"
    with Client(d.address, ca=pki["ca"], token="cuzk_not-a-real-token") as c:
        assert code_of(c.status) == "UNAUTHENTICATED"
        assert code_of(lambda: c.register("x", h8.r1cs, zkey=h8.key)) == "UNAUTHENTICATED"
    with Client(d.address, ca=pki["ca"], token=toks["alice"]) as alice, Client(d.address, ca=pki["ca"], token=toks["bob"]) as bob:
        assert "_pb" in alice.status()
        # admin RPCs refused to a submit token
        assert code_of(lambda: alice.register("h8b", h8.r1cs, zkey=h8.key)) == "PERMISSION_DENIED"
        assert code_of(lambda: alice.preload("h8")) == "PERMISSION_DENIED"
        assert code_of(lambda: alice.evict("h8")) == "PERMISSION_DENIED"
        res = alice.prove("h8", witness=h8.witness(1))
        assert res.ok
        j = alice.submit("h8", witness=h8.witness(2))
        assert code_of(lambda: bob.cancel(j.job_id)) == "PERMISSION_DENIED"
        assert code_of(lambda: alice.cancel(j.job_id)) == "OK"
        j2 = alice.submit("h8", witness=h8.witness(3))
        assert bob.await_proof(j2.job_id).status in ("COMPLETED", "CANCELLED")  # submit may await and read
    with Client(d.address, ca=pki["ca"], token=toks["admin"]) as admin:
        j3 = Client(d.address, ca=pki["ca"], token=toks["bob"]).submit("h8", witness=h8.witness(4))
        assert code_of(lambda: admin.cancel(j3.job_id)) == "OK"
        assert code_of(lambda: admin.preload("h8")) == "OK"


def test_curio_service_needs_a_token_on_tcp(secured, pki):
    d, toks, _ = secured
    cpb, cpb_grpc = protogen.load_curio()
    creds = grpc.ssl_channel_credentials(root_certificates=Path(pki["ca"]).read_bytes())
    with grpc.secure_channel(d.address, creds) as ch:
        stub = cpb_grpc.ProvingEngineStub(ch)
        with pytest.raises(grpc.RpcError) as e:
            stub.GetStatus(cpb.GetStatusRequest(), timeout=10)
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
        stub.GetStatus(cpb.GetStatusRequest(), timeout=10, metadata=[("authorization", f"Bearer {toks['alice']}")])
        with pytest.raises(grpc.RpcError) as e:
            stub.PreloadSRS(cpb.PreloadSrsRequest(), timeout=10, metadata=[("authorization", f"Bearer {toks['alice']}")])
        assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED


def test_http_tls_tokens_and_read_timeout(secured, pki):
    d, toks, _ = secured
    url = f"https://{d.http.address.replace('127.0.0.1', 'localhost')}/status"
    ctx = ssl.create_default_context(cafile=pki["ca"])
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url, context=ctx, timeout=10)
    assert e.value.code == 401
    req = urllib.request.Request(url, headers={"Authorization": "Bearer cuzk_wrong"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, context=ctx, timeout=10)
    assert e.value.code == 401 and b"cuzk_wrong" not in e.value.read()
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {toks['alice']}"})
    with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
        assert r.status == 200
    # an idle connection (not even a TLS handshake) is closed after the read timeout (0.5 s)
    host, port = d.http.address.rsplit(":", 1)
    socks = []
    t = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=10) as s:
        assert s.recv(1) == b""
    assert time.monotonic() - t < 5
    # more idle connections than the limit (4): the extra ones are closed at once, the endpoint still serves
    try:
        socks = [socket.create_connection((host, int(port)), timeout=10) for _ in range(4)]
        time.sleep(0.1)
        t = time.monotonic()
        with socket.create_connection((host, int(port)), timeout=10) as extra:
            assert extra.recv(1) == b""
        assert time.monotonic() - t < 0.4  # closed at once, not after the read timeout
        time.sleep(0.8)
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:  # the idle ones timed out
            assert r.status == 200
    finally:
        for s in socks:
            s.close()


def test_mutual_tls(pki):
    over = {"security.tls_cert": pki["cert"], "security.tls_key": pki["key"], "security.tls_client_ca": pki["ca"]}
    with daemon(**over) as d:
        with Client(d.address, ca=pki["ca"], timeout=5) as c:  # no client certificate
            assert code_of(c.status) == "UNAVAILABLE"
        with Client(d.address, ca=pki["ca"], cert=pki["client_cert"], key=pki["client_key"], timeout=10) as c:
            assert "_pb" in c.status()


def test_non_loopback_needs_tls_and_tokens_unless_insecure(pki, tmp_path, caplog):
    with pytest.raises(ConfigError, match="TLS and tokens"):
        with daemon(**{"daemon.listen": "0.0.0.0:0"}):
            pass
    with pytest.raises(ConfigError, match="TLS and tokens"):  # TLS alone is not enough
        with daemon(**{"daemon.listen": "0.0.0.0:0", "security.tls_cert": pki["cert"], "security.tls_key": pki["key"]}):
            pass
    with pytest.raises(ConfigError, match="TLS and tokens"):
        with daemon(**{"daemon.http_listen": "0.0.0.0:0", "daemon.http_allow_remote": True}):
            pass
    caplog.set_level(logging.WARNING, logger="cuzk.server")
    with daemon(**{"daemon.listen": "0.0.0.0:0", "security.insecure": True}) as d:
        assert d.address.startswith("0.0.0.0:")
    assert any("insecure" in r.getMessage() and "without TLS and tokens" in r.getMessage() for r in caplog.records)
    tf = tmp_path / "t.json"
    TokenStore(tf).add("a", "admin")
    over = {"daemon.listen": "0.0.0.0:0", "security.tls_cert": pki["cert"], "security.tls_key": pki["key"]}
    with daemon(**over, **{"security.tokens_file": str(tf)}) as d:
        assert d.address.startswith("0.0.0.0:")


def test_unix_socket_trusted_or_not(tmp_path):
    tf = tmp_path / "t.json"
    tok = TokenStore(tf).add("sub", "submit")
    sock = tempfile.mkdtemp(prefix="czu", dir="/tmp")
    try:
        over = {"daemon.listen": f"unix://{sock}/s/d.sock", "security.tokens_file": str(tf)}
        with daemon(**over) as d:
            assert oct(Path(f"{sock}/s").stat().st_mode & 0o777) == "0o700"
            assert oct(Path(f"{sock}/s/d.sock").stat().st_mode & 0o777) == "0o600"
            with Client(d.address) as c:  # trusted by the socket's mode (how Curio connects)
                assert "_pb" in c.status()
            with Client(d.address, token="cuzk_bad") as c:  # a token given is still checked
                assert code_of(c.status) == "UNAUTHENTICATED"
            with Client(d.address, token=tok) as c:
                assert code_of(lambda: c.preload("nothing")) == "PERMISSION_DENIED"
        with daemon(**over, **{"security.unix_trusted": False}) as d:
            with Client(d.address) as c:
                assert code_of(c.status) == "UNAUTHENTICATED"
    finally:
        shutil.rmtree(sock, ignore_errors=True)


def test_token_cli_and_revocation(pki, tmp_path, capsys):
    from cuzk.cli.main import main

    tf = str(tmp_path / "tokens.json")
    assert main(["token", "add", "ops", "--role", "admin", "--file", tf]) == 0
    tok = capsys.readouterr().out.strip()
    assert tok.startswith("cuzk_") and tok not in Path(tf).read_text()
    assert main(["token", "add", "w1", "--role", "submit", "--file", tf]) == 0
    capsys.readouterr()
    assert main(["token", "list", "--file", tf]) == 0
    out = capsys.readouterr().out
    assert "ops\tadmin" in out and "w1\tsubmit" in out and tok not in out
    over = {"security.tls_cert": pki["cert"], "security.tls_key": pki["key"], "security.tokens_file": tf}
    with daemon(**over) as d, Client(d.address, token=tok, ca=pki["ca"]) as c:
        assert "_pb" in c.status()
        assert main(["token", "revoke", "ops", "--file", tf]) == 0
        time.sleep(0.01)
        assert code_of(c.status) == "UNAUTHENTICATED"
        # the CLI's --token / --ca
        assert main(["status", "--addr", d.address, "--ca", pki["ca"], "--token", tok]) != 0
    assert main(["token", "revoke", "ops", "--file", tf]) != 0
