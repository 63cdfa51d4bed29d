"""The values `notify_core.hints.decide` reads and returns (rules D1-D11).

In: `EventFacts`, shared by every recipient of one hint, and `RecipientFacts`, one per person
(with `Device`, `Connection`, `Switches` and the `Policy`); `FlushState` at a window's end.
Out: one `Decision` per person, `Skip` (with its `SkipReason`), `Collect` or `Send` (with its
`Route`s). Validation happens at construction, so every value `decide` gets is decidable.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Final

import attrs

from notify_core.hints.levels import Level, LevelFacts
from notify_core.hints.quiet import QuietRule
from notify_core.values.errors import InvalidFacts
from notify_core.values.instants import require_instant
from notify_core.values.kinds import THREAD_KINDS, Kind, parse_kind
from notify_core.values.record_rules import RecordInEffect
from notify_core.values.zones import zone_or_utc

__all__ = [
    "LEVEL_GATE",
    "METRIC_REASONS",
    "MOBILE",
    "SWITCH_KINDS",
    "Collect",
    "Connection",
    "Decision",
    "Device",
    "EventFacts",
    "FlushState",
    "Platform",
    "Policy",
    "RecipientFacts",
    "Route",
    "Send",
    "Skip",
    "SkipReason",
    "Switches",
    "Via",
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
    # M2-M4: the record in effect left the hint no route.
    SUSPENDED = "suspended"
    RECORD_CHANNEL_OFF = "record_channel_off"
    FREQUENCY_CAP = "frequency_cap"


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
    SkipReason.SUSPENDED: "preference",
    SkipReason.RECORD_CHANNEL_OFF: "preference",
    SkipReason.FREQUENCY_CAP: "preference",
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

#: The kinds whose decision reads a person's `Switches`: ``admin`` (D3's admin switch) and
#: ``input_needed`` (D7's exemption). Another kind decides the same whatever the switches
#: are, so a fan-out of it need not read them (tests/core/hints/test_decide_switches.py).
SWITCH_KINDS: Final = frozenset({Kind.ADMIN, Kind.INPUT_NEEDED})


def _instant(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if type(value) is not datetime or value.tzinfo is not UTC:
        require_instant(value, attribute.name)


def _optional_instant(_inst: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    # A datetime in UTC is an instant (the usual value: the stores keep their times in UTC);
    # anything else gets the full check. A fan-out builds facts for every recipient.
    if value is not None and (type(value) is not datetime or value.tzinfo is not UTC):
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
        record: the preference id of the record that governed a send with a push route
            (M6); absent where none did.
    """

    routes: tuple[Route, ...]
    quiet: bool
    opens_window_until: datetime | None = None
    count: int | None = None
    record: str | None = None


Decision = Skip | Collect | Send


def _slot_setter(cls: type, name: str) -> Callable[[object, object], None]:
    setter: Callable[[object, object], None] = cls.__dict__[name].__set__
    return setter


_new_object = object.__new__
_send_routes = _slot_setter(Send, "routes")
_send_quiet = _slot_setter(Send, "quiet")
_send_opens = _slot_setter(Send, "opens_window_until")
_send_count = _slot_setter(Send, "count")
_send_record = _slot_setter(Send, "record")


def _new_send(routes: tuple[Route, ...], quiet: bool, opens: datetime | None) -> Send:
    """``Send(routes=routes, quiet=quiet, opens_window_until=opens)``, made in a third of the time.

    attrs' keyword ``__init__`` of a frozen class costs about 1 us, a quarter of a whole
    decision; Send has no converter nor validator, so setting its slots directly is the same
    value (tests/core/hints/test_decide.py checks the two agree field by field). Measured
    (cachegrind): with the keyword ``__init__`` here and in `decide_all`'s inlined copy, the
    fan-out of bench/bench_core.py runs 19 % more instructions (450 M -> 537 M for 30,000
    people), a replay 0.5 %.
    """
    send: Send = _new_object(Send)
    _send_routes(send, routes)
    _send_quiet(send, quiet)
    _send_opens(send, opens)
    _send_count(send, None)
    _send_record(send, None)
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
    # Speed device (`checked` through slot setters, 1.32 % alone): the replay's line path, kept as
    # one group: its 13 devices together are 12.2 % of the
    # replay's instructions (cachegrind, 25,000-event synthetic log; docs/decisions.md 2026-12-06)
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
        both tasks of a partitioned replay build one for the same event
        (tests/core/hints/test_decide.py
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
        record: the person's preference record in effect at ``now`` (M1), read by the last
            step (M2-M4); ``None`` when none is.
        pushes_today: push deliveries to the person so far in the person's local day of
            ``now`` (M4); read only when the record caps push.
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
    record: RecordInEffect | None = None
    pushes_today: int = 0
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
_RECIPIENT_SLOTS: Final = tuple(
    _slot_setter(RecipientFacts, field.name) for field in attrs.fields(RecipientFacts)
)


def new_recipient_facts(
    allowed: bool,
    run_starter: bool,
    level: LevelFacts | None,
    user_time_zone: str | None,
    quiet_rules: tuple[QuietRule, ...],
    switches: Switches,
    devices: tuple[Device, ...],
    connections: tuple[Connection, ...],
    window_end: datetime | None,
    record: RecordInEffect | None = None,
    pushes_today: int = 0,
) -> RecipientFacts:
    """``RecipientFacts(...)`` of a non-author (positional), made in about half the time.

    A pipeline builds one for each person who passes D1-D3, and due work one per flush and
    release: attrs' keyword ``__init__`` of a frozen class sets each slot through
    ``object.__setattr__`` by name. The converters and the validator run as there (the
    same value: tests/core/hints/test_decision_values_fast.py). Measured: the keyword
    ``__init__`` in its place costs a replay 2.1 % more instructions (cachegrind, the
    25,000-event synthetic log: 5,845 M -> 5,965 M).
    """
    facts: RecipientFacts = _new_object(RecipientFacts)
    if window_end is not None:
        require_instant(window_end, "window_end")
    (
        set_allowed,
        set_author,
        set_starter,
        set_level,
        set_zone,
        set_rules,
        set_switches,
        set_devices,
        set_connections,
        set_window,
        set_record,
        set_pushes_today,
        set_zone_cache,
        set_routes_cache,
    ) = _RECIPIENT_SLOTS
    set_allowed(facts, allowed)
    set_author(facts, False)
    set_starter(facts, run_starter)
    set_level(facts, level)
    set_zone(facts, user_time_zone)
    set_rules(facts, quiet_rules if type(quiet_rules) is tuple else tuple(quiet_rules))
    set_switches(facts, switches)
    set_devices(facts, _sorted_devices(devices))
    set_connections(facts, connections if type(connections) is tuple else tuple(connections))
    set_window(facts, window_end)
    set_record(facts, record)
    set_pushes_today(facts, pushes_today)
    set_zone_cache(facts, None)
    set_routes_cache(facts, None)
    return facts


if [field.name for field in attrs.fields(RecipientFacts)] != [
    "allowed", "author", "run_starter", "level", "user_time_zone", "quiet_rules", "switches",
    "devices", "connections", "window_end", "record", "pushes_today", "_zone_cache",
    "_routes_cache",
] or [f.name for f in attrs.fields(RecipientFacts) if f.converter or f.validator] != [
    "quiet_rules", "devices", "connections", "window_end",
]:  # fmt: skip
    raise AssertionError("new_recipient_facts sets every field of RecipientFacts: keep in step")
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
