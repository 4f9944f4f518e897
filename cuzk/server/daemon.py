"""The daemon process: engine + gRPC server (cuzk.daemon.v1 and, unless ``[curio] enabled = false``, the
original Curio daemon's cuzk.v1 on the same listener) (+ optional HTTP status endpoint), signals, drain.

``Daemon(config).start()`` serves in the calling process (the demo and the tests use it that way);
``run(config)`` is ``cuzk daemon``: it serves until SIGTERM/SIGINT, then stops accepting, lets in-flight
work finish within ``daemon.drain_timeout`` (queued jobs stay journaled for the next start), and exits 0.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import ssl
import stat
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc

from .. import CuzkError
from ..engine import Engine
from ..engine.config import Config, ConfigError
from . import protogen
from .auth import AuthInterceptor, Authorizer, TokenStore
from .http import is_loopback, parse_hostport

log = logging.getLogger("cuzk.server")

_UNIX_MAX = 107


def parse_listen(addr: str) -> tuple[str, str]:
    """("unix", path) or ("tcp", "host:port")."""
    if addr.startswith("unix://"):
        return "unix", addr[len("unix://") :]
    if addr.startswith("unix:"):
        return "unix", addr[len("unix:") :]
    addr = addr.removeprefix("tcp://")
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"daemon.listen: expected unix:///path or host:port, got {addr!r}")
    return "tcp", addr


def client_target(addr: str) -> str:
    kind, rest = parse_listen(addr)
    return f"unix://{os.path.abspath(rest)}" if kind == "unix" else rest


def _prepare_unix(path: str) -> None:
    if len(path.encode()) > _UNIX_MAX:
        raise ConfigError(f"daemon.listen: unix socket path is {len(path.encode())} bytes, the limit is {_UNIX_MAX}: {path}")
    p = Path(path)
    if not p.parent.exists():
        p.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    if os.path.lexists(path):
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise ConfigError(f"daemon.listen: {path} exists and is not a socket")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
        except OSError:
            os.unlink(path)  # stale socket of a daemon that is gone
        else:
            raise ConfigError(f"daemon.listen: {path} is in use by a running daemon")
        finally:
            s.close()


def _read_pem(path: str, what: str) -> bytes:
    try:
        with open(os.path.expanduser(path), "rb") as fh:
            return fh.read()
    except OSError as e:
        raise ConfigError(f"security.{what}: cannot read {path}: {e.strerror or e}") from None


def _tls_files(cfg: Config) -> tuple[bytes, bytes, bytes | None] | None:
    sec = cfg.security
    if not sec.tls_cert and not sec.tls_key:
        if sec.tls_client_ca:
            raise ConfigError("security.tls_client_ca needs security.tls_cert and security.tls_key")
        return None
    if not (sec.tls_cert and sec.tls_key):
        raise ConfigError("security: tls_cert and tls_key go together (set both)")
    ca = _read_pem(sec.tls_client_ca, "tls_client_ca") if sec.tls_client_ca else None
    return _read_pem(sec.tls_cert, "tls_cert"), _read_pem(sec.tls_key, "tls_key"), ca


def grpc_server_credentials(cfg: Config) -> grpc.ServerCredentials | None:
    """grpcio's TLS credentials from [security] (None: no TLS); a client CA makes client certificates required."""
    files = _tls_files(cfg)
    if files is None:
        return None
    cert, key, ca = files
    return grpc.ssl_server_credentials([(key, cert)], root_certificates=ca, require_client_auth=ca is not None)


def http_ssl_context(cfg: Config) -> ssl.SSLContext | None:
    if _tls_files(cfg) is None:
        return None
    sec = cfg.security
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(os.path.expanduser(sec.tls_cert), os.path.expanduser(sec.tls_key))
        if sec.tls_client_ca:
            ctx.load_verify_locations(os.path.expanduser(sec.tls_client_ca))
            ctx.verify_mode = ssl.CERT_REQUIRED
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"security: cannot load the TLS files for HTTP: {e}") from None
    return ctx


