"""Decision-table cases (formats.md section 1): parse, run and compare, without any I/O.

A case is one JSON object ``{"id", "function", "input", "expect"}``. Each function of the
table maps a decoded ``input`` to a JSON answer; invalid input answers
``{"error": {"code", "pointer"?}}``. The CLI reads files and prints; everything it needs to
judge a case lives here, so tests can run tables without the CLI too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any, Final

import attrs

from notify_core.events.log import loads_json
from notify_core.hints.badge import ThreadBadgeFacts, badge_count
from notify_core.hints.decide import (
    Connection,
    Device,
    EventFacts,
    FlushState,
    Policy,
    RecipientFacts,
    Switches,
    decide,
    flush,
    release_delayed,
)
from notify_core.hints.delivery import RegistrationState, SendResult, apply_result, retry_delay
from notify_core.hints.levels import LevelFacts, Preference, parse_level, resolve_level
from notify_core.hints.quiet import ALWAYS, QuietRule, in_quiet_hours, quiet_until, rule_from_json
from notify_core.inbox.categories import CATEGORY_BY_KEY
from notify_core.inbox.tables import INBOX_FUNCTIONS
from notify_core.mail.tables import mail_functions
from notify_core.records.delivery_tables import DELIVERY_FUNCTIONS
from notify_core.records.tables import RECORD_FUNCTIONS
from notify_core.replay.lines import decision_to_json, dumps_json
from notify_core.values.errors import InvalidInput, NotifyError
from notify_core.values.instants import MAX_DURATION, format_instant, parse_instant, seconds
from notify_core.values.json_members import as_bool as _bool
from notify_core.values.json_members import as_object as _object
from notify_core.values.json_members import as_str as _str
from notify_core.values.json_members import member as _member
from notify_core.values.kinds import kind_code, kind_from_code

__all__ = [
    "FUNCTIONS",
    "Case",
    "CaseError",
    "CaseOutcome",
    "answer",
    "diff",
    "parse_cases",
    "run_case",
    "split_lines",
]

Json = object
JsonObject = Mapping[str, Json]
TableFunction = Callable[[JsonObject], dict[str, Json]]


class CaseError(InvalidInput):
    """A line of a table that is not a readable case; carries the file and line."""

    def __init__(self, code: str, message: str, pointer: str | None = None, *, line: int = 0):
        super().__init__(code, message, pointer)
        self.line = line


@attrs.frozen(kw_only=True)
class Case:
    """One decision-table case and the line it came from."""

    id: str
    function: str
    input: JsonObject
    expect: JsonObject
    line: int


@attrs.frozen(kw_only=True)
class CaseOutcome:
    """The result of running one case: what the library answered and how it differs."""

    case: Case
    actual: dict[str, Json]
    differences: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """True when the answer matches the expectation."""
        return not self.differences


# --- reading members -----------------------------------------------------------------------


def _list(value: Json, at: str) -> list[Json]:
    if not isinstance(value, list):
        raise InvalidInput("invalid_type", "expected an array", at)
    return value


def _int(value: Json, at: str) -> int:
    if type(value) is not int:
        raise InvalidInput("invalid_type", "expected an integer", at)
    return value


def _instant(obj: JsonObject, name: str, at: str, required: bool = True) -> datetime | None:
    value = _member(obj, name, at, required)
    return None if value is None else parse_instant(value, f"{at}/{name}")


def _now(obj: JsonObject) -> datetime:
    value = _instant(obj, "now", "")
    assert value is not None
    return value


def _with_pointer(error: NotifyError, prefix: str) -> NotifyError:
    return error.at(prefix)


# --- levels and quiet hours ---------------------------------------------------------------


def _preference(value: Json, at: str) -> Preference:
    row = _object(value, at)
    level = parse_level(_member(row, "level", at), f"{at}/level")
    return Preference(level=level, muted_until=_instant(row, "muted_until", at, required=False))


def _level_facts(value: Json, at: str) -> LevelFacts:
    facts = _object(value, at)
    rows = {}
    for name in ("thread", "channel", "space"):
        row = _member(facts, name, at, required=False)
        rows[name] = None if row is None else _preference(row, f"{at}/{name}")
    defaults = {}
    for name in ("channel_default", "instance_default"):
        raw = _member(facts, name, at, required=name == "instance_default")
        defaults[name] = None if raw is None else parse_level(raw, f"{at}/{name}")
    personal = _member(facts, "personal_default", at, required=False)
    direct = _member(facts, "direct_message", at, required=False)
    return LevelFacts(
        thread=rows["thread"],
        channel=rows["channel"],
        space=rows["space"],
        channel_default=defaults["channel_default"],
        direct_message=False if direct is None else _bool(direct, f"{at}/direct_message"),
        personal_default=personal,
        instance_default=defaults["instance_default"],
    )


def _rule(value: Json, at: str) -> QuietRule:
    try:
        return rule_from_json(_object(value, at))
    except NotifyError as error:
        raise _with_pointer(error, at) from None


def _rules(obj: JsonObject) -> tuple[QuietRule, ...]:
    raw = _list(_member(obj, "rules", "", required=False) or [], "/rules")
    return tuple(_rule(rule, f"/rules/{i}") for i, rule in enumerate(raw))


def _user_zone(obj: JsonObject) -> str | None:
    zone = _member(obj, "user_time_zone", "", required=False)
    return None if zone is None else _str(zone, "/user_time_zone")


def _resolve_level(inp: JsonObject) -> dict[str, Json]:
    now = _now(inp)
    result = resolve_level(_level_facts(_member(inp, "facts", ""), "/facts"), now)
    out: dict[str, Json] = {"level": result.level.value, "source": result.source.value}
    if result.muted_until is not None:
        out["muted_until"] = format_instant(result.muted_until)
    return out


def _in_quiet_hours(inp: JsonObject) -> dict[str, Json]:
    now = _now(inp)
    return {"quiet": in_quiet_hours(_rules(inp), now, _user_zone(inp))}


def _quiet_until(inp: JsonObject) -> dict[str, Json]:
    now = _now(inp)
    until = quiet_until(_rules(inp), now, _user_zone(inp))
    if until is None:
        return {}
    if until == ALWAYS:
        return {"always": True}
    assert isinstance(until, datetime)
    return {"until": format_instant(until)}


def _validate_rule(inp: JsonObject) -> dict[str, Json]:
    _rule(_member(inp, "rule", ""), "")
    return {"ok": True}


# --- decisions ----------------------------------------------------------------------------


def _policy(value: Json) -> Policy:
    obj = _object(value, "/policy")

    def flag(name: str) -> bool:
        return _bool(_member(obj, name, "/policy"), f"/policy/{name}")

    return Policy(
        coalesce_window=seconds(
            _member(obj, "coalesce_window_s", "/policy"), "/policy/coalesce_window_s"
        ),
        mobile_delay_when_desktop_active=seconds(
            _member(obj, "mobile_delay_when_desktop_active_s", "/policy"),
            "/policy/mobile_delay_when_desktop_active_s",
        ),
        default_admin_enabled=flag("default_admin_enabled"),
        default_input_needed_breaks_quiet_hours=flag("default_input_needed_breaks_quiet_hours"),
    )


def _switches(inp: JsonObject) -> Switches:
    raw = _member(inp, "switches", "", required=False)
    if raw is None:
        return Switches()
    obj = _object(raw, "/switches")
    values = {}
    for name in ("admin_enabled", "input_needed_breaks_quiet_hours"):
        value = _member(obj, name, "/switches", required=False)
        values[name] = None if value is None else _bool(value, f"/switches/{name}")
    return Switches(**values)


def _devices(inp: JsonObject) -> list[Device]:
    devices = []
    for i, raw in enumerate(_list(_member(inp, "devices", ""), "/devices")):
        at = f"/devices/{i}"
        obj = _object(raw, at)
        platform = _str(_member(obj, "platform", at), f"{at}/platform")
        device_id = _str(_member(obj, "id", at), f"{at}/id")
        try:
            devices.append(Device(id=device_id, platform=platform))
        except NotifyError as error:
            raise error.at(at) from None
    return devices


def _connections(inp: JsonObject) -> list[Connection]:
    connections = []
    for i, raw in enumerate(_list(_member(inp, "connections", ""), "/connections")):
        at = f"/connections/{i}"
        obj = _object(raw, at)
        focus = _list(_member(obj, "focus", at), f"{at}/focus")
        connections.append(
            Connection(
                device=_str(_member(obj, "device", at), f"{at}/device"),
                focus=frozenset(_str(t, f"{at}/focus/{j}") for j, t in enumerate(focus)),
                idle=_bool(_member(obj, "idle", at), f"{at}/idle"),
            )
        )
    return connections


def _facts(inp: JsonObject) -> tuple[EventFacts, RecipientFacts]:
    now = _now(inp)
    kind = _str(_member(inp, "kind", ""), "/kind")
    thread = _member(inp, "thread", "", required=False)
    exclude = _member(inp, "exclude_device", "", required=False)
    event = EventFacts(
        now=now,
        kind=kind,
        thread=None if thread is None else _str(thread, "/thread"),
        policy=_policy(_member(inp, "policy", "")),
        exclude_device=None if exclude is None else _str(exclude, "/exclude_device"),
    )
    level = _member(inp, "level", "", required=False)
    raw_rules = _list(_member(inp, "quiet_rules", ""), "/quiet_rules")
    person = RecipientFacts(
        author=_bool(_member(inp, "author", ""), "/author"),
        allowed=_bool(_member(inp, "allowed", ""), "/allowed"),
        run_starter=_bool(_member(inp, "run_starter", ""), "/run_starter"),
        level=None if level is None else _level_facts(level, "/level"),
        user_time_zone=_user_zone(inp),
        quiet_rules=[_rule(r, f"/quiet_rules/{i}") for i, r in enumerate(raw_rules)],
        switches=_switches(inp),
        devices=_devices(inp),
        connections=_connections(inp),
        window_end=_instant(inp, "window_end", "", required=False),
    )
    return event, person


def _decide(inp: JsonObject) -> dict[str, Json]:
    return decision_to_json(decide(*_facts(inp)))


def _flush(inp: JsonObject) -> dict[str, Json]:
    event, person = _facts(inp)
    state = FlushState(
        collected=_int(_member(inp, "collected", ""), "/collected"),
        unread=_int(_member(inp, "unread", ""), "/unread"),
    )
    return decision_to_json(flush(state, event, person))


def _release_delayed(inp: JsonObject) -> dict[str, Json]:
    event, person = _facts(inp)
    device = _str(_member(inp, "device", ""), "/device")
    read = _bool(_member(inp, "read", ""), "/read")
    return decision_to_json(release_delayed(event, person, device, read))


# --- kinds --------------------------------------------------------------------------------


def _kind_code(inp: JsonObject) -> dict[str, Json]:
    kind = _str(_member(inp, "kind", ""), "/kind")
    try:
        return {"code": kind_code(kind)}
    except NotifyError as error:
        raise error.at("/kind") from None


def _kind_from_code(inp: JsonObject) -> dict[str, Json]:
    return {"kind": kind_from_code(_member(inp, "code", "")).value}


# --- delivery and badge -------------------------------------------------------------------


def _registration_state(value: Json) -> RegistrationState:
    obj = _object(value, "/state")
    reason = _member(obj, "disabled_reason", "/state", required=False)
    return RegistrationState(
        failure_count=_int(_member(obj, "failure_count", "/state"), "/state/failure_count"),
        created_at=_instant(obj, "created_at", "/state"),
        last_success_at=_instant(obj, "last_success_at", "/state", required=False),
        disabled_at=_instant(obj, "disabled_at", "/state", required=False),
        disabled_reason=reason,
    )


def _registration_json(state: RegistrationState) -> dict[str, Json]:
    out: dict[str, Json] = {
        "failure_count": state.failure_count,
        "created_at": format_instant(state.created_at),
    }
    if state.last_success_at is not None:
        out["last_success_at"] = format_instant(state.last_success_at)
    if state.disabled_at is not None:
        out["disabled_at"] = format_instant(state.disabled_at)
    if state.disabled_reason is not None:
        out["disabled_reason"] = state.disabled_reason.value
    return out


def _apply_result(inp: JsonObject) -> dict[str, Json]:
    now = _now(inp)
    state = _registration_state(_member(inp, "state", ""))
    raw = _object(_member(inp, "result", ""), "/result")
    retry_after = _member(raw, "retry_after_s", "/result", required=False)
    result = SendResult(
        result_class=_member(raw, "class", "/result"),
        disable_reason=_member(raw, "disable_reason", "/result", required=False),
        invalid_since=_instant(raw, "invalid_since", "/result", required=False),
        retry_after=timedelta(0)
        if retry_after is None
        else seconds(retry_after, "/result/retry_after_s"),
    )
    change = apply_result(state, result, now, _member(inp, "max_failures", ""))  # type: ignore[arg-type]
    return {
        "state": _registration_json(change.state),
        "outcome": change.outcome.value,
        "action": change.action.value,
    }


def _duration_or_raw(value: Json) -> Any:
    # Numbers become durations (negative ones too, so retry_delay reports its codes in order);
    # anything else, a number longer than MAX_DURATION included, goes through unchanged for
    # retry_delay to refuse.
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and -_MAX_SECONDS <= value <= _MAX_SECONDS
    ):
        return timedelta(seconds=value)
    return value


_MAX_SECONDS: Final = MAX_DURATION.total_seconds()


def _retry_delay(inp: JsonObject) -> dict[str, Json]:
    delay = retry_delay(
        _member(inp, "attempt", ""),  # type: ignore[arg-type]
        _duration_or_raw(_member(inp, "base_s", "")),
        _duration_or_raw(_member(inp, "cap_s", "")),
        _duration_or_raw(_member(inp, "retry_after_s", "")),
        _member(inp, "jitter", ""),  # type: ignore[arg-type]
    )
    return {"delay_s": delay.total_seconds()}


def _badge_count(inp: JsonObject) -> dict[str, Json]:
    threads = []
    for i, raw in enumerate(_list(_member(inp, "threads", ""), "/threads")):
        at = f"/threads/{i}"
        obj = _object(raw, at)
        fields = {
            name: _member(obj, name, at)
            for name in (
                "thread",
                "readable",
                "dm",
                "level",
                "last_message_seq",
                "unread_floor_seq",
                "read_seq",
                "unread_mentions",
            )
        }
        try:
            threads.append(ThreadBadgeFacts(**fields))  # type: ignore[arg-type]
        except NotifyError as error:
            raise error.at(at) from None
    return {"badge": badge_count(threads)}


#: Every function a table may name, with the function that answers it.
FUNCTIONS: Final[dict[str, TableFunction]] = {
    "resolve_level": _resolve_level,
    "in_quiet_hours": _in_quiet_hours,
    "quiet_until": _quiet_until,
    "validate_rule": _validate_rule,
    "decide": _decide,
    "flush": _flush,
    "release_delayed": _release_delayed,
    "kind_code": _kind_code,
    "kind_from_code": _kind_from_code,
    "apply_result": _apply_result,
    "retry_delay": _retry_delay,
    "badge_count": _badge_count,
    **RECORD_FUNCTIONS,
    **DELIVERY_FUNCTIONS,
    **INBOX_FUNCTIONS,
    **mail_functions({key: category.digest for key, category in CATEGORY_BY_KEY.items()}),
}


def answer(function: str, inp: JsonObject) -> dict[str, Json]:
    """Answer a case's input with the library; invalid input answers ``{"error": ...}``.

    Raises:
        KeyError: ``function`` is not in `FUNCTIONS` (`parse_cases` refuses such lines).
    """
    try:
        return FUNCTIONS[function](inp)
    except NotifyError as error:
        return {"error": error.as_json()}


# --- parsing and comparing ----------------------------------------------------------------


def split_lines(text: str) -> list[str]:
    """Split the text of a JSON Lines file into its lines: at ``\n`` only, ``\r\n`` too.

    Not `str.splitlines`, which also breaks at U+2028, U+2029, ``\x85`` and other characters
    a JSON string may hold as they are: such a line would become two bad ones.
    """
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts none
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def parse_cases(text: str) -> Iterator[Case | CaseError]:
    """Parse the lines of a table; yield a `Case` or a `CaseError` per non-blank line.

    Blank lines and lines starting with ``#`` are skipped. A bad line does not stop the
    parse, so a run can report every bad line at once.
    """
    seen: set[str] = set()
    for number, line in enumerate(split_lines(text), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            case = _parse_case(stripped, number)
        except CaseError as error:
            yield error
            continue
        if case.id in seen:
            yield CaseError("duplicate_id", f"case id {case.id!r} appears twice", line=number)
            continue
        seen.add(case.id)
        yield case


#: The deepest nesting of a case line: cases nest a few levels; comparing and printing an
#: answer walk it recursively, so a deeper line is refused before either runs.
MAX_DEPTH: Final = 64


def _too_deep(value: Json) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def _parse_case(line: str, number: int) -> Case:
    try:
        obj = loads_json(line)  # refuses NaN, Infinity and lone surrogates
    except ValueError as exc:
        raise CaseError("invalid_json", f"not JSON: {exc}", line=number) from None
    if _too_deep(obj):
        raise CaseError(
            "invalid_json", f"not JSON: nested deeper than {MAX_DEPTH} levels", line=number
        )
    if not isinstance(obj, dict):
        raise CaseError("invalid_case", "a case must be a JSON object", line=number)
    for name, kind in (("id", str), ("function", str), ("input", dict), ("expect", dict)):
        if name not in obj:
            raise CaseError("invalid_case", f"the case has no {name!r}", f"/{name}", line=number)
        if not isinstance(obj[name], kind):
            wanted = "a string" if kind is str else "an object"
            raise CaseError("invalid_case", f"{name!r} must be {wanted}", f"/{name}", line=number)
    if obj["function"] not in FUNCTIONS:
        known = ", ".join(sorted(FUNCTIONS))
        raise CaseError(
            "unknown_function",
            f"unknown function {obj['function']!r} (known: {known})",
            "/function",
            line=number,
        )
    return Case(
        id=obj["id"],
        function=obj["function"],
        input=obj["input"],
        expect=obj["expect"],
        line=number,
    )


def run_case(case: Case) -> CaseOutcome:
    """Answer a case and compare the answer with its expectation."""
    actual = answer(case.function, case.input)
    return CaseOutcome(case=case, actual=actual, differences=tuple(diff(case.expect, actual)))


def diff(expected: Json, actual: Json, pointer: str = "") -> Iterator[str]:
    """Yield one line per difference between an expectation and an answer.

    Instants compare as instants (any offset), numbers within 1e-6, and an expected error
    without ``pointer`` matches an answer's error with any pointer.
    """
    if isinstance(expected, dict) and isinstance(actual, dict):
        lenient = pointer == "/error" and "pointer" not in expected
        for key in sorted(expected.keys() | actual.keys()):
            where = f"{pointer}/{key}"
            if key not in actual:
                yield f"{where}: expected {_show(expected[key])}, got nothing"
            elif key not in expected:
                if not (lenient and key == "pointer"):
                    yield f"{where}: expected nothing, got {_show(actual[key])}"
            else:
                yield from diff(expected[key], actual[key], where)
        return
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for index, (e, a) in enumerate(zip(expected, actual, strict=True)):
            yield from diff(e, a, f"{pointer}/{index}")
        return
    if not _same(expected, actual):
        yield f"{pointer or '/'}: expected {_show(expected)}, got {_show(actual)}"


def _same(expected: Json, actual: Json) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return math.isclose(expected, actual, rel_tol=0, abs_tol=1e-6)
    if isinstance(expected, str) and isinstance(actual, str) and expected != actual:
        try:
            return parse_instant(expected) == parse_instant(actual)
        except NotifyError:
            return False
    return expected == actual


def _show(value: Json) -> str:
    return dumps_json(value)


def dumps_case(case: Case, expect: Mapping[str, Json]) -> str:
    """Return the JSON line of a case with ``expect`` replaced (for ``notify table run``)."""
    obj = {"id": case.id, "function": case.function, "input": case.input, "expect": expect}
    return dumps_json(obj)
