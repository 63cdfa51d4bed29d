"""The replay's reading path: its fast paths answer as the plain ones do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notify_core.events import log as events
from notify_core.events.log import PAYLOADS, EventError, EventLogReader, parse_event
from notify_core.replay.lines import dumps_item
from notify_core.replay.run import Replay
from notify_core.values.errors import NotifyError
from notify_core.values.instants import parse_instant

EXAMPLES = Path(__file__).parents[2].parent / "examples"

#: Values of every kind a payload member may meet (no ``null``: refused before the checks).
VALUES = st.one_of(
    st.sampled_from(["", "x", "u-1", "human", "text", "all", "grant", "ios", "Europe/Paris"]),
    st.sampled_from(["posix/UTC", "Nowhere/City", "active", "queued", "thread", "channel"]),
    st.booleans(),
    st.integers(min_value=-2, max_value=3),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.sampled_from(["", "a", "b"]), max_size=3),
    st.lists(st.integers(0, 2), max_size=2),
    st.fixed_dictionaries({}, optional={"kind": st.sampled_from(["space", "x"]), "id": st.text()}),
    st.lists(st.dictionaries(st.sampled_from(["a", "b"]), st.integers()), max_size=2),
)


@st.composite
def payloads(draw: st.DrawFn) -> tuple[str, dict[str, object]]:
    """An event type and a payload of its members (some left out) and others, each any value."""
    kind = draw(st.sampled_from(sorted(PAYLOADS)))
    names = [*PAYLOADS[kind], "other"]
    chosen = draw(st.lists(st.sampled_from(names), unique=True))
    return kind, {name: draw(VALUES) for name in chosen}


def _loop_passes(kind: str, payload: dict[str, object]) -> bool:
    try:
        events._check_payload(kind, PAYLOADS[kind], payload)
    except EventError:
        return False
    return True


@given(payloads())
def test_the_compiled_payload_check_answers_as_the_tables_loop(
    case: tuple[str, dict[str, object]],
) -> None:
    kind, payload = case
    assert events._fast_check(PAYLOADS[kind])(payload) == _loop_passes(kind, payload)


def test_every_type_has_a_payload_that_passes_the_compiled_check() -> None:
    """The check of a known type is not one that refuses everything (the loop would hide it)."""
    log = (EXAMPLES / "team-week.jsonl").read_text().splitlines()
    log += (EXAMPLES / "wiki-week.jsonl").read_text().splitlines()
    seen = set()
    for line in log:
        obj = json.loads(line)
        if obj["type"] in PAYLOADS:
            assert events._fast_check(PAYLOADS[obj["type"]])(obj["payload"]), line
            seen.add(obj["type"])
    assert len(seen) > 20


INSTANTS = st.sampled_from(
    [
        "2026-10-19T06:00:00Z",
        "2026-10-19T06:00:00.5Z",
        "2026-10-19T08:00:00+02:00",
        "2026-10-19T06:00:01.123456789Z",
        "2026-10-19T06:00:00",  # naive
        "2026-10-19T24:00:00Z",
        "not an instant",
        "0099-12-31T23:59:59Z",  # out of range
    ]
)


@given(st.lists(INSTANTS, min_size=1, max_size=8))
def test_the_last_instant_kept_gives_what_parsing_gives(texts: list[str]) -> None:
    """Lines in a row with the same ``occurred_at`` reuse the last one parsed: each line's
    instant, or its error, is the one parsing its own text gives."""
    for seq, text in enumerate(texts):
        line = {"seq": seq, "type": "x.y", "occurred_at": text}
        try:
            expected = parse_instant(text, "/occurred_at")
        except NotifyError as error:
            with pytest.raises(EventError) as raised:
                parse_event(line)
            assert (raised.value.code, raised.value.message, raised.value.pointer) == (
                error.code,
                error.message,
                error.pointer,
            )
        else:
            got = parse_event(line).occurred_at
            assert got == expected and got.utcoffset() == expected.utcoffset()


def test_an_instant_that_is_not_a_text_is_parsed_each_time() -> None:
    parse_event({"seq": 1, "type": "x.y", "occurred_at": "2026-10-19T06:00:00Z"})
    with pytest.raises(EventError) as raised:
        parse_event({"seq": 2, "type": "x.y", "occurred_at": 5})
    assert raised.value.code == "invalid_instant"


def _fed(replay: Replay, lines: list[str]) -> list[str]:
    """The plain loop: `Replay.feed` per line, then `Replay.finish`."""
    out = []
    for number, text in enumerate(lines, start=1):
        try:
            out += [dumps_item(item) for item in replay.feed(text, number)]
        except EventError as error:
            replay.summary.bad_lines += 1  # as `run` counts them
            out.append(f"{error.line} {error.code} {error.pointer}")
    return out + [dumps_item(item) for item in replay.finish()]


def _run(replay: Replay, lines: list[str]) -> list[str]:
    return [
        f"{item.line} {item.code} {item.pointer}"
        if isinstance(item, EventError)
        else dumps_item(item)
        for item in replay.run(lines)
    ]


@pytest.mark.parametrize("name", ["wiki-week.jsonl", "team-week.jsonl", "spec-example.jsonl"])
@pytest.mark.parametrize("include_skips", [False, True])
def test_run_yields_what_feeding_line_by_line_yields(name: str, include_skips: bool) -> None:
    """`Replay.run` (feed and feed_event written out, mail due asked only after an inbox
    event) gives the items, bad lines and summary of the plain loop."""
    lines = (EXAMPLES / name).read_text().splitlines()
    # Bad lines among them (a bad JSON, a bad member, a seq that goes back), and blank ones.
    lines[3:3] = ["{", '{"seq":1,"type":"x.y","occurred_at":"2026-10-19T06:00:00Z"}', "  "]
    lines.insert(len(lines) // 2, '{"seq":99999999,"type":"user.created","occurred_at":5}')
    fed, ran = Replay(include_skips=include_skips), Replay(include_skips=include_skips)
    assert _run(ran, lines) == _fed(fed, lines)
    assert ran.summary == fed.summary
    assert ran.summary.bad_lines == 3


def test_a_reader_of_other_lines_between_keeps_its_own_instants() -> None:
    """Two readers in turn (the last instant kept is shared by the process)."""
    a, b = EventLogReader(), EventLogReader()
    first = a.read('{"seq":1,"type":"x.y","occurred_at":"2026-10-19T06:00:00Z"}', 1)
    other = b.read('{"seq":1,"type":"x.y","occurred_at":"2026-10-19T07:00:00Z"}', 1)
    again = a.read('{"seq":2,"type":"x.y","occurred_at":"2026-10-19T06:00:00Z"}', 2)
    assert first is not None and other is not None and again is not None
    assert first.occurred_at == again.occurred_at != other.occurred_at