def _authorizer(cfg: Config) -> Authorizer | None:
    sec = cfg.security
    if not sec.tokens_file:
        return None
    store = TokenStore(os.path.expanduser(sec.tokens_file))
    store.entries()  # a malformed file is refused at start
    return Authorizer(store, bool(sec.unix_trusted))


def check_exposure(what: str, addr: str, host: str, cfg: Config) -> list[str]:
    """A non-loopback listener needs TLS and tokens, unless ``security.insecure = true`` (then a warning)."""
    sec = cfg.security
    if is_loopback(host) or (sec.tls_cert and sec.tls_key and sec.tokens_file):
        return []
    if not sec.insecure:
        raise ConfigError(
            f"{what}: {addr} is reachable from other machines but TLS and tokens are not both configured "
            f"(set security.tls_cert, tls_key and tokens_file, or security.insecure = true)"
        )
    missing = " and ".join(x for x, on in (("TLS", sec.tls_cert), ("tokens", sec.tokens_file)) if not on)
    return [f'listener={what} address={addr} msg="security.insecure = true: serving without {missing}"']


class Daemon:
    def __init__(self, config: Config):
        self.config = config
        self.engine = Engine(config)
        self.server: grpc.Server | None = None
        self.http = None
        self.curio = None  # the cuzk.v1 (Curio) servicer, when [curio] enabled
        self.address = ""
        self._unix_path = None
        self._stopped = threading.Event()
        self.authz: Authorizer | None = None
        self._exposure_warnings: list[str] = []

    def start(self) -> Daemon:
        """Bind every listener, then start the engine (recovery, preload) and serve. On any error nothing
        is left running: the engine is shut down, the listeners are closed, the socket file removed."""
        try:
            self._start()
        except BaseException:
            self._abort_start()
            raise
        return self

    def _abort_start(self) -> None:
        if self.http is not None:
            self.http.stop()
            self.http = None
        if self.server is not None:
            self.server.stop(None)
        self.engine.shutdown(0)
        if self._unix_path and os.path.exists(self._unix_path):
            try:
                os.unlink(self._unix_path)
            except OSError:
                pass

    def _start(self) -> None:
        cfg = self.config
        self._exposure_warnings = []
        _pb, pb_grpc = protogen.load()
        from .service import ProvingEngineService

        kind, where = parse_listen(cfg.listen)
        if kind == "unix":
            where = os.path.abspath(where)
            _prepare_unix(where)
        sec = cfg.security
        self.authz = _authorizer(cfg)
        creds = None
        if kind == "tcp":
            host = where.rpartition(":")[0].strip("[]") or "0.0.0.0"
            self._exposure_warnings += check_exposure("daemon.listen", cfg.listen, host, cfg)
            creds = grpc_server_credentials(cfg)
        mx = int(cfg.daemon.max_message_bytes)  # a size > 0 (load_config refuses "auto")
        opts = [("grpc.max_receive_message_length", mx), ("grpc.max_send_message_length", mx), ("grpc.so_reuseport", 0)]
        self.server = grpc.server(
            ThreadPoolExecutor(max_workers=max(4, cfg.daemon.grpc_threads), thread_name_prefix="cuzk-grpc"),
            options=opts,
            interceptors=[AuthInterceptor(self.authz)] if self.authz is not None else None,
        )
        pb_grpc.add_ProvingEngineServicer_to_server(ProvingEngineService(self.engine), self.server)
        if cfg.curio.enabled:  # the original Curio daemon's API (cuzk.v1) on the same listener
            from .curio import CurioService

            _cpb, cpb_grpc = protogen.load_curio()
            self.curio = CurioService(self.engine)
            cpb_grpc.add_ProvingEngineServicer_to_server(self.curio, self.server)
        try:
            if kind == "unix":
                # bound before any engine thread exists, so the process-wide umask is safe to change:
                # the socket is created 0600, with no window where others could connect
                old = os.umask(0o177)
                try:
                    port = self.server.add_insecure_port(f"unix:{where}")
                finally:
                    os.umask(old)
                os.chmod(where, 0o600)
                self._unix_path = where
                self.address = f"unix://{where}"
            else:
                if creds is not None:
                    port = self.server.add_secure_port(where, creds)
                else:
                    port = self.server.add_insecure_port(where)
                self.address = f"{where.rpartition(':')[0]}:{port}"
        except RuntimeError as e:
            raise CuzkError(f"daemon.listen: cannot listen on {cfg.listen}: {e}") from None
        if not port:
            raise CuzkError(f"daemon.listen: cannot listen on {cfg.listen}")
        if cfg.daemon.http_listen:  # bound now (its errors are found before the engine starts), served below
            from .http import StatusServer

            hhost = parse_hostport(cfg.daemon.http_listen, "daemon.http_listen")[0]
            if cfg.daemon.http_allow_remote:  # the older switch still needs TLS and tokens (or insecure)
                self._exposure_warnings += check_exposure("daemon.http_listen", cfg.daemon.http_listen, hhost, cfg)
            self.http = StatusServer(
                self.engine,
                cfg.daemon.http_listen,
                cfg.daemon.http_allow_remote,
                ssl_context=http_ssl_context(cfg),
                authz=self.authz,
                read_timeout=float(sec.http_read_timeout),
                max_connections=int(sec.http_max_connections),
            )
        self.engine.start()  # recovery and preload happen before the first request is served
        self.server.start()
        if self.http is not None:
            self.http.start()
        log.info(
            "event=daemon_listening address=%s http=%s curio=%s tls=%s mtls=%s tokens=%s pid=%d",
            self.address,
            self.http.address if self.http else "off",
            "on" if cfg.curio.enabled else "off",
            "on" if sec.tls_cert else "off",
            "on" if sec.tls_client_ca else "off",
            "on" if sec.tokens_file else "off",
            os.getpid(),
        )
        for w in self._exposure_warnings:
            log.warning("event=insecure_listener %s", w)
        if cfg.curio.enabled:
            self._log_curio_map()

    def _log_curio_map(self) -> None:
        from ..engine.config import CURIO_KINDS

        names = {v: k for k, v in CURIO_KINDS.items()}
        known = {c["spec"]["id"] for c in self.engine.list_circuits()}
        for (kind, rp), cid in sorted(self.config.curio.circuits.items()):
            if cid in known:
                log.info("event=curio_circuit key=%s_%d circuit=%s", names[kind], rp, cid)
            else:
                log.warning(
                    'event=curio_circuit_missing key=%s_%d circuit=%s msg="not registered: such requests are refused until it is"',
                    names[kind],
                    rp,
                    cid,
                )

    def stop(self, drain_timeout: float | None = None) -> bool:
        if self._stopped.is_set():
            return True
        t = self.config.daemon.drain_timeout if drain_timeout is None else drain_timeout
        log.info("event=daemon_draining timeout_s=%.1f", t)
        clean = self.engine.shutdown(t)
        if self.server is not None:
            self.server.stop(grace=1.0).wait(5)
        if self.http is not None:
            self.http.stop()
        if self._unix_path and os.path.exists(self._unix_path):
            try:
                os.unlink(self._unix_path)
            except OSError:
                pass
        self._stopped.set()
        log.info("event=daemon_stopped drained=%s", clean)
        return clean

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def run(config: Config) -> int:
    """Serve until SIGTERM / SIGINT; drain; return the exit status."""
    d = Daemon(config)
    stop = threading.Event()

    def on_signal(signum, _frame):
        log.info("event=signal signal=%s", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    d.start()
    for w in config.warnings:
        log.warning("event=config_warning msg=%r", w)
    while not stop.wait(1.0):
        pass
    d.stop()
    return 0
