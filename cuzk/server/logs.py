"""Structured logging for the daemon: one line per event, ``key=value`` or JSON.

Engine messages are already ``event=name key=value ...``; the kv format prefixes time, level and
logger; the JSON format parses the pairs into fields of one object per line.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time

_PAIR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def _ts(record) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(record.created)) + f".{int(record.msecs):03d}"


class KvFormatter(logging.Formatter):
    def format(self, record):
        msg = record.getMessage()
        if "=" not in msg.split(" ", 1)[0]:
            msg = "msg=" + json.dumps(msg)
        line = f"ts={_ts(record)} level={record.levelname.lower()} logger={record.name} {msg}"
        if record.exc_info:
            line += " exc=" + json.dumps(self.formatException(record.exc_info))
        return line


class JsonFormatter(logging.Formatter):
    def format(self, record):
        msg = record.getMessage()
        obj = {"ts": _ts(record), "level": record.levelname.lower(), "logger": record.name}
        pairs = _PAIR.findall(msg)
        if pairs and msg.startswith(pairs[0][0] + "="):
            for k, text in pairs:
                v: object = text
                if text.startswith('"'):
                    try:
                        v = json.loads(text)
                    except ValueError:
                        pass
                obj[k] = v
        else:
            obj["msg"] = msg
        if record.exc_info:
            obj["exc"] = self.formatException(record.exc_info)
        return json.dumps(obj)


def setup_logging(level: str = "info", fmt: str = "kv", file: str = "") -> None:
    handler = logging.FileHandler(file) if file else logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else KvFormatter())
    root = logging.getLogger("cuzk")
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    root.propagate = False
