"""The log lines of the long-running commands (``notify worker``): JSON lines or plain text.

Both formats carry the same things: time, level, logger, message and the record's fields (the
``fields`` dict a library module passes in ``extra``: counts, kinds, reasons, outcomes, round,
partition, durations), never a person, a thread, a message, a token or an address (the
modules that log keep them out; tests check the lines for the ids of the log they ran).
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Final

from notify_cli.secrets import redact

__all__ = ["LOG_FORMATS", "JsonLines", "TextLines", "configure"]

#: The values of ``--log-format``.
LOG_FORMATS: Final = ("json", "text")


def _record(record: logging.LogRecord) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
        "level": record.levelname.lower(),
        "logger": record.name,
        # A library's message may quote a connection string: never with its password.
        "msg": redact(record.getMessage()),
    }
    fields = getattr(record, "fields", None)
    if isinstance(fields, dict):
        out.update({k: redact(v) if isinstance(v, str) else v for k, v in fields.items()})
    if record.exc_info and record.exc_info[0] is not None:
        out["error_type"] = record.exc_info[0].__name__
    return out


class JsonLines(logging.Formatter):
    """One JSON object per log record: ``ts``, ``level``, ``logger``, ``msg`` and the fields."""

    def format(self, record: logging.LogRecord) -> str:
        """Return the record as one JSON line."""
        return json.dumps(_record(record), ensure_ascii=False, separators=(",", ":"), default=str)


class TextLines(logging.Formatter):
    """One plain line per log record for people: time, level, message, then ``key=value``.

    A value that is not a bare word (spaces, quotes, a dict) is written as JSON.
    """

    def format(self, record: logging.LogRecord) -> str:
        """Return the record as one line of text."""
        out = _record(record)
        head = f"{out.pop('ts')} {out.pop('level'):<7} {out.pop('msg')}"
        out.pop("logger")
        pairs = [f"{key}={_text(value)}" for key, value in out.items()]
        return " ".join([head, *pairs])


def _text(value: object) -> str:
    if isinstance(value, str) and value and not any(c.isspace() or c in "\"'=" for c in value):
        return value
    if isinstance(value, bool | int | float) or value is None:
        return json.dumps(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def configure(level: str, log_format: str = "json", logger: str = "notify_pg") -> None:
    """Send the records of ``logger`` (and its children) to stderr in ``log_format``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(TextLines() if log_format == "text" else JsonLines())
    root = logging.getLogger(logger)
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
