"""``cuzk config switches``: every optimization switch (:mod:`cuzk.engine.switches`) with its value under
``--config FILE`` and ``--set KEY=VALUE`` and the environment, where the value came from, the default,
the allowed values, where the default was measured and what it trades. ``--json``: one JSON object.

Also the ``--set`` option shared by the verbs that take a configuration (``daemon``, ``demo``, ``prove``,
``setup``, ``config switches``): :func:`add_set_option`, :func:`overrides`, :func:`apply_switches`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from .. import CuzkError


def add_set_option(s) -> None:
    s.add_argument(
        "--set",
        dest="set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a config key, e.g. gpu.ntt_radix=2 or synthesis.lc_storage=dicts (repeatable; over --config, "
        "under the CUZK_* variables; `cuzk config switches` lists the switches)",
    )


def overrides(a) -> dict[str, Any]:
    """The ``--set`` items as load_config overrides ("section.key" -> value)."""
    from ..engine.config import parse_override

    return dict(parse_override(item) for item in getattr(a, "set", None) or [])


def apply_switches(a, verb: str) -> None:
    """``cuzk prove`` / ``setup``: make ``--config FILE``'s and ``--set``'s switches this process's (only
    switch keys: the rest of a daemon config means nothing to a one-shot verb). Nothing given: the
    defaults and the environment, as before."""
    ov = overrides(a)
    if not ov and not getattr(a, "config", None):
        return
    from ..engine import switches
    from ..engine.config import load_config

    for key in ov:
        if key not in switches.BY_KEY:
            raise CuzkError(f"--set {key}: not an optimization switch; `cuzk {verb}` takes only those (`cuzk config switches`)")
    switches.apply(load_config(a.config or None, ov))


def cmd_switches(a) -> int:
    from ..engine import switches
    from ..engine.config import load_config

    cfg = load_config(a.config or None, overrides(a))
    settings = switches.resolve(cfg)
    if a.json:
        json.dump(switches.as_json(settings), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(switches.as_text(settings))
    return 0


def add_parsers(sub) -> None:
    s = sub.add_parser("config", help="the daemon's configuration: `cuzk config switches` (the optimization switches)")
    csub = s.add_subparsers(dest="config_verb", required=True)
    sw = csub.add_parser(
        "switches",
        help="every optimization switch: value (and where it came from), default, allowed values, where measured, trade-off",
    )
    sw.add_argument("--config", default="", help="a daemon config file (TOML): show its values")
    add_set_option(sw)
    sw.add_argument("--json", action="store_true", help="one JSON object")
    sw.set_defaults(fn=cmd_switches)
