"""Decide one hint for one recipient (rules D1-D11).

``decide`` runs the steps D1-D7 in order and the first step that ends, ends the decision:
who is a recipient (D1), who may read (D2), the preference gate (D3), presence in the thread
(D4), routes per device (D5), the bundling window (D6) and quiet hours (D7). ``flush`` (D8)
and ``release_delayed`` (D9) rerun the same steps at a window's end and at a delayed push's
due time. ``explain`` (D11) tells which steps ran and what each read.

The facts are split in two values: `EventFacts`, shared by every recipient of one hint, and
`RecipientFacts`, one per person. A fan-out builds the first once, and `decide_all` converts
each time zone once per instant instead of once per person.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta, tzinfo
from typing import Any, Final

import attrs

from notify_core.errors import InvalidFacts
from notify_core.instants import require_instant
from notify_core.kinds import RUN_KINDS, THREAD_KINDS, Kind, parse_kind
from notify_core.levels import Level, LevelFacts, effective, resolve_level
from notify_core.quiet import LocalCache, QuietRule, covered, zone_or_utc

__all__ = [
    "LEVEL_GATE",
    "METRIC_REASONS",
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


class Platform(enum.StrEnum):
    """The kind of a person's device (D5)."""

    IOS = "ios"
    ANDROID = "android"
    DESKTOP = "desktop"
    WEB = "web"


MOBILE: Final = frozenset({Platform.IOS, Platform.ANDROID})


class Via(enum.StrEnum):
    """How a route reaches a device (D5)."""

    GATEWAY = "gateway"
    PUSH = "push"
    PUSH_DELAYED = "push_delayed"


class SkipReason(enum.StrEnum):
    """Why no hint goes to a recipient (D1-D10)."""

    NOT_RECIPIENT = "not_recipient"
    NOT_ALLOWED = "not_allowed"
    LEVEL = "level"
    ADMIN_DISABLED = "admin_disabled"
    ACTIVE_IN_THREAD = "active_in_thread"
    NO_ROUTE = "no_route"
    READ = "read"
    NOTHING_COLLECTED = "nothing_collected"
    EXPIRED = "expired"
    NO_PROVIDER = "no_provider"


#: D10: the metric reason each skip counts under; ``None`` is not counted.
METRIC_REASONS: Final[Mapping[SkipReason, str | None]] = {
    SkipReason.NOT_ALLOWED: "no_access",
    SkipReason.LEVEL: "preference",
    SkipReason.ADMIN_DISABLED: "preference",
    SkipReason.ACTIVE_IN_THREAD: "active_in_thread",
    SkipReason.NO_ROUTE: "no_registration",
    SkipReason.READ: "read",
    SkipReason.EXPIRED: "expired",
    SkipReason.NO_PROVIDER: "no_provider",
    SkipReason.NOT_RECIPIENT: None,
    SkipReason.NOTHING_COLLECTED: None,
}

#: D3: the levels under which each thread kind goes out; kinds absent here ignore the level.
LEVEL_GATE: Final[Mapping[Kind, frozenset[Level]]] = {
    Kind.MESSAGE: frozenset({Level.ALL}),
    Kind.MENTION: frozenset({Level.ALL, Level.MENTIONS}),
    Kind.DM: frozenset({Level.ALL, Level.MENTIONS}),
    Kind.RUN_DONE: frozenset({Level.ALL, Level.MENTIONS}),
    Kind.RUN_FAILED: frozenset({Level.ALL, Level.MENTIONS}),
}


