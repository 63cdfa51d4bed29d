"""orjson behind the core's JSON seams: the same answers and text, faster.

The core decodes and encodes with the standard library (its only dependencies are attrs and
tzdata); the CLI hands these in. ``loads`` gives the stdlib's answers for every valid line and
refuses ``NaN`` and ``Infinity`` as the core does; ``dumps`` writes the text of
``json.dumps(..., ensure_ascii=False, separators=(",", ":"))`` for values of strings,
integers, booleans, lists and objects (what hints and event lines hold).
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable
from typing import IO, Final

import orjson

from notify_core.events.log import EventLogReader

__all__ = ["LINE", "dumps", "encode", "line_writer", "loads", "reader"]

#: orjson's encoder itself, for a loop that writes many lines: ``encode(obj, option=LINE)``
#: is the UTF-8 text of `dumps` followed by a line end.
encode: Final = orjson.dumps
#: The option of `encode` that ends the text with ``\n``.
LINE: Final = orjson.OPT_APPEND_NEWLINE


def loads(text: str) -> object:
    """Decode one JSON line (raises a `ValueError` subclass on bad JSON)."""
    return orjson.loads(text)


def dumps(obj: object) -> str:
    """Encode a JSON value as one compact line."""
    return orjson.dumps(obj).decode()


def reader() -> EventLogReader:
    """Return an event-log reader that decodes with orjson."""
    # orjson's own function, not `loads`: one Python call less per line of every log.
    return EventLogReader(loads=orjson.loads)


# Speed device (orjson bytes into the buffer, 0.63 % alone): the replay's line path, kept as one
# group: its 13 devices together are 12.2 % of the
# replay's instructions (cachegrind, 25,000-event synthetic log; docs/decisions.md 2026-12-06)
def line_writer(out: IO[str]) -> Callable[[bytes], object]:
    """Return what writes UTF-8 lines (bytes, as `encode` gives them) to the text stream ``out``.

    A stream that writes UTF-8 without turning line ends and is not line buffered (a file
    opened by `open_out`, standard output into a pipe or file on Linux) takes the bytes in its
    binary buffer, after what its text layer holds: no decoding of each line and encoding
    again. Any other stream (a terminal: each line shown when written) gets the text.
    """
    buffer = getattr(out, "buffer", None)
    encoding = getattr(out, "encoding", None)
    plain = os.linesep == "\n" and not getattr(out, "line_buffering", False)
    if buffer is not None and encoding and plain:
        try:
            utf8 = codecs.lookup(encoding).name == "utf-8"
        except LookupError:
            utf8 = False
        if utf8:
            out.flush()
            write: Callable[[bytes], object] = buffer.write
            return write
    text_write = out.write
    return lambda line: text_write(line.decode())
