"""The answer of a framework-neutral HTTP handler (`Response`) and the small helpers every
handler module shares: JSON answers, the ``400`` of a bad request naming the member at fault
(``{"error": {"code", "message", "pointer"?}}``), a strict query string and a media type.

`notify_pg.http.handlers` (the inbox), `notify_pg.http.unsubscribe` (one-click unsubscribe)
and `notify_pg.http.admin` (preferences and settings) answer with them, so that an answer
is the same bytes whichever module and whichever path (WSGI or native) gives it.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from typing import Final

import attrs

__all__ = [
    "JSON_TYPE",
    "MAX_BODY_BYTES",
    "NO_STORE",
    "Response",
    "bare",
    "json_answer",
    "media_type",
    "one_value",
    "parse_query",
    "problem",
]

#: The largest request body a handler reads; a longer one is a ``400``.
MAX_BODY_BYTES: Final = 64 * 1024
#: The ``Content-Type`` of a JSON answer.
JSON_TYPE: Final = ("Content-Type", "application/json")
#: Every answer of a person's or an administrator's data is private and current.
NO_STORE: Final = ("Cache-Control", "no-store")


@attrs.frozen(kw_only=True)
class Response:
    """What a handler answers: the status, the headers in order, and the body bytes."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""

    def header(self, name: str) -> str | None:
        """Return the first header of that name (case-insensitive), or ``None``."""
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), None)


def bare(status: int) -> Response:
    """An answer with no body (``Cache-Control: no-store``)."""
    return Response(status=status, headers=(NO_STORE,))


def json_answer(status: int, value: object, *extra: tuple[str, str]) -> Response:
    """``value`` as compact UTF-8 JSON (``Cache-Control: no-store``, then ``extra``)."""
    body = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return Response(status=status, headers=(JSON_TYPE, NO_STORE, *extra), body=body)


def problem(code: str, message: str, pointer: str | None = None) -> Response:
    """The ``400`` of a bad request: ``{"error": {"code", "message", "pointer"?}}``."""
    error = {"code": code, "message": message}
    if pointer is not None:
        error["pointer"] = pointer
    return json_answer(400, {"error": error})


def parse_query(query: str | bytes) -> dict[str, list[str]] | None:
    """Parse a query string strictly enough: UTF-8 text, or ``None``."""
    try:
        text = query.decode("utf-8") if isinstance(query, bytes) else query
        return urllib.parse.parse_qs(
            text, keep_blank_values=True, errors="strict", max_num_fields=20
        )
    except (UnicodeDecodeError, ValueError):
        return None


def one_value(values: Mapping[str, list[str]], name: str) -> str | None:
    """The value of a field given exactly once, else ``None``."""
    found = values.get(name)
    return found[0] if found is not None and len(found) == 1 else None


def media_type(content_type: str | None) -> str:
    """The media type of a ``Content-Type`` (no parameters, lower case; ``""`` for none)."""
    return (content_type or "").split(";", 1)[0].strip().lower()
