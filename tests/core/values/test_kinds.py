"""Kinds and codes: rules K1-K3."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notify_core.values.errors import InvalidKind
from notify_core.values.kinds import (
    KIND_CODES,
    THREAD_KINDS,
    URGENT_KINDS,
    Kind,
    RunState,
    kind_code,
    kind_from_code,
    run_active,
)


def test_k1_codes_are_fixed_and_never_renumbered() -> None:
    assert [(kind.value, kind_code(kind)) for kind in Kind] == [
        ("message", 1),
        ("mention", 2),
        ("dm", 3),
        ("run_done", 4),
        ("run_failed", 5),
        ("input_needed", 6),
        ("security", 7),
        ("admin", 8),
        ("sync", 9),
    ]
    assert KIND_CODES[Kind.SYNC] == 9


@pytest.mark.parametrize("code", range(1, 10))
def test_k1_kind_from_code_inverts_kind_code(code: int) -> None:
    assert kind_code(kind_from_code(code)) == code


@pytest.mark.parametrize("code", [0, 10, -1, True, False, 1.0, "1", None])
def test_k1_kind_from_code_refuses_everything_else(code: object) -> None:
    with pytest.raises(InvalidKind) as err:
        kind_from_code(code)
    assert err.value.code == "unknown_kind_code"


@given(st.integers().filter(lambda n: not 1 <= n <= 9))
def test_k1_no_other_integer_is_a_code(code: int) -> None:
    with pytest.raises(InvalidKind):
        kind_from_code(code)


def test_k1_kind_code_refuses_unknown_kind() -> None:
    with pytest.raises(InvalidKind) as err:
        kind_code("reaction")
    assert err.value.code == "unknown_kind"


def test_k2_thread_threadless_and_urgent_kinds() -> None:
    assert {k.value for k in THREAD_KINDS} == {
        "message",
        "mention",
        "dm",
        "run_done",
        "run_failed",
        "input_needed",
    }
    assert Kind.SECURITY not in THREAD_KINDS and Kind.ADMIN not in THREAD_KINDS
    assert {k.value for k in URGENT_KINDS} == {
        "mention",
        "dm",
        "run_done",
        "run_failed",
        "input_needed",
        "security",
        "admin",
    }


@pytest.mark.parametrize(
    ("state", "active"),
    [
        ("queued", True),
        ("running", True),
        ("waiting_input", True),
        ("completed", False),
        ("failed", False),
        ("cancelled", False),
    ],
)
def test_k3_run_active(state: str, active: bool) -> None:
    assert run_active(state) is active
    assert run_active(RunState(state)) is active


def test_k3_unknown_run_state() -> None:
    with pytest.raises(InvalidKind):
        run_active("paused")
