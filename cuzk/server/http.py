"""Optional HTTP endpoint: ``GET /metrics`` (Prometheus text) and ``GET /status`` (JSON snapshot).

With ``[security] tls_cert`` it serves HTTPS (client certificates required when ``tls_client_ca`` is set);
with ``tokens_file`` every request needs ``Authorization: Bearer <token>`` (any role). Connections have a
read timeout (``http_read_timeout``) and a limit (``http_max_connections``).
"""

from __future__ import annotations

import ipaddress
import json
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST

from ..engine.config import ConfigError


def parse_hostport(addr: str, what: str) -> tuple[str, int]:
    a = addr.removeprefix("http://").removeprefix("tcp://")
    host, sep, port = a.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"{what}: expected host:port, got {addr!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            return all(ipaddress.ip_address(i[4][0]).is_loopback for i in socket.getaddrinfo(host, None))
        except OSError:
            return False


class _Server(ThreadingHTTPServer):
    """A thread per connection, at most ``max_connections`` at once (more are closed at once); each
    connection has a read timeout (the handler's ``timeout``) and, with TLS, its handshake runs in its own
    thread under that timeout (a silent client never blocks the accept loop)."""

    daemon_threads = True
    ssl_context: ssl.SSLContext | None = None
    read_timeout = 10.0
    slots: threading.BoundedSemaphore

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            request.settimeout(self.read_timeout)
            if self.ssl_context is not None:
                try:
                    request = self.ssl_context.wrap_socket(request, server_side=True)
                except (OSError, ssl.SSLError):
                    self.shutdown_request(request)
                    return
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


class StatusServer:
    def __init__(
        self,
        engine,
        addr: str,
        allow_remote: bool = False,
        *,
        ssl_context: ssl.SSLContext | None = None,
        authz=None,
        read_timeout: float = 10.0,
        max_connections: int = 32,
    ):
        host, port = parse_hostport(addr, "daemon.http_listen")
        if not allow_remote and not is_loopback(host):
            raise ConfigError(
                f"daemon.http_listen: {addr} is not a loopback address; set daemon.http_allow_remote = true "
                f"to expose /metrics and /status beyond this machine"
            )
        eng = engine

        class Handler(BaseHTTPRequestHandler):
            timeout = read_timeout  # socket timeout: an idle or half-open connection is closed

            def log_message(self, *a):  # quiet
                pass

            def _send(self, code: int, body: bytes, ctype: str, extra: dict | None = None):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                path = self.path.split("?", 1)[0]
                if authz is not None:
                    from .auth import TokenError, Unauthenticated

                    try:
                        authz.identify(self.headers.get("Authorization"), unix=False)
                    except Unauthenticated as e:
                        self._send(401, f"unauthenticated: {e}\n".encode(), "text/plain", {"WWW-Authenticate": "Bearer"})
                        return
                    except TokenError as e:
                        self._send(503, f"{e}\n".encode(), "text/plain")
                        return
                try:
                    if path == "/metrics":
                        self._send(200, eng.metrics.text().encode(), CONTENT_TYPE_LATEST)
                    elif path == "/status":
                        self._send(200, json.dumps(eng.snapshot()).encode(), "application/json")
                    else:
                        self._send(404, b"not found: try /metrics or /status\n", "text/plain")
                except Exception as e:
                    self._send(500, json.dumps({"error": str(e)}).encode(), "application/json")

        try:
            self.httpd = _Server((host, port), Handler, bind_and_activate=False)
            self.httpd.ssl_context = ssl_context
            self.httpd.read_timeout = read_timeout
            self.httpd.slots = threading.BoundedSemaphore(max(1, max_connections))
            try:
                self.httpd.server_bind()
                self.httpd.server_activate()
            except BaseException:
                self.httpd.server_close()
                raise
        except OSError as e:
            raise ConfigError(f"daemon.http_listen: cannot listen on {addr}: {e.strerror or e}") from None
        self.address = f"{host}:{self.httpd.server_address[1]}"
        self.tls = ssl_context is not None
        self._t = threading.Thread(target=self.httpd.serve_forever, name="cuzk-http", daemon=True)

    def start(self) -> StatusServer:
        self._t.start()
        return self

    def stop(self) -> None:
        if self._t.is_alive():  # shutdown() waits for serve_forever, which never ran if not started
            self.httpd.shutdown()
        self.httpd.server_close()
