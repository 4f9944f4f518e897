"""The depth of untrusted JSON, measured without recursion before it is parsed (cuzk.json_limits)."""

from __future__ import annotations

import json
import random

import pytest

from cuzk import json_limits as J


def reference_depth(s: str) -> int:
    """Depth by a plain JSON lexer, up to where a parser would stop at the latest: a backslash outside a
    string (never valid JSON)."""
    d = m = 0
    in_string = escaped = False
    for ch in s:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == "\\":
            break
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            d += 1
            m = max(m, d)
        elif ch in "]}":
            d -= 1
    return m


def prefix_before_stray_backslash(s: str) -> str:
    in_string = escaped = False
    for i, ch in enumerate(s):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == "\\":
            return s[:i]
        elif ch == '"':
            in_string = True
    return s


@pytest.mark.parametrize("chunk", [1 << 23, 7, 1])
def test_depth_matches_a_lexer(chunk, monkeypatch):
    monkeypatch.setattr(J, "_CHUNK", chunk)
    fixed = ["", "[]", "{}", '{"a":[1,{"b":"[[[["}]}', '["\\\\"]', '["\\"[[["]', '[[["\\\\\\"]"]]]', "[" * 3000 + "]" * 3000]
    for s in fixed:
        assert J.max_nesting(s.encode()) == reference_depth(s), s[:40]
    rng = random.Random(1)
    for _ in range(400):
        s = "".join(rng.choice('[]{}"\\ab,') for _ in range(rng.randrange(1, 120)))
        p = prefix_before_stray_backslash(s)  # past a stray backslash no parser reads on
        assert J.max_nesting(p.encode()) == reference_depth(p), p


def test_deep_input_is_measured_not_parsed():
    data = b"[" * 200_000 + b"]" * 200_000
    assert J.max_nesting(data) == 200_000
    assert J.max_nesting(json.dumps({"a": [[1, 2], {"b": "]]]]"}]}).encode()) == 3
