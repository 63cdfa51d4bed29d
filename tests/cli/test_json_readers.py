"""The core's reader (standard library) and the CLI's (orjson) give the same answer for every
line: the same event, or a bad line with the same code and member (formats.md section 2)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import example, given
from hypothesis import strategies as st

from notify_cli import fastjson
from notify_cli.main import cli
from notify_core.events.log import MAX_EVENT_DEPTH, Event, EventError, EventLogReader

LINE = (
    '{"seq":%s,"type":"settings.updated","occurred_at":"2026-10-23T08:00:00Z",'
    '"audience":"u","payload":{"key":"notify.default_level","value":%s}}'
)

NUMBERS = st.one_of(
    st.integers().map(str),
    st.integers(min_value=2**62, max_value=2**200).map(lambda n: str(n * st_sign(n))),
    st.integers(min_value=2**63 - 3, max_value=2**64 + 3).map(str),
    st.integers(min_value=2**63 - 3, max_value=2**63 + 3).map(lambda n: f"-{n}"),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1e400", "-1e309", "1e-400", "1E308", "1" + "0" * 400, "-0", "-0.0"]),
    st.tuples(st.integers(1, 9), st.integers(-450, 450)).map(lambda t: f"{t[0]}e{t[1]}"),
)


def st_sign(n: int) -> int:
    return -1 if n % 2 else 1


def nested(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


#: A value as the text of a JSON member: numbers, strings (surrogates too), deep nesting.
VALUES = st.one_of(
    NUMBERS,
    st.text().map(lambda s: json.dumps(s, ensure_ascii=False)),
    st.text(alphabet=st.characters(categories=["Cs", "Zl", "Zp", "Cc"])).map(json.dumps),
    st.sampled_from(
        [MAX_EVENT_DEPTH - 3, MAX_EVENT_DEPTH - 2, MAX_EVENT_DEPTH - 1, 900, 1000, 1022, 1030]
    ).map(nested),
    st.recursive(
        st.none() | st.booleans() | NUMBERS.map(json.loads) | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
        max_leaves=8,
    ).map(json.dumps),
)


def answer(reader: EventLogReader, line: bytes) -> Event | tuple[str, str | None]:
    try:
        event = reader.read(line, 1)
    except EventError as error:
        return (error.code, error.pointer)
    assert event is not None
    return event


@given(seq=st.one_of(st.just("7"), NUMBERS), value=VALUES)
@example(seq="99999999999999999999999", value='"mentions"')
@example(seq="7", value="1e400")
@example(seq="7", value=nested(MAX_EVENT_DEPTH - 1))
@example(seq="7", value='"\\ud800"')
def test_both_readers_give_the_same_answer(seq: str, value: str) -> None:
    line = (LINE % (seq, value)).encode("utf-8", "surrogatepass")
    slow, fast = answer(EventLogReader(), line), answer(fastjson.reader(), line)
    assert slow == fast, (line[:200], slow, fast)


@pytest.mark.parametrize(
    ("seq", "value", "expected"),
    [
        ("99999999999999999999999", '"all"', ("invalid_event", "/seq")),
        ("18446744073709551616", '"all"', ("invalid_event", "/seq")),
        ("18446744073709551615", '"all"', None),
        ("7", "1e400", ("invalid_json", None)),
        ("7", nested(MAX_EVENT_DEPTH - 2), None),  # the object and payload are 2 levels
        ("7", nested(MAX_EVENT_DEPTH - 1), ("invalid_json", None)),
        ("7", nested(1000), ("invalid_json", None)),
    ],
)
def test_the_common_answer(seq: str, value: str, expected: tuple[str, str | None] | None) -> None:
    line = (LINE % (seq, value)).encode()
    for reader in (EventLogReader(), fastjson.reader()):
        got = answer(reader, line)
        assert (None if isinstance(got, Event) else got) == expected


def test_g3_a_huge_seq_is_a_bad_line_naming_the_member_in_the_cli() -> None:
    line = LINE % ("99999999999999999999999", '"all"')
    result = CliRunner().invoke(cli, ["replay", "-"], input=line + "\n")
    assert result.exit_code == 2
    assert result.stderr.startswith("<stdin>:1: bad event at /seq: ")
