"""Bearer tokens, roles and the gRPC interceptor that checks every call (issue 19).

The tokens file (``[security] tokens_file``, mode 0600) is JSON: ``{"tokens": [{"name", "role", "sha256",
"created"}]}``; only the SHA-256 of each token is kept (a token is 32 random bytes, urlsafe-base64, shown
once by ``cuzk token add``). It is re-read when its mtime changes, so ``cuzk token revoke`` takes effect
without a restart. Roles: ``submit`` (submit, await, cancel its own jobs, read status) and ``admin``
(everything). Messages never echo a token.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc

from .. import CuzkError
from ..engine.errors import EngineError

ROLES = ("submit", "admin")
# methods (of either service, by their last path component) that need the admin role
ADMIN_METHODS = frozenset({"RegisterCircuit", "RegisterCircuitStream", "PreloadSRS", "EvictSRS"})


class TokenError(CuzkError):
    pass


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Identity:
    name: str
    role: str

    @property
    def admin(self) -> bool:
        return self.role == "admin"


TRUSTED = Identity("(unix socket)", "admin")
ANONYMOUS = Identity("(no auth)", "admin")


class TokenStore:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._mtime: float | None = None
        self._entries: list[dict[str, Any]] = []

    # -- file ------------------------------------------------------------------------------------
    def _read(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as e:
            raise TokenError(f"tokens file {self.path}: unreadable: {getattr(e, 'strerror', None) or e}") from None
        toks = data.get("tokens") if isinstance(data, dict) else None
        if not isinstance(toks, list) or not all(
            isinstance(t, dict) and isinstance(t.get("name"), str) and t.get("role") in ROLES and isinstance(t.get("sha256"), str)
            for t in toks
        ):
            raise TokenError(f'tokens file {self.path}: malformed (expected {{"tokens": [{{name, role, sha256}}]}})')
        return toks

    def _write(self, entries: list[dict[str, Any]]) -> None:
        d = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(d, mode=0o700, exist_ok=True)
        tmp = f"{self.path}.tmp{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"tokens": entries}, fh, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)

    def entries(self) -> list[dict[str, Any]]:
        with self._lock:
            try:
                m = os.stat(self.path).st_mtime_ns
            except FileNotFoundError:
                m = None
            if m != self._mtime or m is None:
                self._entries = self._read()
                self._mtime = m
            return list(self._entries)

    # -- management (the CLI) ----------------------------------------------------------------------
    def add(self, name: str, role: str) -> str:
        if role not in ROLES:
            raise TokenError(f"role must be one of {', '.join(ROLES)}")
        if not name or len(name) > 64 or not all(c.isalnum() or c in "-_.@" for c in name):
            raise TokenError("token name: 1-64 characters of letters, digits, - _ . @")
        entries = self._read()
        if any(e["name"] == name for e in entries):
            raise TokenError(f"a token named {name!r} exists (revoke it first)")
        token = "cuzk_" + secrets.token_urlsafe(32)
        entries.append({"name": name, "role": role, "sha256": hash_token(token), "created": int(time.time())})
        self._write(entries)
        return token

    def revoke(self, name: str) -> None:
        entries = self._read()
        kept = [e for e in entries if e["name"] != name]
        if len(kept) == len(entries):
            raise TokenError(f"no token named {name!r}")
        self._write(kept)

    # -- checking ----------------------------------------------------------------------------------
    def verify(self, token: str) -> Identity | None:
        h = hash_token(token)
        found = None
        for e in self.entries():  # compare with every entry, in constant time each
            if hmac.compare_digest(h, e["sha256"]):
                found = Identity(e["name"], e["role"])
        return found


def bearer(value: str | None) -> str | None:
    if not value:
        return None
    scheme, _, tok = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not tok.strip():
        return None
    return tok.strip()


class Unauthenticated(Exception):
    pass


class Authorizer:
    """Decides who a call is (token, trusted unix socket, or no auth configured) and remembers which token
    submitted which job (in memory: a job recovered after a restart has no owner and only admins cancel it)."""

    def __init__(self, store: TokenStore | None, unix_trusted: bool = True) -> None:
        self.store = store
        self.unix_trusted = unix_trusted
        self._owners: dict[str, str] = {}
        self._lock = threading.Lock()

    def identify(self, auth_header: str | None, unix: bool) -> Identity:
        if self.store is None:
            return ANONYMOUS
        tok = bearer(auth_header)
        if tok is None:
            if unix and self.unix_trusted and not auth_header:
                return TRUSTED
            raise Unauthenticated("missing or malformed bearer token (authorization: Bearer <token>)")
        ident = self.store.verify(tok)
        if ident is None:
            raise Unauthenticated("invalid or revoked token")
        return ident

    def set_owner(self, job_id: str, ident: Identity | None) -> None:
        if ident is not None and job_id:
            with self._lock:
                self._owners.setdefault(job_id, ident.name)

    def may_cancel(self, job_id: str, ident: Identity | None) -> bool:
        if ident is None or ident.admin:
            return True
        with self._lock:
            return self._owners.get(job_id) == ident.name


_current = threading.local()


def current() -> Identity | None:
    """The identity of the call the current thread serves (None outside an authenticated call)."""
    return getattr(_current, "ident", None)


def current_authorizer() -> Authorizer | None:
    return getattr(_current, "authz", None)


def note_owner(job_id: str) -> None:
    a = current_authorizer()
    if a is not None:
        a.set_owner(job_id, current())


class PermissionDenied(EngineError):
    code = "PERMISSION_DENIED"


def check_cancel(job_id: str) -> None:
    """Raises PermissionDenied (answered as PERMISSION_DENIED by the services) for a submit token
    cancelling a job it did not submit."""
    a = current_authorizer()
    if a is not None and not a.may_cancel(job_id, current()):
        raise PermissionDenied("a submit token may cancel only the jobs it submitted")


class AuthInterceptor(grpc.ServerInterceptor):  # type: ignore[misc]
    """Checks every call of every service: the identity is found and the role checked in the worker thread
    that runs the call, which also sees it through :func:`current` (for job ownership)."""

    def __init__(self, authz: Authorizer) -> None:
        self.authz = authz

    def intercept_service(self, continuation: Callable[[Any], Any], handler_call_details: Any) -> Any:
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        method = handler_call_details.method.rsplit("/", 1)[-1]
        md = dict(handler_call_details.invocation_metadata or ())
        header = md.get("authorization")
        authz = self.authz

        def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
            def inner(request: Any, context: Any) -> Any:
                unix = context.peer().startswith("unix:")
                try:
                    ident = authz.identify(header if isinstance(header, str) else None, unix)
                except Unauthenticated as e:
                    context.abort(grpc.StatusCode.UNAUTHENTICATED, str(e))
                    raise AssertionError("abort returned") from None
                except TokenError as e:
                    context.abort(grpc.StatusCode.UNAVAILABLE, str(e))
                    raise AssertionError("abort returned") from None
                if method in ADMIN_METHODS and not ident.admin:
                    context.abort(
                        grpc.StatusCode.PERMISSION_DENIED, f"{method} needs an admin token (this is {ident.name}, {ident.role})"
                    )
                _current.ident, _current.authz = ident, authz
                try:
                    return fn(request, context)
                finally:
                    _current.ident = _current.authz = None

            return inner

        kw = {"request_deserializer": handler.request_deserializer, "response_serializer": handler.response_serializer}
        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(wrap(handler.unary_unary), **kw)
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(wrap(handler.unary_stream), **kw)
        if handler.stream_unary:
            return grpc.stream_unary_rpc_method_handler(wrap(handler.stream_unary), **kw)
        if handler.stream_stream:
            return grpc.stream_stream_rpc_method_handler(wrap(handler.stream_stream), **kw)
        return handler
