"""The event log of formats.md section 2: one JSON object per line, checked on the way in.

`parse_event` turns a decoded JSON object into an `Event` or raises `EventError` with the
pointer of the member at fault; `EventLogReader` adds the line rules (``seq`` strictly
increasing, ``occurred_at`` never decreasing) and the line number. Payload checks are a
table (`PAYLOADS`): the member, whether it is required, and what it must be.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from math import isinf
from typing import Final

import attrs

from notify_core.events.wiki import USER_MEMBERS, USER_UNSET, WIKI_PAYLOADS, WIKI_PERSONAL
from notify_core.values.errors import InvalidInput, InvalidRule, NotifyError
from notify_core.values.instants import EARLIEST, parse_instant
from notify_core.values.zones import validate_time_zone

__all__ = [
    "MAX_EVENT_DEPTH",
    "PAYLOADS",
    "Event",
    "EventError",
    "EventLogReader",
    "Scope",
    "loads_event_json",
    "parse_event",
]


class EventError(InvalidInput):
    """A line of an event log that cannot be used; carries its line number when known."""

    def __init__(self, code: str, message: str, pointer: str | None = None, *, line: int = 0):
        super().__init__(code, message, pointer)
        self.line = line

    def at(self, prefix: str) -> EventError:
        """Return the same error with ``prefix`` in front of its pointer."""
        return EventError(self.code, self.message, prefix + (self.pointer or ""), line=self.line)


@attrs.frozen(kw_only=True)
class Scope:
    """Where an event happened: space, channel and thread, each optional."""

    space: str | None = None
    channel: str | None = None
    thread: str | None = None


@attrs.frozen(kw_only=True)
class Event:
    """One event of the log.

    Args:
        seq: commit order, strictly increasing in a log.
        type: the event type, e.g. ``message.created``.
        occurred_at: the replay clock (an aware instant).
        actor: who caused it.
        audience: the one person a personal event is for.
        scope: where it happened.
        payload: the type's members (checked against `PAYLOADS` for known types).
        origin: ``user``, ``import`` or ``bulk`` for a wiki's events (absent: ``user``).
    """

    seq: int
    type: str
    occurred_at: datetime
    actor: str | None = None
    audience: str | None = None
    scope: Scope = Scope()
    payload: Mapping[str, object] = attrs.field(factory=dict)
    origin: str | None = None


Check = Callable[[object], bool]


def _str(value: object) -> bool:
    return isinstance(value, str) and value != ""


def _bool(value: object) -> bool:
    return isinstance(value, bool)


def _seq(value: object) -> bool:
    return type(value) is int and value >= 0


def _strs(value: object) -> bool:
    return isinstance(value, list) and all(_str(item) for item in value)


@attrs.frozen
class _OneOf:
    """A check that a value is one of a few texts (its values are read by `_fast_check`)."""

    allowed: tuple[str, ...]

    def __call__(self, value: object) -> bool:
        return value in self.allowed


def _one_of(*allowed: str) -> Check:
    return _OneOf(allowed)


def _target(value: object) -> bool:
    return (
        isinstance(value, dict)
        and value.get("kind") in ("space", "channel", "thread")
        and _str(value.get("id"))
    )


def _object(value: object) -> bool:
    return isinstance(value, dict)


def _list_of_objects(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def _anything(value: object) -> bool:
    return True


def _zone(value: object) -> bool:
    try:
        validate_time_zone(value)
    except InvalidRule:
        return False
    return True


#: The error code of a check whose failure has a code of its own; the others are
#: ``invalid_member``.
_CODES: Final[dict[Check, str]] = {_zone: "unknown_time_zone"}


_LEVEL = _one_of("all", "mentions", "mute")

#: Per event type: member -> (required, check, what it must be). Unknown types are not here.
PAYLOADS: Final[dict[str, dict[str, tuple[bool, Check, str]]]] = {
    "user.created": {
        "user": (True, _str, "an ID"),
        "kind": (True, _one_of("human", "agent", "app"), "human, agent or app"),
        "time_zone": (False, _zone, "a zone of the IANA database (Q3)"),
        "active": (False, _bool, "a boolean"),
        "owner": (False, _bool, "a boolean"),
    },
    "space.created": {"space": (True, _str, "an ID")},
    "space.archived": {"space": (True, _str, "an ID")},
    "channel.created": {
        "channel": (True, _str, "an ID"),
        "space": (False, _str, "an ID"),
        "kind": (True, _one_of("text", "forum", "dm"), "text, forum or dm"),
        "participants": (False, _strs, "a list of IDs"),
        "default_notification_level": (False, _LEVEL, "all, mentions or mute"),
    },
    "channel.updated": {
        "channel": (True, _str, "an ID"),
        "default_notification_level": (False, _LEVEL, "all, mentions or mute"),
        "clear_default_notification_level": (False, _bool, "a boolean"),
    },
    "channel.archived": {"channel": (True, _str, "an ID")},
    "thread.created": {
        "thread": (True, _str, "an ID"),
        "channel": (True, _str, "an ID"),
        "main": (True, _bool, "a boolean"),
    },
    "access.granted": {
        "user": (True, _str, "an ID"),
        "target": (True, _target, "a target {kind, id}"),
    },
    "device.registered": {
        "device": (True, _str, "an ID"),
        "user": (True, _str, "an ID"),
        "platform": (True, _one_of("ios", "android", "desktop", "web"), "a platform"),
        "state": (True, _one_of("active", "pending"), "active or pending"),
    },
    "device.approved": {"device": (True, _str, "an ID")},
    "device.revoked": {"device": (True, _str, "an ID")},
    "push.registered": {
        "registration": (True, _str, "an ID"),
        "device": (True, _str, "an ID"),
        "provider": (True, _str, "a provider name"),
    },
    "push.unregistered": {"registration": (True, _str, "an ID")},
    "presence.changed": {
        "device": (True, _str, "an ID"),
        "connected": (True, _bool, "a boolean"),
        "focus": (False, _strs, "a list of thread IDs"),
        "idle": (False, _bool, "a boolean"),
    },
    "notification_pref.updated": {
        "preference": (True, _object, "an object"),
        "deleted": (False, _bool, "a boolean"),
    },
    "quiet_hours.updated": {"rules": (True, _list_of_objects, "a list of rules")},
    "settings.updated": {
        "key": (True, _str, "a setting name"),
        "value": (False, _anything, "a value"),
        "deleted": (False, _bool, "a boolean"),
    },
    "message.created": {
        "message": (True, _str, "an ID"),
        "thread": (True, _str, "an ID"),
        "thread_seq": (True, _seq, "an integer >= 0"),
        "author": (True, _str, "an ID"),
        "origin": (True, _one_of("human", "agent", "import", "system"), "an origin"),
        "kind": (True, _one_of("text", "voice", "card", "run", "system"), "a message kind"),
        "silent": (False, _bool, "a boolean"),
        "mention_ids": (False, _strs, "a list of IDs"),
        "run": (False, _str, "a run ID"),
    },
    "run.state_changed": {
        "run": (True, _str, "an ID"),
        "triggered_by": (True, _str, "an ID"),
        "agent": (True, _str, "an ID"),
        "thread": (True, _str, "an ID"),
        "channel": (True, _str, "an ID"),
        "state": (
            True,
            _one_of("queued", "running", "waiting_input", "completed", "failed", "cancelled"),
            "a run state",
        ),
    },
    "access.expiring": {
        "kind": (True, _one_of("grant", "group_membership"), "grant or group_membership"),
        "target": (True, _str, "an ID"),
    },
    "device.pending": {
        "device": (True, _str, "an ID"),
        "platform": (True, _one_of("ios", "android", "desktop", "web"), "a platform"),
    },
    "read_state.updated": {
        "thread": (True, _str, "an ID"),
        "last_read_seq": (True, _seq, "an integer >= 0"),
    },
    # Preference records (M1-M6): set, suspend, delete; the audience is the principal.
    "record.set": {
        "preference_id": (True, _str, "an ID"),
        "declared_channels": (True, _strs, "a list of channel names"),
        "channels": (False, _object, "an object of channel values"),
    },
    "record.suspended": {"preference_id": (True, _str, "an ID")},
    "record.deleted": {"preference_id": (True, _str, "an ID")},
}
PAYLOADS["user.created"].update(USER_MEMBERS)
# user.updated changes the members it names and removes those listed in "unset".
PAYLOADS["user.updated"] = {
    **PAYLOADS["user.created"],
    "kind": (False, _one_of("human", "agent", "app"), "human, agent or app"),
    "unset": USER_UNSET,
}
PAYLOADS.update(WIKI_PAYLOADS)
PAYLOADS["access.revoked"] = PAYLOADS["access.granted"]
# Every time_zone of the log, a site's too, is a zone of tzdata (Q3), as tables require.
for _kind, _members in list(PAYLOADS.items()):
    if "time_zone" in _members and _members["time_zone"][1] is not _zone:
        PAYLOADS[_kind] = {
            **_members,
            "time_zone": (False, _zone, "a zone of the IANA database (Q3)"),
        }
#: Events that are about one person and must name them in ``audience``.
PERSONAL: Final = frozenset(
    {
        "notification_pref.updated",
        "quiet_hours.updated",
        "settings.updated",
        "access.expiring",
        "device.pending",
        "read_state.updated",
        "record.set",
        "record.suspended",
        "record.deleted",
        *WIKI_PERSONAL,
    }
)


def _find_null(value: object, pointer: str) -> str | None:
    # A walk with a stack of its own, not recursion: a line may nest as deep as its decoder
    # allows, deeper than Python's recursion limit.
    stack: list[tuple[object, str]] = [(value, pointer)]
    while stack:
        item, where = stack.pop()
        if item is None:
            return where
        if isinstance(item, dict):
            stack.extend((v, f"{where}/{k}") for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((v, f"{where}/{i}") for i, v in reversed(list(enumerate(item))))
    return None


def parse_event(obj: object) -> Event:
    """Check a decoded JSON object against formats.md section 2 and return the `Event`.

    Raises:
        EventError: the first fault found, with the pointer of its member (``null`` anywhere,
            a missing or ill-typed envelope member, a payload member of a known type).
    """
    return _parse_event(obj, may_hold_null=True)


_SCOPE_KEYS: Final = frozenset({"space", "channel", "thread"})
#: An absent scope or payload (read only: never handed out).
_NO_MEMBERS: Final[dict[str, object]] = {}
#: The scope of events without one (frozen: shared by them all).
_NO_SCOPE: Final = Scope()


def _parse_event(obj: object, may_hold_null: bool) -> Event:
    # This runs once per line of every replay, and every task of a partitioned replay reads
    # every line: the checks of the common members are written out (`_str` inline) rather
    # than called. The order of the checks, and so the fault reported first, is the table's.
    if not isinstance(obj, dict):
        raise EventError("invalid_event", "an event must be a JSON object")
    if may_hold_null:
        null = _find_null(obj, "")
        if null is not None:
            raise EventError("null_value", "null is not allowed: omit the member", null)
    seq = obj.get("seq")
    if type(seq) is not int or seq < 0:
        raise EventError("invalid_event", "seq must be an integer >= 0", "/seq")
    kind = obj.get("type")
    if not (isinstance(kind, str) and kind):
        raise EventError("invalid_event", "type must be a string", "/type")
    raw_at = obj.get("occurred_at", _ABSENT)
    if raw_at is _ABSENT:
        raise EventError("invalid_event", "occurred_at is missing", "/occurred_at")
    # Lines in a row often share their instant (about half the lines of a replay): the last
    # text read is compared first; a new one is parsed.
    last_at = _LAST_AT[0]
    if type(raw_at) is str and raw_at == last_at[0]:
        occurred_at = last_at[1]
    else:
        try:
            occurred_at = parse_instant(raw_at, "/occurred_at")
        except NotifyError as error:  # a naive instant too: in a log line it is bad data
            raise EventError(error.code, error.message, error.pointer) from None
        if type(raw_at) is str:
            _LAST_AT[0] = (raw_at, occurred_at)  # one tuple: a reader in another thread
            # sees the text and its instant together
    # After the walk for null (or with no "null" in the line) no member holds ``None``:
    # ``None`` from ``get`` means absent.
    actor = obj.get("actor")
    if actor is not None and not (isinstance(actor, str) and actor):
        raise EventError("invalid_event", "actor must be an ID", "/actor")
    audience = obj.get("audience")
    if audience is not None and not (isinstance(audience, str) and audience):
        raise EventError("invalid_event", "audience must be an ID", "/audience")
    origin = obj.get("origin")
    if origin is not None and origin not in ("user", "import", "bulk"):
        raise EventError("invalid_event", "origin must be user, import or bulk", "/origin")
    raw_scope = obj.get("scope")
    if raw_scope is None:
        scope = _NO_SCOPE
    elif not isinstance(raw_scope, dict):
        raise EventError("invalid_event", "scope must be {space?, channel?, thread?}", "/scope")
    elif raw_scope:
        space, channel, thread = (
            raw_scope.get("space"),
            raw_scope.get("channel"),
            raw_scope.get("thread"),
        )
        if not (
            (space is None or (isinstance(space, str) and space))
            and (channel is None or (isinstance(channel, str) and channel))
            and (thread is None or (isinstance(thread, str) and thread))
            and raw_scope.keys() <= _SCOPE_KEYS
        ):
            raise EventError("invalid_event", "scope must be {space?, channel?, thread?}", "/scope")
        scope = Scope(space=space, channel=channel, thread=thread)
    else:
        scope = _NO_SCOPE
    payload = obj.get("payload", _NO_MEMBERS)
    if not isinstance(payload, dict):
        raise EventError("invalid_event", "payload must be an object", "/payload")
    if payload is _NO_MEMBERS:
        payload = {}  # the event's own (a caller may change it)
    schema = PAYLOADS.get(kind)
    if schema is not None:
        fast = _FAST_CHECKS.get(kind)
        if fast is None or fast[0] is not schema:  # first use, or the table's entry replaced
            fast = _FAST_CHECKS[kind] = (schema, _fast_check(schema))
        if not fast[1](payload):
            _check_payload(kind, schema, payload)
        if audience is None and kind in PERSONAL:
            raise EventError("missing_member", f"{kind} needs an audience", "/audience")
    event = _new_event(Event)
    _set_seq(event, seq)
    _set_type(event, kind)
    _set_occurred_at(event, occurred_at)
    _set_actor(event, actor)
    _set_audience(event, audience)
    _set_scope(event, scope)
    _set_payload(event, payload)
    _set_origin(event, origin)
    return event


# `Event(...)` for every line of every replay: its frozen __init__ looks each of its slots up
# by name through `object.__setattr__`; the slots' own setters, taken once, cost half. The
# values are those `Event` would hold (it has no converter, validator or default to run).
# Measured (cachegrind, `notify replay` of the 25,000-event synthetic log): `Event(...)` by
# keyword here costs 2.7 % more instructions (5,862 M -> 6,022 M).
_new_event: Final = object.__new__
_set_seq, _set_type, _set_occurred_at, _set_actor, _set_audience, _set_scope, _set_payload = (
    Event.__dict__[name].__set__
    for name in ("seq", "type", "occurred_at", "actor", "audience", "scope", "payload")
)
_set_origin: Final = Event.__dict__["origin"].__set__
if [field.name for field in attrs.fields(Event)] != [
    "seq", "type", "occurred_at", "actor", "audience", "scope", "payload", "origin"
] or any(field.converter or field.validator for field in attrs.fields(Event)):  # fmt: skip
    raise AssertionError("_parse_event sets every field of Event: keep them in step")


#: The text and instant of the last ``occurred_at`` parsed (a text no line holds at first).
# Speed device (the last `occurred_at` text kept, 1.32 % alone): the replay's line path, kept as
# one group: its 13 devices together are 12.2 % of the
# replay's instructions (cachegrind, 25,000-event synthetic log; docs/decisions.md 2026-12-06)
_LAST_AT: Final[list[tuple[object, datetime]]] = [(None, EARLIEST)]


def _check_payload(
    kind: str, schema: dict[str, tuple[bool, Check, str]], payload: dict[str, object]
) -> None:
    """Raise the first fault of a payload, in the table's order (none: return)."""
    for name, (required, check, what) in schema.items():
        if name not in payload:
            if required:
                raise EventError(
                    "missing_member", f"{kind} needs payload.{name}", f"/payload/{name}"
                )
            continue
        value = payload[name]
        if not check(value):
            refused = ""
            if check is _zone and isinstance(value, str):  # name the zone refused
                refused = f", not {value[:64]!r}"
            raise EventError(
                _CODES.get(check, "invalid_member"),
                f"payload.{name} must be {what}{refused}",
                f"/payload/{name}",
            )


