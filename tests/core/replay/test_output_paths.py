"""The replay's output and counting fast paths give what the plain code gives."""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from notify_cli import fastjson
from notify_cli.options import open_out
from notify_core.hints.decide import Collect, Send, Skip, SkipReason, Via
from notify_core.hints.decision_values import Route
from notify_core.hints.pipeline import Hint, Trigger
from notify_core.replay.lines import (
    decision_to_json,
    dumps_item,
    dumps_json,
    hint_to_json,
    item_to_json,
)
from notify_core.replay.run import Counts, Summary
from notify_core.values.instants import format_instant
from notify_core.values.kinds import Kind

_instants = st.datetimes(
    min_value=datetime(1990, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
_routes = st.lists(
    st.builds(
        Route,
        device=st.sampled_from(["d-1", "d-2", "d-3"]),
        via=st.sampled_from(list(Via)),
        due=st.none() | _instants,
    ),
    max_size=4,
).map(tuple)
_decisions = st.one_of(
    st.builds(Skip, reason=st.sampled_from(list(SkipReason))),
    st.builds(Collect, until=_instants),
    st.builds(
        Send,
        routes=_routes,
        quiet=st.booleans(),
        opens_window_until=st.none() | _instants,
        count=st.none() | st.integers(0, 5),
    ),
)
hints = st.builds(
    Hint,
    trigger=st.sampled_from(list(Trigger)),
    at=_instants,
    recipient=st.sampled_from(["u-1", "u-2", "u-3"]),
    kind=st.sampled_from(list(Kind)),
    decision=_decisions,
    seq=st.none() | st.integers(1, 10**6),
    thread=st.none() | st.just("t-1"),
    message=st.none() | st.just("m-1"),
    target=st.none() | st.just("r-1"),
)


def _plain_add_hint(summary: Summary, hint: Hint) -> None:
    """`Summary.add_hint` as it was: one count of each counter per route."""
    decision = hint.decision
    if isinstance(decision, Skip):
        summary.decisions["skip"] += 1
        summary.skips[decision.reason.value] += 1
    elif isinstance(decision, Collect):
        summary.decisions["collect"] += 1
    else:
        summary.decisions["send"] += 1
        kind = hint.kind.value
        summary.sends_by_kind[kind] += 1
        summary.quiet += decision.quiet
        if decision.count is not None and hint.trigger is Trigger.FLUSH:
            summary.flush_counts[decision.count] += 1
        for route in decision.routes:
            summary.routes[(kind, route.via.value)] += 1
            if route.via is Via.PUSH:
                summary.pushes[hint.recipient] += 1
                summary.push_hours[(kind, hint.at.hour)] += 1


def _plain_add_skips(summary: Summary, skips: Counter[Skip]) -> None:
    """`Summary.add_skips` as it was: both counters per value."""
    for skip, count in skips.items():
        summary.decisions["skip"] += count
        summary.skips[skip.reason.value] += count


def _counts(summary: Summary) -> dict[str, object]:
    # Counter's ``==`` takes a missing key for 0; the summary's JSON would not.
    return {
        name: dict(value) if isinstance(value, Counter) else value
        for name, value in attrs.asdict(summary, recurse=False).items()
    }


@given(st.lists(hints, max_size=30))
def test_add_hint_counts_as_one_count_per_route(items: list[Hint]) -> None:
    fast, plain = Summary(), Summary()
    for hint in items:
        fast.add_hint(hint)
        _plain_add_hint(plain, hint)
    assert _counts(fast) == _counts(plain)
    assert fast.to_json() == plain.to_json()


@given(st.lists(st.dictionaries(st.sampled_from(list(SkipReason)), st.integers(0, 9))))
def test_add_skips_counts_as_each_value_counted(batches: list[dict[SkipReason, int]]) -> None:
    by_value, plain = Summary(), Summary()
    for batch in batches:
        skips = Counter({Skip(reason=reason): count for reason, count in batch.items()})
        by_value.add_skips(skips)
        _plain_add_skips(plain, skips)
    assert _counts(by_value) == _counts(plain)
    assert by_value.to_json() == plain.to_json()


def test_add_skips_of_nothing_counts_nothing() -> None:
    summary = Summary()
    summary.add_skips(Counter())
    assert _counts(summary) == _counts(Summary())


def _plain_hint_to_json(hint: Hint) -> dict[str, object]:
    """`hint_to_json` as it was: the enums' texts, the decision's members from
    `decision_to_json`."""
    out: dict[str, object] = {}
    if hint.seq is not None:
        out["seq"] = hint.seq
    out["trigger"] = hint.trigger.value
    out["at"] = format_instant(hint.at)
    out["recipient"] = hint.recipient
    out["kind"] = hint.kind.value
    for name in ("thread", "message", "target"):
        if getattr(hint, name) is not None:
            out[name] = getattr(hint, name)
    return {**out, **decision_to_json(hint.decision)}


@given(hints)
def test_hint_lines_are_the_plain_shapes_text(hint: Hint) -> None:
    plain = _plain_hint_to_json(hint)
    text = dumps_json(plain)
    assert dumps_json(hint_to_json(hint)) == text
    assert fastjson.dumps(hint_to_json(hint)) == text
    assert dumps_item(hint, fastjson.dumps) == text
    assert fastjson.encode(item_to_json(hint), option=fastjson.LINE) == (text + "\n").encode()
    assert hint_to_json(hint) == plain
    assert list(hint_to_json(hint)) == list(plain)


def _lines() -> list[bytes]:
    return [fastjson.encode({"n": n, "text": "é \\u2028"}, option=fastjson.LINE) for n in range(3)]


def test_a_file_takes_the_lines_in_its_buffer_after_its_text(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    with open_out(str(path)) as out:
        out.write("first\n")
        write = fastjson.line_writer(out)
        assert getattr(write, "__self__", None) is out.buffer  # the bytes path
        for line in _lines():
            write(line)
    assert path.read_bytes() == b"first\n" + b"".join(_lines())


@pytest.mark.parametrize(
    "make",
    [
        io.StringIO,
        lambda: io.TextIOWrapper(io.BytesIO(), encoding="latin-1"),
        lambda: io.TextIOWrapper(io.BytesIO(), encoding="utf-8", line_buffering=True),
    ],
)
def test_other_streams_take_the_lines_as_text(tmp_path: Path, make: Callable[[], IO[str]]) -> None:
    out = make()
    out.write("first\n")
    write = fastjson.line_writer(out)
    assert getattr(write, "__self__", None) is None  # not a buffer's own write
    texts = [line.decode() for line in _lines()]
    for line in _lines():
        write(line)
    out.seek(0)
    assert out.read() == "first\n" + "".join(texts)


@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(-3, 3))))
def test_counts_count_as_a_counter_counts(steps: list[tuple[str, int]]) -> None:
    fast: Counts[str] = Counts()
    plain: Counter[str] = Counter()
    for key, step in steps:
        fast[key] += step
        plain[key] += step
        assert fast[key] == plain[key] and fast["missing"] == 0
    assert dict(fast) == dict(plain) and list(fast) == list(plain)
    assert fast == plain and sorted(fast.items()) == sorted(plain.items())


def test_every_count_of_the_summary_is_a_counts() -> None:
    # The cheap store of `Counts` is what the summary's per-decision counting relies on.
    summary = Summary()
    for field in attrs.fields(Summary):
        value = getattr(summary, field.name)
        assert not isinstance(value, Counter) or type(value) is Counts, field.name
    assert Counts.__delitem__ is dict.__delitem__
