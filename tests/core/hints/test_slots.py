"""`notify_core.hints.slots.positional` builds the value the keyword ``__init__`` builds."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from notify_core.hints.decide import Collect, Skip, SkipReason
from notify_core.hints.pipeline import Candidate, Hint, Trigger
from notify_core.hints.ports import Due, Window
from notify_core.hints.slots import positional
from notify_core.values.kinds import Kind

_AT = st.datetimes(timezones=st.just(UTC))
_ID = st.text(max_size=4)
_MAYBE_ID = st.none() | _ID
_UNTIL = datetime(2026, 1, 1, tzinfo=UTC)


@given(
    st.tuples(
        st.sampled_from(list(Trigger)),
        _AT,
        _ID,
        st.sampled_from(list(Kind)),
        st.sampled_from([Skip(reason=SkipReason.LEVEL), Collect(until=_UNTIL)]),
        st.none() | st.integers(0, 9),
        _MAYBE_ID,
        _MAYBE_ID,
        _MAYBE_ID,
    )
)
def test_hint(values: tuple[object, ...]) -> None:
    _same(Hint, values)


@given(st.tuples(_AT, _ID, _ID, _ID, _ID, st.sampled_from(list(Kind)), _MAYBE_ID, st.integers(0, 9),
       _MAYBE_ID, st.none() | st.integers(0, 9)))  # fmt: skip
def test_due(values: tuple[object, ...]) -> None:
    _same(Due, values)


@given(st.tuples(_AT, st.integers(0, 9)))
def test_window(values: tuple[object, ...]) -> None:
    _same(Window, values)


@given(st.tuples(st.sampled_from(list(Kind)), st.lists(_ID).map(tuple), _MAYBE_ID, _MAYBE_ID,
       st.integers(0, 9), _MAYBE_ID, _MAYBE_ID, _MAYBE_ID, st.booleans()))  # fmt: skip
def test_candidate(values: tuple[object, ...]) -> None:
    _same(Candidate, values)


def _same(cls: type, values: tuple[object, ...]) -> None:
    names = [field.name for field in attrs.fields(cls)]
    fast = positional(cls)(*values)
    plain = cls(**dict(zip(names, values, strict=True)))
    assert type(fast) is cls
    assert fast == plain
    assert [getattr(fast, name) for name in names] == list(values)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        fast.__setattr__(names[0], values[0])


@attrs.frozen
class _Converted:
    a: int = attrs.field(converter=int)


@attrs.frozen
class _Validated:
    a: int = attrs.field(validator=attrs.validators.instance_of(int))


@attrs.frozen
class _Derived:
    a: int
    b: int = attrs.field(init=False, default=0)


@attrs.frozen
class _PostInit:
    a: int

    def __attrs_post_init__(self) -> None:
        pass


@attrs.frozen(slots=False)
class _Unslotted:
    a: int


@pytest.mark.parametrize("cls", [_Converted, _Validated, _Derived, _PostInit, _Unslotted, int])
def test_refuses_what_init_does_more_for(cls: type) -> None:
    with pytest.raises(TypeError):
        positional(cls)
