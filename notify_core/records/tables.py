"""Decision-table functions for preference records (formats.md section 1, section 8).

Each function takes the decoded JSON ``input`` of a case and returns the JSON answer; invalid
input raises a `NotifyError` with ``code`` and ``pointer`` (pointing into ``input``), which the
table runner turns into ``{"error": {"code", "pointer"}}``. Instants are RFC 3339 text; no
answer ever holds ``null`` (G5).

``records_lifecycle`` - a lifecycle kept as a table. Input (``?``: optional):

```text
{"declared_channels": ["email", "sms"],          # default set injected into every set
 "steps": [
   {"op": "set", "now", "preference_id", "principal_ref",
    "channel_preferences"?, "frequency_limit"?, "quiet_hours"?, "format"?, "metadata"?,
    "declared_channels"?},                        # this call's own injected set
   {"op": "suspend", "now", "preference_id"},
   {"op": "delete", "now", "preference_id"},
   {"op": "current_for", "principal_ref"},
   {"op": "read", "preference_id"},
   {"op": "in_effect_at", "principal_ref", "at"}]}
```

Expect ``{"answers": [one per step], "records": [every record in recording order],
"current": {principal_ref: preference_id currently in effect}}``, where an answer is
``{"preference_id"}`` (set accepted), ``{"ok": true}`` (suspend or delete accepted),
``{"refused": "<refusal>", "pointer"?}``, ``{"record": {...}}`` (current_for, read),
``{"preference_id", "status_at"}`` (in_effect_at), ``{"none": true}`` (current_for,
in_effect_at) or ``{"not_known": true}`` (read). A degenerate declared set fails the whole
case with ``{"error": {"code": "degenerate_channel_set", "pointer"}}`` (fail-stop, no answer).

``records_in_effect_at`` - the audit reconstruction of Check 2.1 from stored records. Input
``{"records": [record...], "principal_ref", "at"}``; expect ``{"preference_id", "status_at"}``
or ``{"none": true}``.

A record is ``{"preference_id", "principal_ref", "status", "set_at", "suspended_at"?,
"deleted_at"?, "declared_channels": [sorted], "channel_preferences"?, "frequency_limit"?,
"quiet_hours"?, "format"?, "metadata"?}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Final

from notify_core.records import (
    FrozenMap,
    Ok,
    Opaque,
    Outcome,
    PreferenceRecord,
    PreferenceStore,
)
from notify_core.values.errors import InvalidInput, NotifyError
from notify_core.values.instants import format_instant, parse_instant

__all__ = [
    "RECORD_FUNCTIONS",
    "opaque_to_json",
    "record_from_json",
    "record_to_json",
    "records_in_effect_at",
    "records_lifecycle",
]

_FIELDS: Final = ("channel_preferences", "frequency_limit", "quiet_hours", "format", "metadata")
_STEP_MEMBERS: Final[dict[str, tuple[frozenset[str], frozenset[str]]]] = {
    # op: (required members besides "op", optional members)
    "set": (
        frozenset({"now", "preference_id", "principal_ref"}),
        frozenset({*_FIELDS, "declared_channels"}),
    ),
    "suspend": (frozenset({"now", "preference_id"}), frozenset()),
    "delete": (frozenset({"now", "preference_id"}), frozenset()),
    "current_for": (frozenset({"principal_ref"}), frozenset()),
    "read": (frozenset({"preference_id"}), frozenset()),
    "in_effect_at": (frozenset({"principal_ref", "at"}), frozenset()),
}
_RECORD_REQUIRED: Final = ("preference_id", "principal_ref", "status", "set_at")
_RECORD_OPTIONAL: Final = ("suspended_at", "deleted_at", *_FIELDS)


def opaque_to_json(value: Opaque) -> object:
    """Return a stored opaque value as plain JSON data (tuples to lists, maps to dicts)."""
    if isinstance(value, tuple):
        return [opaque_to_json(item) for item in value]
    if isinstance(value, FrozenMap):
        return {key: opaque_to_json(item) for key, item in value.items()}
    return value


def record_to_json(record: PreferenceRecord) -> dict[str, object]:
    """Return the JSON object of a record; absent fields are omitted, never ``null``.

    Example:
        >>> from datetime import datetime, UTC
        >>> r = PreferenceRecord(preference_id="p1", principal_ref="u", status="active",
        ...     declared_channels=["sms", "email"], set_at=datetime(2026, 3, 1, tzinfo=UTC),
        ...     format="plain")
        >>> record_to_json(r)["declared_channels"]
        ['email', 'sms']
    """
    out: dict[str, object] = {
        "preference_id": record.preference_id,
        "principal_ref": record.principal_ref,
        "status": record.status.value,
        "set_at": format_instant(record.set_at),
    }
    if record.suspended_at is not None:
        out["suspended_at"] = format_instant(record.suspended_at)
    if record.deleted_at is not None:
        out["deleted_at"] = format_instant(record.deleted_at)
    out["declared_channels"] = sorted(record.declared_channels)
    for name in _FIELDS:
        value: Opaque | None = getattr(record, name)
        if value is not None:
            out[name] = opaque_to_json(value)
    return out


def record_from_json(obj: object, pointer: str = "") -> PreferenceRecord:
    """Build a record from its JSON object (the shape `record_to_json` writes).

    Raises:
        NotifyError: a missing, unknown, ``null`` or malformed member, pointer included
            (codes ``missing_member``, ``unknown_member``, ``null_value``, ``invalid_type``,
            ``invalid_instant``, ``naive_datetime``, ``invalid_status`` ...).
    """
    members = _object(obj, pointer)
    required = frozenset({*_RECORD_REQUIRED, "declared_channels"})
    _check_members(members, required, frozenset(_RECORD_OPTIONAL), pointer)
    if not isinstance(members["declared_channels"], list):
        raise InvalidInput(
            "invalid_type", "declared_channels must be an array", f"{pointer}/declared_channels"
        )

    def instant(name: str) -> datetime | None:
        return parse_instant(members[name], f"{pointer}/{name}") if name in members else None

    set_at = parse_instant(members["set_at"], f"{pointer}/set_at")
    try:
        return PreferenceRecord(
            preference_id=members["preference_id"],
            principal_ref=members["principal_ref"],
            status=members["status"],
            set_at=set_at,
            declared_channels=members["declared_channels"],
            channel_preferences=members.get("channel_preferences"),
            frequency_limit=members.get("frequency_limit"),
            quiet_hours=members.get("quiet_hours"),
            format=members.get("format"),
            metadata=members.get("metadata"),
            suspended_at=instant("suspended_at"),
            deleted_at=instant("deleted_at"),
        )
    except NotifyError as err:
        raise err.at(pointer) from None


def records_lifecycle(case: Mapping[str, object]) -> dict[str, object]:
    """Run a sequence of set/suspend/delete/reads from an empty store (see module doc).

    Raises:
        NotifyError: invalid input, pointing into ``case``; ``DegenerateChannelSet`` when a set
            step is handed a degenerate declared channel set.
    """
    _check_members(case, frozenset({"steps"}), frozenset({"declared_channels"}), "")
    steps = case["steps"]
    if not isinstance(steps, list):
        raise InvalidInput("invalid_type", "steps must be an array", "/steps")
    store = PreferenceStore()
    answers: list[dict[str, object]] = []
    for i, step in enumerate(steps):
        store, answer = _run_step(store, step, case, f"/steps/{i}")
        answers.append(answer)
    current: dict[str, object] = {}
    for record in store.records.values():
        if record.in_effect:
            current[record.principal_ref] = record.preference_id
    return {
        "answers": answers,
        "records": [record_to_json(r) for r in store.records.values()],
        "current": current,
    }


def records_in_effect_at(case: Mapping[str, object]) -> dict[str, object]:
    """Reconstruct which stored record governed a principal at an instant (Check 2.1-2.2).

    Raises:
        NotifyError: invalid input, pointing into ``case``.
    """
    _check_members(case, frozenset({"records", "principal_ref", "at"}), frozenset(), "")
    records = case["records"]
    if not isinstance(records, list):
        raise InvalidInput("invalid_type", "records must be an array", "/records")
    loaded = [record_from_json(r, f"/records/{i}") for i, r in enumerate(records)]
    try:
        store = PreferenceStore.from_records(loaded)
    except NotifyError as err:
        raise err.at("/records") from None
    principal = _text(case["principal_ref"], "/principal_ref")
    return _in_effect_answer(store, principal, parse_instant(case["at"], "/at"))


#: The table functions of this module, by the name a case's ``function`` member gives.
RECORD_FUNCTIONS: Final[dict[str, Callable[[Mapping[str, object]], dict[str, object]]]] = {
    "records_lifecycle": records_lifecycle,
    "records_in_effect_at": records_in_effect_at,
}


def _run_step(
    store: PreferenceStore, step: object, case: Mapping[str, object], pointer: str
) -> tuple[PreferenceStore, dict[str, object]]:
    members = _object(step, pointer)
    if "op" not in members:
        raise InvalidInput("missing_member", "the step has no 'op'", f"{pointer}/op")
    op = members["op"]
    if not isinstance(op, str) or op not in _STEP_MEMBERS:
        raise InvalidInput("unknown_operation", f"unknown op: {op!r}", f"{pointer}/op")
    required, optional = _STEP_MEMBERS[op]
    _check_members(members, required | {"op"}, optional, pointer)

    def text(name: str) -> str:
        return _text(members[name], f"{pointer}/{name}")

    def instant(name: str) -> datetime:
        return parse_instant(members[name], f"{pointer}/{name}")

    if op == "set":
        return _run_set(store, members, case, pointer)
    if op in ("suspend", "delete"):
        preference_id, now = text("preference_id"), instant("now")
        write = store.suspend if op == "suspend" else store.delete
        store, outcome = write(preference_id, now=now)
        return store, _outcome(outcome, {"ok": True})
    if op == "current_for":
        record = store.current_for(text("principal_ref"))
        return store, {"none": True} if record is None else {"record": record_to_json(record)}
    if op == "read":
        record = store.read(text("preference_id"))
        return store, {"not_known": True} if record is None else {"record": record_to_json(record)}
    return store, _in_effect_answer(store, text("principal_ref"), instant("at"))


def _run_set(
    store: PreferenceStore, members: Mapping[str, object], case: Mapping[str, object], pointer: str
) -> tuple[PreferenceStore, dict[str, object]]:
    # The step's own injected set wins over the case's default; `where` is where it sits.
    if "declared_channels" in members:
        declared, where = members["declared_channels"], pointer
    elif "declared_channels" in case:
        declared, where = case["declared_channels"], ""
    else:
        raise InvalidInput(
            "missing_member",
            "no declared_channels for this set, in the step or the case",
            f"{pointer}/declared_channels",
        )
    if not isinstance(declared, list):
        raise InvalidInput(
            "invalid_type", "declared_channels must be an array", f"{where}/declared_channels"
        )
    now = parse_instant(members["now"], f"{pointer}/now")
    preference_id = _text(members["preference_id"], f"{pointer}/preference_id")
    principal_ref = _text(members["principal_ref"], f"{pointer}/principal_ref")
    channels = members.get("channel_preferences")
    if channels is not None and not isinstance(channels, dict):
        raise InvalidInput(
            "invalid_type",
            "channel_preferences must be an object",
            f"{pointer}/channel_preferences",
        )
    try:
        store, outcome = store.set(
            principal_ref,
            now=now,
            preference_id=preference_id,
            declared_channels=declared,
            channel_preferences=channels,
            frequency_limit=members.get("frequency_limit"),
            quiet_hours=members.get("quiet_hours"),
            format=members.get("format"),
            metadata=members.get("metadata"),
        )
    except NotifyError as err:
        on_declared = (err.pointer or "").startswith("/declared_channels")
        raise err.at(where if on_declared else pointer) from None
    return store, _outcome(outcome, {"preference_id": preference_id})


def _outcome(outcome: Outcome, accepted: dict[str, object]) -> dict[str, object]:
    if isinstance(outcome, Ok):
        return accepted
    out: dict[str, object] = {"refused": outcome.refusal.value}
    if outcome.pointer is not None:
        out["pointer"] = outcome.pointer
    return out


def _in_effect_answer(
    store: PreferenceStore, principal_ref: str, at: datetime
) -> dict[str, object]:
    record = store.in_effect_at(principal_ref, at)
    if record is None:
        return {"none": True}
    status = record.status_at(at)
    assert status is not None
    return {"preference_id": record.preference_id, "status_at": status.value}


def _object(value: object, pointer: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise InvalidInput("invalid_type", "expected a JSON object", pointer)
    return value


def _text(value: object, pointer: str) -> str:
    if not isinstance(value, str):
        raise InvalidInput("invalid_type", "expected a string", pointer)
    return value


def _check_members(
    obj: Mapping[str, object], required: frozenset[str], optional: frozenset[str], pointer: str
) -> None:
    missing = sorted(required - obj.keys())
    if missing:
        raise InvalidInput(
            "missing_member", f"missing member {missing[0]!r}", f"{pointer}/{missing[0]}"
        )
    for name in obj:
        if name not in required and name not in optional:
            raise InvalidInput("unknown_member", f"unknown member {name!r}", f"{pointer}/{name}")
        if obj[name] is None:
            raise InvalidInput(
                "null_value", f"{name} is null: omit it instead", f"{pointer}/{name}"
            )
