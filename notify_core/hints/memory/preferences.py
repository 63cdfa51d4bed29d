"""`MemoryPreferences`: the in-memory twin of `notify_core.hints.ports.PreferenceFacts`.

People's preference rows (L3), quiet rules and personal settings, learnt from the log
(``notification_pref.updated``, ``quiet_hours.updated``, ``settings.updated``), with the
indexes that let a fan-out read the rows of its thread, channel and space once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import attrs

from notify_core.events.log import Event, EventError
from notify_core.hints.decide import Switches
from notify_core.hints.levels import Level, LevelFacts, Preference, parse_level
from notify_core.hints.ports import ChannelInfo, ThreadInfo
from notify_core.hints.quiet import QuietRule, rule_from_json
from notify_core.values.instants import parse_instant

__all__ = ["DEFAULT_LEVEL_KEY", "MemoryPreferences"]

#: The setting that holds a person's own default level (L3).
DEFAULT_LEVEL_KEY: Final = "notify.default_level"
#: The row that automatic following inserts (S5); rows are values, so one serves all.
_FOLLOWED = Preference(level=Level.ALL)
_NO_ROWS: dict[str, Preference] = {}
#: At most this many kept LevelFacts of people who differ (about 0.12 MiB with their keys; the
#: 200,000-event log meets about 750 distinct ones, and rebuilds 8,700 with this bound).
_BUILT_CAP: Final = 512
_Row = Preference | None
#: What a person's LevelFacts are made of: rows on the thread, channel and space, their own
#: default ("" for none), the channel's default, whether it is direct, the instance default.
_LevelKey = tuple[_Row, _Row, _Row, str, str | None, bool, Level]


@attrs.define
class MemoryPreferences:
    """People's preferences of one replay, in memory (`notify_core.hints.ports.PreferenceFacts`).

    Args:
        instance_default: the last fact of the L3 chain for everyone.
        rows: the preference rows by (person, target kind, target id).
        rules: the quiet rules by person.
        settings: the personal settings by (person, key).
        threads: the world's threads (read only: a thread's channel and space).
        channels: the world's channels (read only: their defaults and kinds).
    """

    instance_default: Level = Level.MENTIONS
    rows: dict[tuple[str, str, str], Preference] = attrs.field(factory=dict)
    rules: dict[str, tuple[QuietRule, ...]] = attrs.field(factory=dict)
    settings: dict[tuple[str, str], object] = attrs.field(factory=dict)
    threads: Mapping[str, ThreadInfo] = attrs.field(factory=dict, repr=False)
    channels: Mapping[str, ChannelInfo] = attrs.field(factory=dict, repr=False)
    #: The rows by person, by (target kind, target id): the badge's candidates read them.
    rows_of: dict[str, dict[tuple[str, str], Preference]] = attrs.field(
        factory=dict, init=False, repr=False
    )
    #: The personal defaults of `settings` by person (L3; the badge's candidates read them).
    personal: dict[str, object] = attrs.field(factory=dict, init=False, repr=False)
    # Derived indexes, kept by the handlers, `follow` and `set_row` only. `rows` by what they are
    # on: a fan-out reads the rows of its thread, channel and space once, and everyone with
    # neither a row there nor a default of their own shares one LevelFacts value per channel
    # kind.
    _rows_at: dict[tuple[str, str], dict[str, Preference]] = attrs.field(
        factory=dict, init=False, repr=False
    )
    _switches: dict[str, Switches] = attrs.field(factory=dict, init=False, repr=False)
    _shared_levels: dict[tuple[str | None, bool, Level], LevelFacts] = attrs.field(
        factory=dict, init=False, repr=False
    )
    # The LevelFacts of those who differ by their facts (rows are values: equal rows give
    # equal facts), kept across fan-outs: the same rows meet again thread after thread
    # (automatic following shares one row). Cleared when full, to bound the memory.
    _built_levels: dict[_LevelKey, LevelFacts] = attrs.field(factory=dict, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        # The derived indexes of what a store is given at construction (usually nothing).
        for (user, kind, target), row in self.rows.items():
            self._rows_at.setdefault((kind, target), {})[user] = row
            self.rows_of.setdefault(user, {})[(kind, target)] = row
        for (user, key), value in self.settings.items():
            self._update_switches(user)
            if key == DEFAULT_LEVEL_KEY:
                self.personal[user] = value

    def level_facts(self, thread: str, users: Sequence[str]) -> dict[str, LevelFacts]:
        """Return the L3 facts of many people for one thread."""
        shared, differ = self.level_facts_split(thread, users)
        out = dict.fromkeys(users, shared)
        out.update(differ)
        return out

    def level_facts_of(self, thread: str, user: str) -> LevelFacts:
        """Return `level_facts` of one person: due work (a flush, a release) and the badge
        read one person at a time, and need no sets or dicts of many."""
        shared, channel_id, space, default, direct = self._place(thread)
        rows = self.rows
        row_thread = rows.get((user, "thread", thread))
        row_channel = rows.get((user, "channel", channel_id))
        row_space = rows.get((user, "space", space))
        personal = self.personal.get(user)
        if personal is None and row_thread is None and row_channel is None and row_space is None:
            return shared
        return self._differing(row_thread, row_channel, row_space, personal, default, direct)

    def _place(self, thread: str) -> tuple[LevelFacts, str, str, str | None, bool]:
        """The facts a thread gives everyone: the value of those without a row here or a
        default of their own, the channel and space ids ("" when unknown), the channel's
        default and whether it is direct."""
        info = self.threads.get(thread)
        channel = self.channels.get(info.channel) if info is not None else None
        channel_id = channel.id if channel is not None else ""
        space = channel.space if channel is not None and channel.space else ""
        default = channel.default_level if channel is not None else None
        direct = channel is not None and channel.direct
        key = (default, direct, self.instance_default)
        shared = self._shared_levels.get(key)
        if shared is None:  # the value of everyone without a row here or a default of their own
            shared = self._shared_levels[key] = LevelFacts(
                channel_default=default,
                direct_message=direct,
                instance_default=self.instance_default,
            )
        return shared, channel_id, space, default, direct

    def _differing(
        self,
        row_thread: Preference | None,
        row_channel: Preference | None,
        row_space: Preference | None,
        personal: object,
        default: str | None,
        direct: bool,
    ) -> LevelFacts:
        """The LevelFacts of one who differs, from `_built_levels` when kept there."""
        instance = self.instance_default
        built = self._built_levels
        same = None
        # A stored default that is not text (bad data) is not shared: built each time.
        if personal is None or type(personal) is str:
            same = (row_thread, row_channel, row_space, personal or "", default, direct, instance)
            facts = built.get(same)
            if facts is not None:
                return facts
        facts = LevelFacts(
            thread=row_thread,
            channel=row_channel,
            space=row_space,
            channel_default=default,
            direct_message=direct,
            personal_default=personal,
            instance_default=instance,
        )
        if same is not None:
            if len(built) >= _BUILT_CAP:
                built.clear()
            built[same] = facts
        return facts

    def level_facts_split(
        self, thread: str, users: Sequence[str]
    ) -> tuple[LevelFacts, dict[str, LevelFacts]]:
        """Return `level_facts` as the value most of ``users`` share and the few whose value
        differs (a row here or a default of their own): a fan-out reads those one by one
        and the others as one (`notify_core.hints.fan_out.gate_shared`)."""
        shared, channel_id, space, default, direct = self._place(thread)
        people = set(users)
        differ: dict[str, LevelFacts] = {}
        rows_at, personal_of = self._rows_at, self.personal
        on_thread = rows_at.get(("thread", thread), _NO_ROWS)
        on_channel = rows_at.get(("channel", channel_id), _NO_ROWS)
        on_space = rows_at.get(("space", space), _NO_ROWS)
        # Only the people with a row here or a default of their own differ from `shared`
        # (key views intersect in C, walking the smaller side).
        special: set[str] = set()
        for held in (on_thread, on_channel, on_space, personal_of):
            if held:
                special |= held.keys() & people
        # People with the same rows here and the same default of their own share one value.
        built, differing, instance = self._built_levels, self._differing, self.instance_default
        for user in special:
            row_thread = on_thread.get(user)
            row_channel = on_channel.get(user)
            row_space = on_space.get(user)
            personal = personal_of.get(user)
            if (
                personal is None
                and row_thread is None
                and row_channel is None
                and row_space is None
            ):
                continue
            # The kept value looked up here first: a call per person costs (`_differing`).
            facts = (
                built.get(
                    (row_thread, row_channel, row_space, personal or "", default, direct, instance)
                )
                if personal is None or type(personal) is str
                else None
            )
            if facts is None:
                facts = differing(row_thread, row_channel, row_space, personal, default, direct)
            differ[user] = facts
        return shared, differ

    def quiet_rules(self, users: Sequence[str]) -> dict[str, tuple[QuietRule, ...]]:
        """Return the quiet rules of many people."""
        rules = self.rules
        return {user: rules[user] for user in rules.keys() & users}

    def switches(self, users: Sequence[str]) -> dict[str, Switches]:
        """Return the switches of many people; a stored non-boolean counts as unset."""
        known = self._switches
        if not known:
            return {}
        return {user: known[user] for user in known.keys() & users}

    def follow(self, user: str, thread: str) -> bool:
        """S5: insert a row ``all`` for the thread unless the person has one."""
        key = (user, "thread", thread)
        if key in self.rows:
            return False
        self.set_row(key, _FOLLOWED)
        return True

    def set_row(self, key: tuple[str, str, str], row: Preference | None) -> None:
        """Write or (``None``) delete a row, in `rows` and in the indexes.

        Args:
            key: (person, target kind, target id).
            row: the new row, or ``None`` to delete the row.
        """
        user, kind, target = key
        if row is not None:
            self.rows[key] = row
            self._rows_at.setdefault((kind, target), {})[user] = row
            self.rows_of.setdefault(user, {})[(kind, target)] = row
        else:
            self.rows.pop(key, None)
            mine = self.rows_of.get(user)
            if mine is not None:
                mine.pop((kind, target), None)
                if not mine:
                    del self.rows_of[user]
            here = self._rows_at.get((kind, target))
            if here is not None:
                here.pop(user, None)
                if not here:
                    del self._rows_at[(kind, target)]

    def _update_switches(self, user: str) -> None:
        admin = self.settings.get((user, "notify.admin_enabled"))
        breaks = self.settings.get((user, "notify.input_needed_breaks_quiet_hours"))
        if admin is not None or breaks is not None:
            self._switches[user] = Switches(
                admin_enabled=admin if isinstance(admin, bool) else None,
                input_needed_breaks_quiet_hours=breaks if isinstance(breaks, bool) else None,
            )
        else:
            self._switches.pop(user, None)

    def _on_notification_pref_updated(self, event: Event, p: dict[str, object]) -> None:
        pref = p["preference"]
        assert isinstance(pref, dict)
        target = pref.get("target")
        if not isinstance(target, dict) or target.get("kind") not in ("space", "channel", "thread"):
            raise EventError(
                "invalid_member", "preference.target must be {kind, id}", "/payload/preference"
            )
        key = (str(event.audience), str(target["kind"]), str(target.get("id")))
        if p.get("deleted"):
            self.set_row(key, None)
            return
        try:
            level = parse_level(pref.get("level"), "/payload/preference/level")
            until = pref.get("muted_until")
            muted = (
                None if until is None else parse_instant(until, "/payload/preference/muted_until")
            )
        except EventError:
            raise
        except Exception as error:  # NotifyError: re-raised as an event error below
            code = getattr(error, "code", "invalid_member")
            raise EventError(code, str(error), getattr(error, "pointer", None)) from None
        self.set_row(key, Preference(level=level, muted_until=muted))

    def _on_quiet_hours_updated(self, event: Event, p: dict[str, object]) -> None:
        raw = p["rules"]
        assert isinstance(raw, list)
        rules = []
        for index, rule in enumerate(raw):
            try:
                rules.append(rule_from_json(rule))
            except Exception as error:
                code = getattr(error, "code", "invalid_member")
                pointer = f"/payload/rules/{index}" + (getattr(error, "pointer", None) or "")
                message = getattr(error, "message", None) or str(error)  # without code
                raise EventError(code, message, pointer) from None
        self.rules[str(event.audience)] = tuple(rules)

    def _on_settings_updated(self, event: Event, p: dict[str, object]) -> None:
        key = (str(event.audience), str(p["key"]))
        if p.get("deleted") or "value" not in p:
            self.settings.pop(key, None)
            if key[1] == DEFAULT_LEVEL_KEY:
                self.personal.pop(key[0], None)
        else:
            self.settings[key] = p["value"]
            if key[1] == DEFAULT_LEVEL_KEY:
                self.personal[key[0]] = p["value"]
        self._update_switches(key[0])
