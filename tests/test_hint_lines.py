"""`HintLines` writes the text of `dumps_hint` for every hint, whatever came before it.

Its cached parts (the members before and after ``recipient``, a skip's decision) must never
leak from one hint into the next: runs of hints that share parts, and runs that change any
one part, are written as `dumps_hint` writes each alone.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from notify_cli import fastjson
from notify_core.decide import Collect, Route, Send, Skip, SkipReason, Via
from notify_core.kinds import Kind
from notify_core.lines import HintLines, dumps_hint, dumps_json
from notify_core.pipeline import Hint, Trigger

_BASE = datetime(2026, 10, 23, 21, 30, tzinfo=UTC)
# A few instants, one of them also as an equal instant in another zone (same text, other object).
_ATS = [
    _BASE,
    _BASE + timedelta(seconds=1),
    _BASE.astimezone(timezone(timedelta(hours=2))),
]
_TEXT = st.sampled_from(["t-1", "t-2", "m-1", "h\u00e9", '"q\\', "\u2028", "u-9"])
_MAYBE = st.none() | _TEXT
_ROUTES = st.lists(
    st.builds(
        Route,
        device=_TEXT,
        via=st.sampled_from(list(Via)),
        due=st.none() | st.sampled_from(_ATS),
    ),
    max_size=3,
).map(tuple)
_DECISIONS = st.one_of(
    st.builds(Skip, reason=st.sampled_from(list(SkipReason))),
    st.builds(Collect, until=st.sampled_from(_ATS)),
    st.builds(
        Send,
        routes=_ROUTES,
        quiet=st.booleans(),
        opens_window_until=st.none() | st.sampled_from(_ATS),
        count=st.none() | st.integers(0, 50),
    ),
)
_HINTS = st.builds(
    Hint,
    trigger=st.sampled_from(list(Trigger)),
    at=st.sampled_from(_ATS),
    recipient=_TEXT,
    kind=st.sampled_from(list(Kind)),
    decision=_DECISIONS,
    seq=st.none() | st.integers(0, 3),
    thread=_MAYBE,
    message=_MAYBE,
    target=_MAYBE,
)


@st.composite
def _fan_outs(draw: st.DrawFn) -> list[Hint]:
    """Runs of hints that share all but recipient and decision, as a fan-out writes them."""
    out: list[Hint] = []
    for first in draw(st.lists(_HINTS, min_size=1, max_size=4)):
        out.append(first)
        for recipient, decision in draw(st.lists(st.tuples(_TEXT, _DECISIONS), max_size=4)):
            out.append(
                Hint(
                    trigger=first.trigger,
                    at=first.at,
                    recipient=recipient,
                    kind=first.kind,
                    decision=decision,
                    seq=first.seq,
                    thread=first.thread,
                    message=first.message,
                    target=first.target,
                )
            )
    return out


@given(st.lists(_HINTS, max_size=12) | _fan_outs())
def test_hint_lines_write_what_dumps_hint_writes(hints: list[Hint]) -> None:
    for dumps in (dumps_json, fastjson.dumps):
        write = HintLines(dumps)
        assert [write(hint) for hint in hints] == [dumps_hint(hint, dumps) for hint in hints]
