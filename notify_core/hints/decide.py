"""Decide one hint for one recipient (rules D1-D11).

``decide`` runs the steps D1-D7 in order and the first step that ends, ends the decision:
who is a recipient (D1), who may read (D2), the preference gate (D3), presence in the thread
(D4), routes per device (D5), the bundling window (D6) and quiet hours (D7); last, the
person's preference record in effect takes push routes away (M2-M4). ``flush`` (D8)
and ``release_delayed`` (D9) rerun the same steps at a window's end and at a delayed push's
due time. ``explain`` (D11) tells which steps ran and what each read.

The facts are split in two values: `EventFacts`, shared by every recipient of one hint, and
`RecipientFacts`, one per person. A fan-out builds the first once, and `decide_all` converts
each time zone once per instant instead of once per person.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import tzinfo
from typing import Final

import attrs

# The hot path builds its decisions with the slot setters and shared skips defined beside the
# classes: they are imported by name, private as they are.
from notify_core.hints.decision_values import (
    _ACTIVE,
    _ADMIN_DISABLED,
    _LEVEL,
    _NO_ROUTE,
    _NO_SWITCHES,
    _NOT_ALLOWED,
    _NOT_RECIPIENT,
    _SKIPS,
    LEVEL_GATE,
    METRIC_REASONS,
    MOBILE,
    SWITCH_KINDS,
    Collect,
    Connection,
    Decision,
    Device,
    EventFacts,
    FlushState,
    Platform,
    Policy,
    RecipientFacts,
    Route,
    Send,
    Skip,
    SkipReason,
    Switches,
    Via,
    _new_object,
    _new_send,
    _push_route_of,
    _send_count,
    _send_opens,
    _send_quiet,
    _send_record,
    _send_routes,
    _set_routes_cache,
)
from notify_core.hints.levels import Level, LevelFacts, effective, resolve_level
from notify_core.hints.quiet import LocalCache, covered
from notify_core.values.errors import InvalidFacts
from notify_core.values.kinds import RUN_KINDS, THREAD_KINDS, Kind
from notify_core.values.record_rules import DeliveryChannel, verdict

__all__ = [
    "LEVEL_GATE",
    "METRIC_REASONS",
    "SWITCH_KINDS",
    "Collect",
    "Connection",
    "Decision",
    "Device",
    "EventFacts",
    "Explanation",
    "FlushState",
    "Platform",
    "Policy",
    "RecipientFacts",
    "Route",
    "Send",
    "Skip",
    "SkipReason",
    "Step",
    "Switches",
    "Via",
    "decide",
    "decide_all",
    "explain",
    "flush",
    "gate",
    "release_delayed",
]


def _missing_level() -> InvalidFacts:
    return InvalidFacts("missing_level", "this kind needs the level facts", "/level")


def _gate(event: EventFacts, person: RecipientFacts, kind: Kind) -> Skip | None:
    """D1-D3: recipient, read right, preference. ``None`` means the decision goes on."""
    return _gate_on(
        event,
        kind,
        person.author,
        person.run_starter,
        person.allowed,
        person.level,
        person.switches,
    )


def _gate_on(
    event: EventFacts,
    kind: Kind,
    author: bool,
    run_starter: bool,
    allowed: bool,
    level: LevelFacts | None,
    switches: Switches,
) -> Skip | None:
    if author or (kind in RUN_KINDS and not run_starter):
        return _NOT_RECIPIENT
    if not allowed:
        return _NOT_ALLOWED
    needed = LEVEL_GATE.get(kind)
    if needed is not None:
        if level is None:
            raise _missing_level()
        if effective(level, event.now) not in needed:
            return _LEVEL
    elif kind is Kind.ADMIN:
        enabled = switches.admin_enabled
        if enabled is None:
            enabled = event.policy.default_admin_enabled
        if not enabled:
            return _ADMIN_DISABLED
    return None


def gate(
    event: EventFacts,
    *,
    allowed: bool,
    author: bool = False,
    run_starter: bool = False,
    level: LevelFacts | None = None,
    switches: Switches = _NO_SWITCHES,
) -> Skip | None:
    """Run D1-D3 alone, on the only facts they read; ``None`` means `decide` goes on.

    When this returns a `Skip`, `decide` returns the same `Skip` for any `RecipientFacts`
    with these values, whatever its devices, connections, quiet rules and window: a fan-out
    can gather those facts only for the people who pass (most recipients of a ``message``
    end at D3). The arguments mean what the fields of `RecipientFacts` of the same names mean.

    Raises:
        InvalidFacts: a kind that needs the level facts got none (code ``missing_level``).
    """
    return _gate_on(event, event.kind, author, run_starter, allowed, level, switches)


def _routes(event: EventFacts, person: RecipientFacts, kind: Kind) -> Skip | tuple[Route, ...]:
    """D4 and D5 in one pass over the connections."""
    exclude = event.exclude_device
    if not person.connections:
        if exclude is None:
            return person._push_routes or _NO_ROUTE
        kept = tuple(r for r in person._push_routes if r.device != exclude)
        return kept or _NO_ROUTE
    platforms = {d.id: d.platform for d in person.devices if d.id != exclude}
    live: set[str] = set()
    desktop_active = False
    thread = event.thread if kind in THREAD_KINDS else None
    for conn in person.connections:
        platform = platforms.get(conn.device)
        if platform is None:
            continue
        live.add(conn.device)
        if not conn.idle:
            if thread is not None and thread in conn.focus:
                return _ACTIVE
            if platform not in MOBILE:
                desktop_active = True
    delay = desktop_active and kind is not Kind.SECURITY
    delay = delay and bool(event.policy.mobile_delay_when_desktop_active)
    routes: list[Route] = []
    for device in person.devices:
        if device.id == exclude:
            continue
        if device.id in live:
            routes.append(Route(device=device.id, via=Via.GATEWAY))
        elif delay and device.platform in MOBILE:
            routes.append(Route(device=device.id, via=Via.PUSH_DELAYED, due=event._delayed_due))
        else:
            routes.append(device._push_route)
    return tuple(routes) if routes else _NO_ROUTE


def _quiet(event: EventFacts, person: RecipientFacts, kind: Kind, cache: LocalCache | None) -> bool:
    """D7: whether the send is quiet."""
    if kind is Kind.SECURITY or not person.quiet_rules:
        return False
    if kind is Kind.INPUT_NEEDED:
        breaks = person.switches.input_needed_breaks_quiet_hours
        if breaks is None:
            breaks = event.policy.default_input_needed_breaks_quiet_hours
        if breaks:
            return False
    return covered(person.quiet_rules, event.now, person._zone, cache)


def _shaped(send: Send, person: RecipientFacts) -> Decision:
    """M2-M4, the last step: the record in effect takes the push routes of a send away.

    ``push`` and ``push_delayed`` go when the record is suspended, turns push off or its cap
    is reached; a live ``gateway`` route stays. A send left with no route is a skip naming
    the reason; a send without push routes is not a push delivery and is left as it is. A
    send that keeps a push route names the record (M6). ``send`` is new (made by the
    caller for this decision), so naming the record sets its slot.
    """
    record = person.record
    assert record is not None
    routes = send.routes
    kept = tuple(r for r in routes if r.via is Via.GATEWAY)
    if len(kept) == len(routes):
        return send
    reason = verdict(record, DeliveryChannel.PUSH, person.pushes_today)
    if reason is None:
        _send_record(send, record.preference_id)
        return send
    if not kept:
        return _SKIPS[SkipReason(reason.value)]
    return attrs.evolve(send, routes=kept)


def _decide(event: EventFacts, person: RecipientFacts, cache: LocalCache | None) -> Decision:
    kind = event.kind
    skip = _gate(event, person, kind)
    if skip is not None:
        return skip
    routes = _routes(event, person, kind)
    if type(routes) is Skip:
        return routes
    end = person.window_end
    opens = event._window_until
    if end is not None and end > event.now:
        if kind is Kind.MESSAGE:
            return Collect(until=end)
        opens = None
    quiet = _quiet(event, person, kind, cache)
    send = _new_send(routes, quiet, opens)  # type: ignore[arg-type]
    return send if person.record is None else _shaped(send, person)


def decide(event: EventFacts, person: RecipientFacts) -> Decision:
    """Decide one hint for one recipient (D1-D7).

    Args:
        event: the facts every recipient of the hint shares.
        person: the recipient's facts.

    Returns:
        Exactly one of `Skip`, `Collect` or `Send`.

    Raises:
        InvalidFacts: a kind that needs the level facts got none (code ``missing_level``).

    Example:
        >>> from datetime import datetime, UTC
        >>> event = EventFacts(now=datetime(2026, 10, 23, 12, tzinfo=UTC), kind="message",
        ...                    thread="t-1")
        >>> person = RecipientFacts(allowed=True, level=LevelFacts(instance_default="all"),
        ...                         devices=[Device(id="d-1", platform="android")])
        >>> decide(event, person).routes
        (Route(device='d-1', via=<Via.PUSH: 'push'>, due=None),)
    """
    return _decide(event, person, None)


def decide_all(event: EventFacts, people: Iterable[RecipientFacts]) -> list[Decision]:
    """Decide one hint for many recipients; the same as `decide` for each, but faster.

    Each time zone is converted once for the event's instant, however many people use it.
    """
    cache: LocalCache = {}
    kind = event.kind
    needed = LEVEL_GATE.get(kind)
    if needed is None or event.exclude_device is not None:
        return [_decide(event, person, cache) for person in people]
    return _decide_leveled(event, people, kind, needed, cache)


def _decide_leveled(
    event: EventFacts,
    people: Iterable[RecipientFacts],
    kind: Kind,
    needed: frozenset[Level],
    cache: LocalCache,
) -> list[Decision]:
    """`_decide` for each person, one loop with D1-D7 inlined, for the kinds a level gates.

    This is the loop of every large fan-out (bench/bench_core.py times it): these kinds are never
    ``security`` nor ``input_needed`` (so D7 has no exemption) and have no excluded device.
    Anything unusual (live connections) goes through the same helpers as `decide`.
    """
    now = event.now
    run_kind = kind in RUN_KINDS
    collects = kind is Kind.MESSAGE
    window_until = event._window_until
    zones: dict[str | None, tzinfo] = {}
    new_send, set_routes, set_quiet, set_opens, set_count = (
        _new_object,
        _send_routes,
        _send_quiet,
        _send_opens,
        _send_count,
    )
    out: list[Decision] = []
    append = out.append
    for person in people:
        # D1-D3, as _gate_on.
        if person.author or (run_kind and not person.run_starter):
            append(_NOT_RECIPIENT)
            continue
        if not person.allowed:
            append(_NOT_ALLOWED)
            continue
        level = person.level
        if level is None:
            raise _missing_level()
        row = level.thread or level.channel or level.space
        if row is not None:
            until = row.muted_until
            wanted = Level.MUTE if until is not None and until > now else row.level
        else:
            default = level.channel_default
            wanted = default if default is not None else effective(level, now)
        if wanted not in needed:
            append(_LEVEL)
            continue
        # D4-D5: without connections, every device gets its push route.
        routes: tuple[Route, ...] | Skip
        if person.connections:
            routes = _routes(event, person, kind)
        else:
            pushes = person._routes_cache
            if pushes is None:
                pushes = tuple(map(_push_route_of, person.devices))
                _set_routes_cache(person, pushes)
            routes = pushes or _NO_ROUTE
        if isinstance(routes, Skip):
            append(routes)
            continue
        # D6
        end = person.window_end
        opens = window_until
        if end is not None and end > now:
            if collects:
                append(Collect(until=end))
                continue
            opens = None
        # D7: the loop of quiet.covered, inlined (keep the two alike), with zones found by name.
        quiet = False
        for rule in person.quiet_rules:
            if not rule.enabled:
                continue
            zone = rule._zone
            if zone is None:
                name = person.user_time_zone
                zone = zones.get(name)
                if zone is None:
                    zone = zones[name] = person._zone
            local = cache.get(zone)
            if local is None:
                wall = now.astimezone(zone)
                local = cache[zone] = (wall.weekday(), wall.hour * 60 + wall.minute)
            weekday, minute = local
            starts, ends, days = rule._start, rule._end, rule.weekdays
            if starts < ends:
                if days >> weekday & 1 and starts <= minute < ends:
                    quiet = True
                    break
            elif (days >> weekday & 1 and minute >= starts) or (
                days >> (weekday - 1) % 7 & 1 and minute < ends
            ):
                quiet = True
                break
        # _new_send, inlined.
        send = new_send(Send)
        set_routes(send, routes)
        set_quiet(send, quiet)
        set_opens(send, opens)
        set_count(send, None)
        _send_record(send, None)
        append(send if person.record is None else _shaped(send, person))
    return out


def flush(state: FlushState, event: EventFacts, person: RecipientFacts) -> Decision:
    """Decide the hint at a window's end (D8).

    Runs D1-D5 and D7 again for kind ``message`` with the facts of the flush time, ignoring
    ``window_end``; a send carries ``count = unread`` and opens the next window.

    Args:
        state: what the window collected and how much is unread now.
        event: facts at the flush time (its kind is ignored; ``message`` is decided).
        person: the recipient's facts at the flush time.

    Raises:
        InvalidFacts: the event has no thread (code ``missing_thread``).
    """
    if event.thread is None:
        raise InvalidFacts("missing_thread", "a window belongs to a thread", "/thread")
    if state.collected == 0:
        return _SKIPS[SkipReason.NOTHING_COLLECTED]
    if state.unread == 0:
        return _SKIPS[SkipReason.READ]
    if event.kind is not Kind.MESSAGE:
        event = attrs.evolve(event, kind=Kind.MESSAGE)
    skip = _gate(event, person, Kind.MESSAGE)
    if skip is not None:
        return skip
    routes = _routes(event, person, Kind.MESSAGE)
    if type(routes) is Skip:
        return routes
    quiet = _quiet(event, person, Kind.MESSAGE, None)
    send = Send(
        routes=routes,  # type: ignore[arg-type]
        quiet=quiet,
        opens_window_until=event._window_until,
        count=state.unread,
    )
    return send if person.record is None else _shaped(send, person)


def release_delayed(event: EventFacts, person: RecipientFacts, device: str, read: bool) -> Decision:
    """Decide a ``push_delayed`` route when it comes due (D9).

    Args:
        event: facts at the release time, with the kind of the original hint.
        person: the recipient's facts at the release time.
        device: the device of the delayed route.
        read: whether the person has read what the hint was about.

    Returns:
        A `Skip`, or a `Send` with the ``push`` route of ``device``; never a window change.
    """
    if read:
        return _SKIPS[SkipReason.READ]
    kind = event.kind
    skip = _gate(event, person, kind)
    if skip is not None:
        return skip
    if kind in THREAD_KINDS and _active_in_thread(event, person):
        return _ACTIVE
    if device == event.exclude_device or all(d.id != device for d in person.devices):
        return _NO_ROUTE
    quiet = _quiet(event, person, kind, None)
    send = Send(routes=(Route(device=device, via=Via.PUSH),), quiet=quiet)
    return send if person.record is None else _shaped(send, person)


def _active_in_thread(event: EventFacts, person: RecipientFacts) -> bool:
    known = {d.id for d in person.devices} - {event.exclude_device}
    return any(
        c.device in known and not c.idle and event.thread in c.focus for c in person.connections
    )


# --- D11: explanations -----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Step:
    """One step of a decision: the rule, what it read, and whether it ended the decision."""

    rule: str
    title: str
    read: Mapping[str, object]
    ended: bool = False


@attrs.frozen(kw_only=True)
class Explanation:
    """The steps `decide` took (D11) and the decision they led to."""

    steps: tuple[Step, ...]
    decision: Decision


def explain(event: EventFacts, person: RecipientFacts) -> Explanation:
    """Explain a decision step by step (D11), for tooling and support.

    Each step names its rule and the facts it read: the level source chain (D3), each
    connection (D4), each device's route (D5), the window (D6) and the quiet rule that
    matched (D7). The decision is the one `decide` gives.
    """
    kind = event.kind
    steps: list[Step] = []
    decision = decide(event, person)

    def step(rule: str, title: str, read: Mapping[str, object], ended: bool = False) -> None:
        steps.append(Step(rule=rule, title=title, read=read, ended=ended))

    ends = isinstance(decision, Skip)
    reason = decision.reason if isinstance(decision, Skip) else None
    d1_end = reason is SkipReason.NOT_RECIPIENT
    step(
        "D1",
        "recipient",
        {"author": person.author, "run_kind": kind in RUN_KINDS, "run_starter": person.run_starter},
        d1_end,
    )
    if d1_end:
        return Explanation(steps=tuple(steps), decision=decision)
    step("D2", "read right", {"allowed": person.allowed}, reason is SkipReason.NOT_ALLOWED)
    if reason is SkipReason.NOT_ALLOWED:
        return Explanation(steps=tuple(steps), decision=decision)
    d3: dict[str, object] = {"kind": kind.value}
    if kind in LEVEL_GATE and person.level is not None:
        eff = resolve_level(person.level, event.now)
        d3["chain"] = _level_chain(person.level)
        d3["effective"] = eff.level.value
        d3["source"] = eff.source.value
        if eff.muted_until is not None:
            d3["muted_until"] = eff.muted_until
        d3["needs"] = sorted(level.value for level in LEVEL_GATE[kind])
    elif kind is Kind.ADMIN:
        d3["admin_enabled"] = person.switches.admin_enabled
        d3["default_admin_enabled"] = event.policy.default_admin_enabled
    else:
        d3["level"] = "ignored"
    d3_end = reason in (SkipReason.LEVEL, SkipReason.ADMIN_DISABLED)
    step("D3", "preference", d3, d3_end)
    if d3_end:
        return Explanation(steps=tuple(steps), decision=decision)
    connections = [
        {"device": c.device, "focus": sorted(c.focus), "idle": c.idle} for c in person.connections
    ]
    d4_end = reason is SkipReason.ACTIVE_IN_THREAD
    step("D4", "active in thread", {"thread": event.thread, "connections": connections}, d4_end)
    if d4_end:
        return Explanation(steps=tuple(steps), decision=decision)
    devices = [{"device": d.id, "platform": d.platform.value} for d in person.devices]
    d5: dict[str, object] = {"devices": devices, "exclude_device": event.exclude_device}
    if isinstance(decision, Send):
        d5["routes"] = [{"device": r.device, "via": r.via.value} for r in decision.routes]
    step("D5", "routes", d5, reason is SkipReason.NO_ROUTE)
    if ends and reason not in _RECORD_SKIPS:
        return Explanation(steps=tuple(steps), decision=decision)
    if kind in THREAD_KINDS:
        step(
            "D6",
            "window",
            {
                "window_end": person.window_end,
                "coalesce_window_s": event.policy.coalesce_window.total_seconds(),
            },
            isinstance(decision, Collect),
        )
    if isinstance(decision, Send) or reason in _RECORD_SKIPS:
        quiet = decision.quiet if isinstance(decision, Send) else False
        step("D7", "quiet hours", _quiet_reading(event, person, kind, quiet))
    if person.record is not None and not isinstance(decision, Collect):
        step("M2-M4", "preference record", _record_reading(person), reason in _RECORD_SKIPS)
    return Explanation(steps=tuple(steps), decision=decision)


_RECORD_SKIPS: Final = frozenset(
    {SkipReason.SUSPENDED, SkipReason.RECORD_CHANNEL_OFF, SkipReason.FREQUENCY_CAP}
)


def _record_reading(person: RecipientFacts) -> dict[str, object]:
    record = person.record
    assert record is not None
    reading: dict[str, object] = {
        "record": record.preference_id,
        "suspended": record.suspended,
        "push_enabled": record.push.enabled,
    }
    if record.push.max_per_day is not None:
        reading["max_per_day"] = record.push.max_per_day
        reading["pushes_today"] = person.pushes_today
    if record.not_applied:
        reading["not_applied"] = list(record.not_applied)
    return reading


def _level_chain(facts: LevelFacts) -> list[dict[str, object]]:
    chain: list[dict[str, object]] = []
    for source in ("thread", "channel", "space"):
        row = getattr(facts, source)
        if row is not None:
            entry: dict[str, object] = {"source": source, "level": row.level.value}
            if row.muted_until is not None:
                entry["muted_until"] = row.muted_until
            chain.append(entry)
    if facts.channel_default is not None:
        chain.append({"source": "channel_default", "level": facts.channel_default.value})
    if facts.direct_message:
        chain.append({"source": "direct_message", "level": "all"})
    if facts.personal_default is not None:
        chain.append({"source": "personal_default", "level": facts.personal_default.value})
    chain.append({"source": "instance_default", "level": facts.instance_default.value})
    return chain


def _quiet_reading(
    event: EventFacts, person: RecipientFacts, kind: Kind, quiet: bool
) -> dict[str, object]:
    reading: dict[str, object] = {"quiet": quiet}
    if kind is Kind.SECURITY:
        reading["exempt"] = "security is never quiet"
        return reading
    breaks = person.switches.input_needed_breaks_quiet_hours
    if breaks is None:
        breaks = event.policy.default_input_needed_breaks_quiet_hours
    if kind is Kind.INPUT_NEEDED and breaks and person.quiet_rules:
        reading["exempt"] = "input_needed_breaks_quiet_hours"
        return reading
    for index, rule in enumerate(person.quiet_rules):
        if covered((rule,), event.now, person._zone):
            reading["matched_rule"] = index
            reading["rule_zone"] = rule.time_zone or person.user_time_zone or "UTC"
            break
    return reading
