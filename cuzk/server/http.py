"""Optional HTTP endpoint: ``GET /metrics`` (Prometheus text) and ``GET /status`` (JSON snapshot)."""

from __future__ import annotations

import ipaddress
import json
import socket
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


class StatusServer:
    def __init__(self, engine, addr: str, allow_remote: bool = False):
        host, port = parse_hostport(addr, "daemon.http_listen")
        if not allow_remote and not is_loopback(host):
            raise ConfigError(
                f"daemon.http_listen: {addr} is not a loopback address; set daemon.http_allow_remote = true "
                f"to expose /metrics and /status beyond this machine"
            )
        eng = engine

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def _send(self, code: int, body: bytes, ctype: str):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                path = self.path.split("?", 1)[0]
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
            self.httpd = ThreadingHTTPServer((host, port), Handler)
        except OSError as e:
            raise ConfigError(f"daemon.http_listen: cannot listen on {addr}: {e.strerror or e}") from None
        self.httpd.daemon_threads = True
        self.address = f"{host}:{self.httpd.server_address[1]}"
        self._t = threading.Thread(target=self.httpd.serve_forever, name="cuzk-http", daemon=True)

    def start(self) -> StatusServer:
        self._t.start()
        return self

    def stop(self) -> None:
        if self._t.is_alive():  # shutdown() waits for serve_forever, which never ran if not started
            self.httpd.shutdown()
        self.httpd.server_close()
