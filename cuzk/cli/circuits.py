"""``cuzk register ID --r1cs F --zkey F [--wasm F --sym F] [--upload] [--replace]`` and ``cuzk circuits``:
register a circuit with a running daemon (admin), and list the registered ones.

Without ``--upload`` the files are paths on the daemon's machine (under its ``registration.roots``); with
it they are read here and their bytes sent (the daemon stores them under its state folder, at most its
``registration.max_upload_bytes`` in all). A replacement (``--replace``) applies to jobs submitted after
it; jobs accepted before are proved with the version they were accepted for.
"""

from __future__ import annotations

import json

from .. import CuzkError


def _client_opts(s) -> None:
    s.add_argument("--addr", default=None, help="daemon address (default: $CUZK_ADDR, else the default daemon.listen)")
    s.add_argument("--token", default=None, help="bearer token, admin role (default: $CUZK_TOKEN)")
    s.add_argument("--ca", default=None, help="CA bundle (PEM): TLS to a TCP address (default: $CUZK_CA)")
    s.add_argument("--cert", default=None, help="client certificate (PEM), for mutual TLS")
    s.add_argument("--key", default=None, help="client certificate's private key (PEM)")


def _params(text: str | None) -> dict | None:
    if not text:
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise CuzkError(f"--python-params: malformed JSON at column {e.colno}: {e.msg}") from None
    if not isinstance(obj, dict):
        raise CuzkError("--python-params: expected a JSON object")
    return obj


def _describe(info: dict) -> str:
    key = info.get("zkey") or info.get("params") or ""
    return (
        f"{info['id']}: {info['curve']}, {info['n_constraints']} constraints, {info['partitions']} partition"
        f"{'s' * (info['partitions'] != 1)}, tier {info['tier']}, version {info.get('version', '')}, "
        f"key sha256 {info.get('key_sha256', '')[:16]} ({key})"
    )


def cmd_register(a) -> int:
    from .main import _client

    if not (a.r1cs or a.python):
        raise CuzkError("give --r1cs FILE (a circom circuit) or --python package.module:ClassName")
    if not (a.zkey or a.params):
        raise CuzkError("give --zkey FILE or --params FILE (the proving key)")
    with _client(a) as c:
        info = c.register(
            a.id,
            r1cs=a.r1cs or "",
            zkey=a.zkey or "",
            params=a.params or "",
            wasm=a.wasm or "",
            sym=a.sym or "",
            default_priority=a.priority or 0,
            batchable=a.batchable,
            partitions=a.partitions,
            max_queue=a.max_queue,
            replace=a.replace,
            python=a.python or "",
            python_params=_params(a.python_params),
            deadline_s=a.deadline_s,
            witness_timeout_s=a.witness_timeout_s,
            upload=a.upload,
        )
    print(("already registered: " if info["already_registered"] else "registered ") + _describe(info))
    return 0


def cmd_circuits(a) -> int:
    from .main import _client

    with _client(a) as c:
        infos = c.list_circuits()
    if a.json:
        print(json.dumps(infos, indent=1))
        return 0
    if not infos:
        print("no circuits registered")
    for info in infos:
        print(_describe(info))
    return 0


def add_parsers(sub) -> None:
    s = sub.add_parser("register", help="register a circuit with the daemon (admin): paths on its machine, or --upload")
    s.add_argument("id", help="circuit id")
    s.add_argument("--r1cs", help="circom .r1cs")
    s.add_argument("--python", help="a Python circuit, package.module:ClassName (instead of --r1cs)")
    s.add_argument("--python-params", metavar="JSON", help="the Python circuit's parameters, a JSON object")
    s.add_argument("--zkey", help="snarkjs proving key")
    s.add_argument("--params", help="bellperson .params (instead of --zkey)")
    s.add_argument("--wasm", help="circom witness generator (for inputs JSON)")
    s.add_argument("--sym", help="circom .sym (signal names in error messages)")
    s.add_argument("--upload", action="store_true", help="send the files' bytes (the daemon stores them) instead of paths")
    s.add_argument("--replace", action="store_true", help="redefine a registered circuit (accepted jobs keep their version)")
    s.add_argument("--priority", default="", help="default priority: low, normal, high, critical")
    s.add_argument("--batchable", action="store_true")
    s.add_argument("--partitions", type=int, default=1)
    s.add_argument("--max-queue", type=int, default=0, help="active jobs of this circuit (0 = the daemon's default)")
    s.add_argument("--deadline-s", type=float, default=0.0, help="submit-to-proof deadline (0 = none)")
    s.add_argument(
        "--witness-timeout-s", type=float, default=0.0, help="longest one wasm witness calculation (0 = 60 s; at most 1 h)"
    )
    _client_opts(s)
    s.set_defaults(fn=cmd_register)

    s = sub.add_parser("circuits", help="list the daemon's circuits (paths only for admins; others see basenames)")
    s.add_argument("--json", action="store_true")
    _client_opts(s)
    s.set_defaults(fn=cmd_circuits)
