"""A replay split by recipient partition and merged back into the single replay's output.

Every hint, entry line and mail line belongs to one recipient, and a recipient's decisions
read only their own state and the host's (`notify_core.replay.partitions`). So ``count`` replays of
the same log, each deciding for one `Partition`, together decide exactly what one replay
does. What remains is the order: a line's place in the single replay's output (formats.md
section 3) is the log line that caused it (the end of the log for the final due work), then
its `sub_key`. A partition gives its lines grouped by the log line (`Group`), in key order;
`merge_groups` merges the partitions' groups by log line and sorts only the lines of a log
line that several partitions wrote to. Lines with equal keys have the same recipient, so they
come from one partition, whose own order the stable sort keeps. The summaries merge by
`merge_summaries`.

Events, bad lines and unknown references are the log's, not a recipient's: every partition
sees all of them, and only the first (index 0) reports them.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from operator import itemgetter
from typing import Final

import attrs

from notify_core.events.log import EventError
from notify_core.hints.pipeline import Hint, Trigger
from notify_core.inbox.pipeline import InboxLine, MailLine
from notify_core.replay.lines import Item, UnknownReference, dumps_item, dumps_json
from notify_core.replay.partitions import Partition
from notify_core.replay.run import Replay, Summary

__all__ = [
    "END",
    "Group",
    "PartitionRun",
    "SubKey",
    "error_of",
    "merge_groups",
    "merge_summaries",
    "run_partition",
    "sub_key",
]

#: The position of the work that `Replay.finish` yields: after every line of the log.
END: Final = 1 << 62

#: A line's place among the lines caused by one log line: (phase, then the phase's own order).
SubKey = tuple[int, int, int, str, str, int, str]

_MESSAGE: Final = "message"
#: The lists of a line that caused nothing in a partition (never appended to: read only).
_NO_KEYS: Final[list[SubKey]] = []
_NO_TEXTS: Final[list[str]] = []
_line_of: Final = itemgetter(0)


def _micros(at: datetime) -> int:
    # An integer sorts like the instant and pickles small (the keys travel between processes).
    return int(at.timestamp()) * 1_000_000 + at.microsecond


def sub_key(item: Item) -> SubKey:
    """Return where the single replay writes ``item`` among the lines of its log line.

    The phases of one line, in order (`Replay.feed_event`): due work (hints by due time and
    recipient, a drain instant's mail lines after the hints due by then, by recipient, site,
    the send first), the event's hints (other kinds, then ``message``, each by recipient),
    its entry lines (by recipient, category), then its unknown references.
    """
    if type(item) is Hint:
        if item.trigger is Trigger.EVENT:
            group = 1 if item.kind._value_ == _MESSAGE else 0
            return (1, group, 0, item.recipient, "", 0, "")
        return (0, _micros(item.at), 0, item.recipient, "", 0, "")
    if type(item) is MailLine:
        reason = "" if item.reason is None else item.reason.value
        skip = 0 if item.decision == "send" else 1
        return (0, _micros(item.at), 1, item.recipient, item.site, skip, reason)
    if type(item) is InboxLine:
        return (2, 0, 0, item.recipient, item.category, 0, "")
    assert isinstance(item, UnknownReference)
    return (3, 0, 0, "", "", 0, "")


#: The lines one log line causes in one partition: the log line's number, then the rest of
#: each line's key and its text, in key order (`run_partition` gives them line by line).
Group = tuple[int, list[SubKey], list[str]]


@attrs.define
class PartitionRun:
    """What one partition's replay gives: its lines grouped by log line, summary, bad lines.

    Attributes:
        groups: the partition's lines, one `Group` per log line that caused any, in log order
            (empty when `run_partition` handed them to a ``sink`` instead).
        summary: the partition's counts.
        errors: the bad lines as ``(line, code, message, pointer)`` (index 0 only; plain
            values so that they travel between processes).
    """

    groups: list[Group]
    summary: Summary
    errors: list[tuple[int, str, str, str | None]]


def run_partition(
    replay: Replay,
    partition: Partition,
    lines: Iterable[str | bytes],
    dumps: Callable[[object], str] = dumps_json,
    sink: Callable[[Group], object] | None = None,
) -> PartitionRun:
    """Replay ``lines`` deciding for ``partition`` only; ``replay`` must own that partition.

    Args:
        replay: a fresh `Replay` built with ``owns=partition``.
        partition: the partition it decides for.
        lines: every line of the log.
        dumps: the JSON encoder of the lines (as `dumps_item` takes).
        sink: called with each `Group` as soon as its log line is replayed (e.g. to compress
            it away); ``None`` keeps them in `PartitionRun.groups`.
    """
    first = partition.index == 0
    groups: list[Group] = []
    put = groups.append if sink is None else sink
    errors: list[tuple[int, str, str, str | None]] = []

    def keep(items: Iterable[Item], line: int) -> None:
        # Most lines cause nothing in a partition: their lists are made at the first item.
        keys: list[SubKey] = _NO_KEYS
        texts: list[str] = _NO_TEXTS
        try:
            for item in items:
                if not first and type(item) is UnknownReference:
                    continue
                if keys is _NO_KEYS:
                    keys, texts = [], []
                keys.append(sub_key(item))
                texts.append(dumps_item(item, dumps))
        finally:  # a bad line's error can follow lines it caused (mail due before it)
            if texts:
                put((line, keys, texts))

    feed = replay.feed
    for number, text in enumerate(lines, start=1):
        try:
            keep(feed(text, number), number)
        except EventError as error:
            replay.summary.bad_lines += 1
            if first:
                errors.append((error.line, error.code, error.message, error.pointer))
    keep(replay.finish(), END)
    return PartitionRun(groups=groups, summary=replay.summary, errors=errors)


def merge_groups(parts: Sequence[Iterable[Group]]) -> Iterator[list[str]]:
    """Merge the partitions' groups (each in log order) into the single replay's order.

    Yields the texts of one log line at a time. A log line that only one partition wrote
    lines for costs no comparison of keys; the others are sorted by key, stably, so that
    lines with equal keys (one recipient's, hence one partition's) keep their order.
    """
    line, same = -1, []
    for group in heapq.merge(*parts, key=_line_of):
        if group[0] == line:
            same.append(group)
            continue
        if same:
            yield _texts(same)
        line, same = group[0], [group]
    if same:
        yield _texts(same)


def _texts(same: list[Group]) -> list[str]:
    """The texts of one log line's groups (one per partition that wrote any), in key order."""
    if len(same) == 1:
        return same[0][2]
    keys: list[SubKey] = []
    texts: list[str] = []
    for _, more_keys, more_texts in same:
        keys += more_keys
        texts += more_texts
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return [texts[index] for index in order]


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