def _instant(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    require_instant(value, attribute.name)


def _optional_instant(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None:
        require_instant(value, attribute.name)


def _non_negative(_inst: object, attribute: attrs.Attribute[Any], value: timedelta) -> None:
    if value < timedelta(0):
        raise InvalidFacts(
            "invalid_duration", f"{attribute.name} is negative", f"/{attribute.name}"
        )


@attrs.frozen(kw_only=True)
class Policy:
    """Instance-wide values that shape decisions.

    Args:
        coalesce_window: how long a window collects ``message`` hints (D6); zero: no windows.
        mobile_delay_when_desktop_active: delay of mobile pushes while a desktop or web device
            is live and not idle (D5); zero: no delay.
        default_admin_enabled: the ``admin_enabled`` switch of people who set none (D3).
        default_input_needed_breaks_quiet_hours: the switch of D7 for people who set none.
        instance_default_level: the last fact of the L3 chain.
        badge_sync_min_interval: at most one badge sync per person per interval (B2).
    """

    coalesce_window: timedelta = attrs.field(default=timedelta(seconds=90), validator=_non_negative)
    mobile_delay_when_desktop_active: timedelta = attrs.field(
        default=timedelta(seconds=60), validator=_non_negative
    )
    default_admin_enabled: bool = True
    default_input_needed_breaks_quiet_hours: bool = False
    instance_default_level: Level = Level.MENTIONS
    badge_sync_min_interval: timedelta = attrs.field(
        default=timedelta(seconds=60), validator=_non_negative
    )


def _platform(value: object) -> Platform:
    try:
        return Platform(value)  # type: ignore[arg-type]
    except ValueError:
        raise InvalidFacts("invalid_platform", f"unknown platform {value!r}", "/platform") from None


@attrs.frozen(kw_only=True)
class Route:
    """Where and how one device gets the hint (D5); ``due`` only for ``push_delayed``."""

    device: str
    via: Via
    due: datetime | None = None


@attrs.frozen(kw_only=True)
class Device:
    """One of a person's active devices."""

    id: str
    platform: Platform = attrs.field(converter=_platform)
    # Made once per device: D5 hands this route out for every hint the device gets.
    _push_route: Route = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_push_route", Route(device=self.id, via=Via.PUSH))


def _frozen_ids(ids: Iterable[str]) -> frozenset[str]:
    return frozenset(ids)


@attrs.frozen(kw_only=True)
class Connection:
    """A live gateway connection of a device: the threads in focus and whether it is idle."""

    device: str
    focus: frozenset[str] = attrs.field(default=frozenset(), converter=_frozen_ids)
    idle: bool = False


@attrs.frozen(kw_only=True)
class Switches:
    """A person's own switches; ``None`` means unset, and the policy default applies (D3, D7)."""

    admin_enabled: bool | None = None
    input_needed_breaks_quiet_hours: bool | None = None


@attrs.frozen(kw_only=True)
class Skip:
    """No hint for this recipient, and why."""

    reason: SkipReason


@attrs.frozen(kw_only=True)
class Collect:
    """The hint joins the open window, which ends (and is flushed) at ``until`` (D6)."""

    until: datetime


@attrs.frozen(kw_only=True)
class Send:
    """Send the hint now.

    Args:
        routes: one per device, ordered by device id (D5).
        quiet: deliver without sound (D7).
        opens_window_until: present when this send opens a bundling window (D6, D8).
        count: the number of unread messages a flush reports (D8); absent otherwise.
    """

    routes: tuple[Route, ...]
    quiet: bool
    opens_window_until: datetime | None = None
    count: int | None = None


Decision = Skip | Collect | Send


def _slot_setter(cls: type, name: str) -> Callable[[object, object], None]:
    setter: Callable[[object, object], None] = cls.__dict__[name].__set__
    return setter


_new_object = object.__new__
_send_routes = _slot_setter(Send, "routes")
_send_quiet = _slot_setter(Send, "quiet")
_send_opens = _slot_setter(Send, "opens_window_until")
_send_count = _slot_setter(Send, "count")


def _new_send(routes: tuple[Route, ...], quiet: bool, opens: datetime | None) -> Send:
    """``Send(routes=routes, quiet=quiet, opens_window_until=opens)``, made in a third of the time.

    attrs' keyword ``__init__`` of a frozen class costs about 1 us, a quarter of a whole
    decision; Send has no converter nor validator, so setting its slots directly is the same
    value (tests/test_decide.py checks the two agree field by field).
    """
    send: Send = _new_object(Send)
    _send_routes(send, routes)
    _send_quiet(send, quiet)
    _send_opens(send, opens)
    _send_count(send, None)
    return send


_SKIPS: Final = {reason: Skip(reason=reason) for reason in SkipReason}
_NOT_RECIPIENT: Final = _SKIPS[SkipReason.NOT_RECIPIENT]
_NOT_ALLOWED: Final = _SKIPS[SkipReason.NOT_ALLOWED]
_LEVEL: Final = _SKIPS[SkipReason.LEVEL]
_ADMIN_DISABLED: Final = _SKIPS[SkipReason.ADMIN_DISABLED]
_ACTIVE: Final = _SKIPS[SkipReason.ACTIVE_IN_THREAD]
_NO_ROUTE: Final = _SKIPS[SkipReason.NO_ROUTE]
_NO_SWITCHES: Final = Switches()


def _kind(value: object) -> Kind:
    kind = parse_kind(value, "/kind")
    if kind is Kind.SYNC:
        raise InvalidFacts("unknown_kind", "the badge sync is not a decided hint", "/kind")
    return kind


@attrs.frozen(kw_only=True)
class EventFacts:
    """What every recipient of one hint shares.

    Args:
        now: the instant of the decision (the event time, or the flush or release time).
        kind: the hint's kind.
        thread: the thread of a thread kind (K2); required for those, ignored otherwise.
        policy: the instance's policy.
        exclude_device: a device that never gets a route and whose connections are ignored
            (for ``security``: the pending device itself).

    Raises:
        InvalidFacts: a thread kind without ``thread`` (code ``missing_thread``).
        NaiveDatetime: ``now`` without time zone.
    """

    now: datetime = attrs.field(validator=_instant)
    kind: Kind = attrs.field(converter=_kind)
    thread: str | None = None
    policy: Policy = Policy()
    exclude_device: str | None = None
    # Shared by every recipient, so computed once per event.
    _window_until: datetime | None = attrs.field(init=False, eq=False, repr=False)
    _delayed_due: datetime = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        _derive(self)

    @classmethod
    def checked(
        cls,
        now: datetime,
        kind: Kind,
        thread: str | None,
        policy: Policy,
        exclude_device: str | None = None,
    ) -> EventFacts:
        """The value ``EventFacts(now=..., kind=..., ...)`` gives, for values checked already.

        A caller that hands in a `Kind` other than ``sync`` and an aware ``now`` (the
        pipeline: its candidates and clock are built that way) gets the same value without the
        converter, the validators and the keyword ``__init__``: every fan-out builds one, and
        both tasks of a partitioned replay build one for the same event (tests/test_decide.py
        checks the two agree field by field).

        Raises:
            InvalidFacts: a thread kind without ``thread`` (code ``missing_thread``).
        """
        facts: EventFacts = _new_object(cls)
        _facts_now(facts, now)
        _facts_kind(facts, kind)
        _facts_thread(facts, thread)
        _facts_policy(facts, policy)
        _facts_exclude(facts, exclude_device)
        _derive(facts)
        return facts


_facts_now = _slot_setter(EventFacts, "now")
_facts_kind = _slot_setter(EventFacts, "kind")
_facts_thread = _slot_setter(EventFacts, "thread")
_facts_policy = _slot_setter(EventFacts, "policy")
_facts_exclude = _slot_setter(EventFacts, "exclude_device")
_facts_window = _slot_setter(EventFacts, "_window_until")
_facts_delayed = _slot_setter(EventFacts, "_delayed_due")


def _derive(facts: EventFacts) -> None:
    """Refuse a thread kind without a thread; set the values every recipient shares (both
    ways of building `EventFacts` end here)."""
    kind, now, policy = facts.kind, facts.now, facts.policy
    if kind in THREAD_KINDS and facts.thread is None:
        raise InvalidFacts("missing_thread", f"a {kind} hint needs a thread", "/thread")
    window = policy.coalesce_window
    _facts_window(facts, now + window if window and kind in THREAD_KINDS else None)
    _facts_delayed(facts, now + policy.mobile_delay_when_desktop_active)


def _sorted_devices(devices: Iterable[Device]) -> tuple[Device, ...]:
    # Fast path: a store hands in a tuple that is already ordered (one per recipient).
    if type(devices) is tuple:
        if len(devices) < 2:
            return devices
        previous = devices[0].id
        for device in devices[1:]:
            if device.id < previous:
                break
            previous = device.id
        else:
            return devices
    return tuple(sorted(devices, key=lambda device: device.id))


def _rule_tuple(rules: Iterable[QuietRule]) -> tuple[QuietRule, ...]:
    return rules if type(rules) is tuple else tuple(rules)


def _connection_tuple(connections: Iterable[Connection]) -> tuple[Connection, ...]:
    return connections if type(connections) is tuple else tuple(connections)


@attrs.frozen(kw_only=True)
class RecipientFacts:
    """What one person brings to a decision.

    Args:
        allowed: the host's answer to "may this person read this thread now" or, for
            threadless kinds, "is this person an active human and the audience" (D2).
        author: the person wrote the event (D1).
        run_starter: the person started the run (D1, run kinds).
        level: the seven level facts (L3); required for message, mention, dm, run_done and
            run_failed.
        user_time_zone: the person's IANA zone for quiet rules without one.
        quiet_rules: the person's quiet-hours rules.
        switches: the person's own switches.
        devices: the person's active devices (kept ordered by id).
        connections: live connections; those of unknown devices are ignored (D5).
        window_end: the end of the person's open window on the thread, if any (D6).
    """

    allowed: bool
    author: bool = False
    run_starter: bool = False
    level: LevelFacts | None = None
    user_time_zone: str | None = None
    quiet_rules: tuple[QuietRule, ...] = attrs.field(default=(), converter=_rule_tuple)
    switches: Switches = Switches()
    devices: tuple[Device, ...] = attrs.field(default=(), converter=_sorted_devices)
    connections: tuple[Connection, ...] = attrs.field(default=(), converter=_connection_tuple)
    window_end: datetime | None = attrs.field(default=None, validator=_optional_instant)
    # Derived on first use, then kept: most recipients of a fan-out end before D5 and D7, and
    # a host that decides many hints for one set of facts pays the derivation once.
    _zone_cache: tzinfo | None = attrs.field(init=False, default=None, eq=False, repr=False)
    _routes_cache: tuple[Route, ...] | None = attrs.field(
        init=False, default=None, eq=False, repr=False
    )

    @property
    def _zone(self) -> tzinfo:
        zone = self._zone_cache
        if zone is None:
            zone = zone_or_utc(self.user_time_zone)
            object.__setattr__(self, "_zone_cache", zone)
        return zone

    @property
    def _push_routes(self) -> tuple[Route, ...]:
        routes = self._routes_cache
        if routes is None:
            routes = tuple(device._push_route for device in self.devices)
            object.__setattr__(self, "_routes_cache", routes)
        return routes


_set_routes_cache = _slot_setter(RecipientFacts, "_routes_cache")
_push_route_of: Callable[[Device], Route] = operator.attrgetter("_push_route")


@attrs.frozen(kw_only=True)
class FlushState:
    """What a window collected, at its end (D8).

    Args:
        collected: how many ``message`` hints the window collected.
        unread: unread messages of the thread for the person now.

    Raises:
        InvalidFacts: a negative count (code ``invalid_count``).
    """

    collected: int
    unread: int

    def __attrs_post_init__(self) -> None:
        for name in ("collected", "unread"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise InvalidFacts("invalid_count", f"{name} must be >= 0: {value!r}", f"/{name}")


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
    return _new_send(routes, quiet, opens)  # type: ignore[arg-type]


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
        append(send)
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
    return Send(
        routes=routes,  # type: ignore[arg-type]
        quiet=quiet,
        opens_window_until=event._window_until,
        count=state.unread,
    )


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
    return Send(routes=(Route(device=device, via=Via.PUSH),), quiet=quiet)


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
    if ends:
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
    if isinstance(decision, Send):
        step("D7", "quiet hours", _quiet_reading(event, person, kind, decision.quiet))
    return Explanation(steps=tuple(steps), decision=decision)


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