#: A member not in a payload (``None`` is a value a caller's payload may hold).
_ABSENT: Final = object()
#: Per event type: its table entry and `_fast_check`'s function for it.
_FAST_CHECKS: Final[
    dict[str, tuple[dict[str, tuple[bool, Check, str]], Callable[[dict[str, object]], bool]]]
] = {}
#: The checks `_fast_check` writes inline (``v``: the value), each as strict as the check or
#: stricter: a value they refuse goes through the table's loop, which decides.
_INLINE: Final[dict[Check, str]] = {
    _str: "type(v) is str and v",
    _bool: "v is True or v is False",
    _seq: "type(v) is int and v >= 0",
}


# Speed device (payload checks compiled, 1.55 % alone): the replay's line path, kept as one group:
# its 13 devices together are 12.2 % of the
# replay's instructions (cachegrind, 25,000-event synthetic log; docs/decisions.md 2026-12-06)
def _fast_check(schema: dict[str, tuple[bool, Check, str]]) -> Callable[[dict[str, object]], bool]:
    """Compile a type's payload checks into one function: whether the payload passes them all.

    The table's loop costs, per member and line, a tuple unpacked, two lookups and a call;
    the function compiled from it a subscript (required members: a missing one raises
    `KeyError`) or a lookup, and a test written out. It answers ``True`` only where the loop
    finds no fault; on ``False`` the loop runs and reports the first one. A payload of a line
    holds no ``null`` (refused before): ``None`` from ``get`` means absent.
    """
    env: dict[str, object] = {}
    required_lines, optional_lines = [], []
    for index, (name, (required, check, _what)) in enumerate(schema.items()):
        test = _INLINE.get(check)
        if test is None and isinstance(check, _OneOf):
            env[f"c{index}"] = check.allowed
            test = f"v in c{index}"
        elif test is None:
            env[f"c{index}"] = check
            test = f"c{index}(v)"
        if required:
            required_lines.append(f"        v = p[{name!r}]")
            required_lines.append(f"        if not ({test}): return False")
        else:
            optional_lines.append(f"    v = p.get({name!r})")
            optional_lines.append(f"    if v is not None and not ({test}): return False")
    body = ["def check(p):"]
    if required_lines:
        body += ["    try:", *required_lines, "    except KeyError:", "        return False"]
    body += [*optional_lines, "    return True"]
    exec("\n".join(body), env)  # the source is the table's names (as literals) and tests
    return env["check"]  # type: ignore[return-value]


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def loads_json(text: str) -> object:
    """Decode one line of JSON strictly: ``NaN`` and ``Infinity`` are refused.

    Raises:
        ValueError: the text is not JSON.
    """
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:  # the stdlib decoder recurses once per level of nesting
        raise ValueError("nested too deep") from None
    return _no_lone_surrogate(text, value)


