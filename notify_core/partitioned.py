"""A replay split by recipient partition and merged back into the single replay's output.

Every hint, entry line and mail line belongs to one recipient, and a recipient's decisions
read only their own state and the host's (`notify_core.partitions`). So ``count`` replays of
the same log, each deciding for one `Partition`, together decide exactly what one replay
does. What remains is the order: each line carries a sort key (`sort_key`) that places it
where the single replay writes it (formats.md section 3), and the partitions' lines, each
partition's already in key order, are merged by key (`merge_lines`); lines with equal keys
have the same recipient, so they come from one partition, whose own order the merge keeps.
The summaries merge by `merge_summaries`.

Events, bad lines and unknown references are the log's, not a recipient's: every partition
sees all of them, and only the first (index 0) reports them.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Final

import attrs

from notify_core.events import EventError
from notify_core.inbox.pipeline import InboxLine, MailLine
from notify_core.partitions import Partition
from notify_core.pipeline import Hint, Trigger
from notify_core.replay import Item, Replay, Summary, UnknownReference, dumps_item, dumps_json

__all__ = [
    "END",
    "Key",
    "PartitionRun",
    "error_of",
    "merge_lines",
    "merge_summaries",
    "run_partition",
    "sort_key",
]

#: The position of the work that `Replay.finish` yields: after every line of the log.
END: Final = 1 << 62

#: A line's place in the single replay: (log line, phase, then the phase's own order).
Key = tuple[int, int, int, int, str, str, int, str]

_MESSAGE: Final = "message"


def _micros(at: datetime) -> int:
    # An integer sorts like the instant and pickles small (the keys travel between processes).
    return int(at.timestamp()) * 1_000_000 + at.microsecond


def sort_key(item: Item, line: int) -> Key:
    """Return where the single replay writes ``item``, caused by log line ``line``.

    The phases of one line, in order (`Replay.feed_event`): due work (hints by due time and
    recipient, a drain instant's mail lines after the hints due by then, by recipient, site,
    the send first), the event's hints (other kinds, then ``message``, each by recipient),
    its entry lines (by recipient, category), then its unknown references.
    """
    if type(item) is Hint:
        if item.trigger is Trigger.EVENT:
            group = 1 if item.kind._value_ == _MESSAGE else 0
            return (line, 1, group, 0, item.recipient, "", 0, "")
        return (line, 0, _micros(item.at), 0, item.recipient, "", 0, "")
    if type(item) is MailLine:
        reason = "" if item.reason is None else item.reason.value
        skip = 0 if item.decision == "send" else 1
        return (line, 0, _micros(item.at), 1, item.recipient, item.site, skip, reason)
    if type(item) is InboxLine:
        return (line, 2, 0, 0, item.recipient, item.category, 0, "")
    assert isinstance(item, UnknownReference)
    return (line, 3, 0, 0, "", "", 0, "")


@attrs.define
class PartitionRun:
    """What one partition's replay gives: its lines with their keys, summary and bad lines.

    Attributes:
        lines: ``(key, JSON line)`` in key order.
        summary: the partition's counts.
        errors: the bad lines as ``(line, code, message, pointer)`` (index 0 only; plain
            values so that they travel between processes).
    """

    lines: list[tuple[Key, str]]
    summary: Summary
    errors: list[tuple[int, str, str, str | None]]


def run_partition(
    replay: Replay,
    partition: Partition,
    lines: Iterable[str | bytes],
    dumps: Callable[[object], str] = dumps_json,
) -> PartitionRun:
    """Replay ``lines`` deciding for ``partition`` only; ``replay`` must own that partition.

    Args:
        replay: a fresh `Replay` built with ``owns=partition``.
        partition: the partition it decides for.
        lines: every line of the log.
        dumps: the JSON encoder of the lines (as `dumps_item` takes).
    """
    first = partition.index == 0
    out: list[tuple[Key, str]] = []
    errors: list[tuple[int, str, str, str | None]] = []
    add = out.append

    def keep(items: Iterable[Item], line: int) -> None:
        for item in items:
            if not first and type(item) is UnknownReference:
                continue
            add((sort_key(item, line), dumps_item(item, dumps)))

    for number, text in enumerate(lines, start=1):
        try:
            keep(replay.feed(text, number), number)
        except EventError as error:
            replay.summary.bad_lines += 1
            if first:
                errors.append((error.line, error.code, error.message, error.pointer))
    keep(replay.finish(), END)
    return PartitionRun(lines=out, summary=replay.summary, errors=errors)


def merge_lines(parts: Sequence[Sequence[tuple[Key, str]]]) -> Iterator[str]:
    """Merge the partitions' keyed lines (each in key order) into the single replay's order."""
    for _, text in heapq.merge(*parts, key=lambda pair: pair[0]):
        yield text


#: The summary's counts of the log itself, not of a recipient: every partition has them all.
_LOG_COUNTS: Final = frozenset(
    {"events", "unknown_types", "unknown_references", "bad_lines", "mail_configured"}
)


def merge_summaries(parts: Sequence[Summary]) -> Summary:
    """Return the summary of the whole replay from its partitions' (index order).

    Decision, entry and mail counts add up (each belongs to one recipient, so the per-recipient
    push volumes are disjoint and their percentiles come out exact); the log's own counts
    (events, unknown types and references, bad lines, mail configured) are the first's. Any
    other count of `Summary` (a `Counter` or an integer) is a recipient's and adds up.
    """
    first = parts[0]
    values: dict[str, object] = {}
    for field in attrs.fields(Summary):
        mine = getattr(first, field.name)
        if field.name in _LOG_COUNTS:
            values[field.name] = mine.copy() if isinstance(mine, Counter) else mine
        elif isinstance(mine, Counter):
            total: Counter[object] = Counter()
            for part in parts:
                total.update(getattr(part, field.name))
            values[field.name] = total
        else:
            assert type(mine) is int, field.name  # a new kind of count must say how it merges
            values[field.name] = sum(getattr(part, field.name) for part in parts)
    return Summary(**values)  # type: ignore[arg-type]


def error_of(values: tuple[int, str, str, str | None]) -> EventError:
    """Rebuild a bad line's `EventError` from `PartitionRun.errors`."""
    line, code, message, pointer = values
    return EventError(code, message, pointer, line=line)
