"""Every JSON line of the public formats (formats.md sections 2-4), written in one place.

The replay output (hints, inbox entry lines, mail lines, unknown references) and the lines of
an event log are shaped here: which members, in which order, absent values omitted (never
``null``), instants in UTC with ``Z``. The member order is fixed so that the same log gives
byte-identical output, though formats.md does not make it part of the contract.

Shapes and encoding are apart: a ``*_to_json`` function builds the object, a ``dumps_*``
function turns it into one compact line with an encoder. The core encodes with the standard
library (`dumps_json`; it imports no codec of its own, rule G1); a caller may hand in a faster
encoder that writes the same text for these values (the CLI hands in orjson,
`notify_cli.fastjson.dumps`), so the shapes stay defined here whichever encoder writes them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime

import attrs

from notify_core.hints.decide import Collect, Decision, Send
from notify_core.hints.pipeline import Hint, Trigger
from notify_core.inbox.coalesce import EntryState
from notify_core.inbox.pipeline import InboxLine, MailLine
from notify_core.values.instants import format_instant_cached

__all__ = [
    "Encoder",
    "Item",
    "UnknownReference",
    "decision_to_json",
    "dumps_hint",
    "dumps_item",
    "dumps_json",
    "dumps_line",
    "hint_to_json",
    "inbox_line_to_json",
    "item_to_json",
    "mail_line_to_json",
    "unknown_reference_to_json",
]

#: Turns a JSON value into one line of text; any encoder must give `dumps_json`'s text.
Encoder = Callable[[object], str]


def dumps_json(obj: object) -> str:
    """Return a JSON value as one compact line: UTF-8 text as is, no spaces.

    Args:
        obj: a JSON value (strings, numbers, booleans, lists, objects).

    Returns:
        The text, without a line end.

    Raises:
        TypeError: a value JSON cannot hold.
    """
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


# --- decisions and hints (formats.md sections 1 and 3) ----------------------------------------


def decision_to_json(decision: Decision) -> dict[str, object]:
    """Return the JSON answer of a decision (formats.md sections 1 and 3), members in order.

    Args:
        decision: a `Send`, `Collect` or `Skip`.

    Returns:
        ``{"decision": "send", "quiet", "routes", "opens_window_until"?, "count"?,
        "record"?}``,
        ``{"decision": "collect", "until"}`` or ``{"decision": "skip", "reason"}``.
    """
    return _add_decision({}, decision)


def _add_decision(out: dict[str, object], decision: Decision) -> dict[str, object]:
    """Add the members of `decision_to_json` to ``out`` (a hint's line: no object between)."""
    if isinstance(decision, Send):
        out["decision"] = "send"
        out["quiet"] = decision.quiet
        routes = []
        for route in decision.routes:
            if route.due is None:
                routes.append({"device": route.device, "via": route.via._value_})
            else:
                due = format_instant_cached(route.due)
                routes.append({"device": route.device, "via": route.via._value_, "due": due})
        out["routes"] = routes
        if decision.opens_window_until is not None:
            out["opens_window_until"] = format_instant_cached(decision.opens_window_until)
        if decision.count is not None:
            out["count"] = decision.count
        if decision.record is not None:
            out["record"] = decision.record
    elif isinstance(decision, Collect):
        out["decision"] = "collect"
        out["until"] = format_instant_cached(decision.until)
    else:
        out["decision"] = "skip"
        out["reason"] = decision.reason._value_
    return out


def hint_to_json(hint: Hint) -> dict[str, object]:
    """Return the replay output object of a hint (formats.md section 3), members in order.

    Args:
        hint: a hint of the pipeline (or a badge sync).

    Returns:
        ``{"seq"?, "trigger", "at", "recipient", "kind", "thread"?, "message"?, "target"?}``
        followed by the members of `decision_to_json`.
    """
    # Speed device (`_value_`, 1.67 % alone): the replay's line path, kept as one group: its 13
    # devices together are 12.2 % of the
    # replay's instructions (cachegrind, 25,000-event synthetic log; docs/decisions.md 2026-12-06)
    # ``_value_`` (the enum's text) rather than ``value`` (a descriptor call): this runs once
    # per line written, and the line holds plain strings as it always did.
    out: dict[str, object]
    if hint.seq is not None:
        out = {
            "seq": hint.seq,
            "trigger": hint.trigger._value_,
            "at": format_instant_cached(hint.at),
            "recipient": hint.recipient,
            "kind": hint.kind._value_,
        }
    else:
        out = {
            "trigger": hint.trigger._value_,
            "at": format_instant_cached(hint.at),
            "recipient": hint.recipient,
            "kind": hint.kind._value_,
        }
    if hint.thread is not None:
        out["thread"] = hint.thread
    if hint.message is not None:
        out["message"] = hint.message
    if hint.target is not None:
        out["target"] = hint.target
    return _add_decision(out, hint.decision)


# --- unknown references (formats.md section 3) ------------------------------------------------


@attrs.frozen(kw_only=True)
class UnknownReference:
    """An event names an object the log never created: counted, and a skip line.

    The event is still applied as far as it can be; nothing it names is invented.
    """

    seq: int
    at: datetime
    type: str
    id: str
    pointer: str

    def to_json(self) -> dict[str, object]:
        """Return the skip line of the replay output (docs/formats.md), members in order."""
        return unknown_reference_to_json(self)


def unknown_reference_to_json(ref: UnknownReference) -> dict[str, object]:
    """Return the skip line of an unknown reference (formats.md section 3), members in order.

    Args:
        ref: the reference.

    Returns:
        ``{"seq", "trigger": "event", "at", "decision": "skip", "reason":
        "unknown_reference", "reference": {"type", "id"}, "pointer"}``.
    """
    return {
        "seq": ref.seq,
        "trigger": Trigger.EVENT.value,
        "at": format_instant_cached(ref.at),
        "decision": "skip",
        "reason": "unknown_reference",
        "reference": {"type": ref.type, "id": ref.id},
        "pointer": ref.pointer,
    }


# --- inbox entries and mails (formats.md section 4) -------------------------------------------


def inbox_line_to_json(line: InboxLine) -> dict[str, object]:
    """Return the replay output object of an entry line (formats.md section 4), in order.

    Args:
        line: an entry decision of the inbox pipeline.

    Returns:
        ``{"seq", "trigger": "inbox", "at", "recipient", "site"?, "category", "variant",
        "group_key", "entry"?, "decision", "reason"?}`` and, with an entry, ``"count"``,
        ``"in_app"``, ``"email"`` and ``"email_after"?``.
    """
    out: dict[str, object] = {
        "seq": line.seq,
        "trigger": "inbox",
        "at": format_instant_cached(line.at),
    }
    out["recipient"] = line.recipient
    if line.site is not None:
        out["site"] = line.site
    out["category"] = line.category
    out["variant"] = line.variant
    out["group_key"] = line.group_key
    entry = line.entry
    if entry is not None:
        out["entry"] = entry.id
    out["decision"] = line.decision.value
    if line.reason is not None:
        out["reason"] = line.reason.value
    if entry is not None:
        state: EntryState = entry.state
        out["count"] = state.count
        out["in_app"] = state.in_app
        out["email"] = state.email.value
        if state.email_after is not None:
            out["email_after"] = format_instant_cached(state.email_after)
    return out


def mail_line_to_json(line: MailLine) -> dict[str, object]:
    """Return the replay output object of a mail line (formats.md section 4), in order.

    Args:
        line: a mail of a drain, or one reason its due entries were skipped.

    Returns:
        ``{"trigger": "mail", "at", "recipient", "site", "decision", "reason"?,
        "template"?, "entries": [{"entry", "category", "variant", "count"}], "more"?,
        "unsubscribe"?, "record"?}`` (``unsubscribe`` on a send only, ``more`` when not 0,
        ``record`` on a send a preference record governed, M6).
    """
    out: dict[str, object] = {
        "trigger": "mail",
        "at": format_instant_cached(line.at),
        "recipient": line.recipient,
        "site": line.site,
        "decision": line.decision,
    }
    if line.reason is not None:
        out["reason"] = line.reason.value
    if line.template is not None:
        out["template"] = line.template
    out["entries"] = [
        {
            "entry": e.id,
            "category": e.category,
            "variant": e.state.variant,
            "count": e.state.count,
        }
        for e in line.entries
    ]
    if line.more:
        out["more"] = line.more
    if line.decision == "send":
        out["unsubscribe"] = list(line.unsubscribe)
        if line.record is not None:
            out["record"] = line.record
    return out


# --- lines ------------------------------------------------------------------------------------

#: What a replay writes: hints, entry and mail lines, unknown references.
Item = Hint | InboxLine | MailLine | UnknownReference


def dumps_hint(hint: Hint, dumps: Encoder = dumps_json) -> str:
    """Return the JSON line of a hint: compact, members in format order, no ``null``.

    Args:
        hint: the hint.
        dumps: the encoder; any other must give the same text as `dumps_json` (the CLI hands
            in orjson, which does for hints: they hold only strings, integers and booleans).

    Returns:
        The line, without a line end.
    """
    return dumps(hint_to_json(hint))


def item_to_json(item: Item) -> dict[str, object]:
    """Return the JSON object of anything a replay writes (formats.md sections 3, 4).

    Args:
        item: a hint, an inbox entry line, a mail line or an unknown reference's skip.

    Returns:
        The object of `hint_to_json`, `inbox_line_to_json`, `mail_line_to_json` or
        `unknown_reference_to_json`, by the item's type.
    """
    # Exact type checks, most frequent first: this runs once per output line.
    if type(item) is Hint:
        return hint_to_json(item)
    if type(item) is UnknownReference:
        return unknown_reference_to_json(item)
    if type(item) is InboxLine:
        return inbox_line_to_json(item)
    assert isinstance(item, MailLine)
    return mail_line_to_json(item)


def dumps_item(item: Item, dumps: Encoder = dumps_json) -> str:
    """Return the JSON line of anything a replay writes (formats.md sections 3, 4).

    Args:
        item: a hint, an inbox entry line, a mail line or an unknown reference's skip.
        dumps: the encoder, as `dumps_hint` takes.

    Returns:
        The line, without a line end.
    """
    if type(item) is Hint:  # the usual line: one call less
        return dumps(hint_to_json(item))
    return dumps(item_to_json(item))


def dumps_line(obj: Mapping[str, object], dumps: Encoder = dumps_json) -> str:
    """Return a JSON object as one compact line, as `dumps_hint` writes.

    For the lines of an event log (formats.md section 2), which a log writer builds itself.

    Args:
        obj: the object, members in the order they are to be written.
        dumps: the encoder, as `dumps_hint` takes.

    Returns:
        The line, without a line end.
    """
    return dumps(obj)