def _no_lone_surrogate(text: str, value: object) -> object:
    if "\\ud" in text or "\\uD" in text:
        # An escaped lone surrogate decodes, but no UTF-8 output could ever hold it.
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a string holds a lone surrogate, which UTF-8 cannot hold") from None
    return value


#: The deepest nesting of an event line, for every reader: the standard library's decoder
#: recurses once per level and cannot be trusted much past 900 (it shares the stack of its
#: caller), orjson stops at 1,024; below both, the answer is the same.
MAX_EVENT_DEPTH: Final = 512


def _int64(text: str) -> int | float:
    value = int(text)
    if -(2**63) <= value < 2**64:
        return value
    return _finite(text)  # as orjson reads it: a float, which no integer member accepts


def _finite(text: str) -> float:
    value = float(text)
    if isinf(value):
        raise ValueError(f"the number {text[:20]}... is too large for a double")
    return value


def loads_event_json(text: str) -> object:
    """Decode one event line as orjson does (the CLI's reader), so both answer alike.

    `loads_json`, and: an integer beyond 64 bits is read as a float (a member that wants an
    integer then refuses it, naming itself); a number too large for a double is not JSON.

    Raises:
        ValueError: the text is not JSON.
    """
    # The hooks run once per number (an event holds few), cheaper than looking for wide ones.
    try:
        value = json.loads(
            text, parse_constant=_refuse_constant, parse_int=_int64, parse_float=_finite
        )
    except RecursionError:
        raise ValueError("nested too deep") from None
    return _no_lone_surrogate(text, value)


def _too_deep(value: object) -> bool:
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_EVENT_DEPTH:
                return True
            stack.extend(
                (child, depth + 1) for child in (item.values() if isinstance(item, dict) else item)
            )
    return False


def _decode(raw: bytes | str, line: int) -> str:
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EventError(
            "invalid_utf8", f"not UTF-8 text ({exc.reason} at byte {exc.start + 1})", line=line
        ) from None


def _loads_or_default(value: Callable[[str], object] | None) -> Callable[[str], object]:
    return loads_event_json if value is None else value


# No setattr hooks: `read` sets the position once per line, and the converter of ``loads``
# (the only field with one) runs at construction.
@attrs.define(on_setattr=attrs.setters.NO_OP)
class EventLogReader:
    """Reads log lines in order and enforces the rules between lines.

    Feed it one line at a time; it remembers only the last ``seq`` and ``occurred_at``, so a
    log of any length streams in constant memory.
    """

    last_seq: int = -1
    last_at: datetime | None = None
    #: Turns a line into a JSON value; the CLI hands in a faster one with the same answers.
    loads: Callable[[str], object] = attrs.field(default=None, converter=_loads_or_default)

    def read(self, text: str | bytes, line: int) -> Event | None:
        """Return the event on a line, ``None`` for a blank line.

        A line may come as bytes, to be decoded as UTF-8 here (a reader of files hands in
        the lines it could not decode this way, so that each is a bad line of its own).

        Raises:
            EventError: a bad line, with ``line`` set; the reader's position is unchanged,
                so the next good line is still checked against the last good one.
        """
        if type(text) is not str:
            text = _decode(text, line)
        if not text or text.isspace():  # as `not text.strip()`, without a copy of the line
            return None
        try:
            obj = self.loads(text)
        except ValueError as exc:  # json and orjson decode errors are ValueErrors
            raise EventError("invalid_json", f"not JSON: {exc}", line=line) from None
        # Only a long line with many brackets can nest deep: the walk is spared for the others.
        if (
            len(text) > 2 * MAX_EVENT_DEPTH
            and text.count("[") + text.count("{") > MAX_EVENT_DEPTH
            and _too_deep(obj)
        ):
            raise EventError(
                "invalid_json", f"not JSON: nested deeper than {MAX_EVENT_DEPTH} levels", line=line
            )
        try:
            # A line without the text "null" holds no null: the walk looking for one is spared.
            event = _parse_event(obj, "null" in text)
        except EventError as error:
            error.line = line
            raise
        if event.seq <= self.last_seq:
            raise EventError(
                "seq_not_increasing",
                f"seq {event.seq} does not follow {self.last_seq}",
                "/seq",
                line=line,
            )
        if self.last_at is not None and event.occurred_at < self.last_at:
            raise EventError(
                "clock_went_back",
                f"occurred_at goes back from {self.last_at.isoformat()}",
                "/occurred_at",
                line=line,
            )
        self.last_seq, self.last_at = event.seq, event.occurred_at
        return event
