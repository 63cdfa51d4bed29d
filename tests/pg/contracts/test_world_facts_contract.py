"""The contract of `WorldFacts` (people, places, read rights, the badge's threads), on both twins.

The memory twin is `notify_core.hints.memory.world.MemoryWorld`, learning from the log; the
PostgreSQL twin is `notify_pg.push.world.PgWorld` on the reference host, whose tables the
loader writes from the same events. Devices and messages have suites of their own
(test_devices_contract.py, test_messages_contract.py).
"""

from __future__ import annotations

from hint_twins import Twin
from pgpipeline import Log

from notify_core.hints.ports import ChannelInfo, ThreadInfo, UserInfo


def grant(log: Log, user: str, kind: str, target: str, *, revoke: bool = False) -> Log:
    kind_of_event = "access.revoked" if revoke else "access.granted"
    return log.add(kind_of_event, {"user": user, "target": {"kind": kind, "id": target}})


def places() -> Log:
    """People: Alex (space grant), Sam (channel grant on c1), Robin (no grant), Owner (owner),
    Ina (inactive, space grant), Lotse (an agent, space grant), Dora and Eli in a DM.
    Places: space s with channels c1 and c2 (threads t1, t2), space s2 with channel c3
    (thread t3), DM channel d (thread td)."""
    log = Log()
    for user in ("alex", "sam", "robin", "dora", "eli"):
        log.user(user)
    log.user("owner", owner=True).user("ina", active=False).user("lotse", kind="agent")
    for space, channels in (("s", ("c1", "c2")), ("s2", ("c3",))):
        log.add("space.created", {"space": space})
        for channel in channels:
            log.add("channel.created", {"channel": channel, "space": space, "kind": "text"})
    log.add("channel.created", {"channel": "d", "kind": "dm", "participants": ["dora", "eli"]})
    for thread, channel in (("t1", "c1"), ("t2", "c2"), ("t3", "c3"), ("td", "d")):
        log.add("thread.created", {"thread": thread, "channel": channel, "main": False})
    for user in ("alex", "ina", "lotse"):
        grant(log, user, "space", "s")
    grant(log, "sam", "channel", "c1")
    return log


# --- people and places --------------------------------------------------------------------


def test_unknown_people_places_and_rights(world_twin: Twin) -> None:
    """Unknown ids are ``None`` (people, threads, channels), have no readers and no rights."""
    world_twin.feed(places().events)
    world = world_twin.world()
    assert world.user("ghost") is None
    assert world.thread("t-unknown") is None
    assert world.channel("c-unknown") is None
    assert list(world.readers("c-unknown")) == []
    assert not world.allowed("alex", "t-unknown")
    assert not world.allowed("ghost", "t1")


def test_s1_a_persons_kind_activity_and_zone_follow_their_events(world_twin: Twin) -> None:
    """S1: only active humans are candidates; ``user.updated`` changes what it names, keeps
    the rest, and removes a time zone named in ``unset`` (formats.md 4)."""
    log = Log().user("alex", time_zone="Europe/Berlin").user("bot", kind="agent")
    log.add("user.updated", {"user": "alex", "active": False})
    world_twin.feed(log.events)
    world = world_twin.world()
    alex = world.user("alex")
    assert alex == UserInfo(id="alex", kind="human", active=False, time_zone="Europe/Berlin")
    assert not alex.active_human
    bot = world.user("bot")
    assert bot is not None and not bot.active_human
    world_twin.feed(Log().add("user.updated", {"user": "alex", "unset": ["time_zone"]}).events)
    assert world_twin.world().user("alex") == UserInfo(id="alex", kind="human", active=False)


def test_channels_hold_their_space_kind_participants_default_and_archive(
    world_twin: Twin,
) -> None:
    """A channel's space (none for a DM), kind, DM participants, default level (set by
    ``channel.updated``, cleared by ``clear_default_notification_level``) and archive flag."""
    log = places()
    log.add("channel.updated", {"channel": "c1", "default_notification_level": "all"})
    log.add("channel.updated", {"channel": "c2", "default_notification_level": "mute"})
    log.add("channel.updated", {"channel": "c2", "clear_default_notification_level": True})
    log.add("channel.archived", {"channel": "c3"})
    world_twin.feed(log.events)
    world = world_twin.world()
    assert world.channel("c1") == ChannelInfo(id="c1", kind="text", space="s", default_level="all")
    assert world.channel("c2") == ChannelInfo(id="c2", kind="text", space="s")
    assert world.channel("c3") == ChannelInfo(id="c3", kind="text", space="s2", archived=True)
    dm = world.channel("d")
    assert dm == ChannelInfo(id="d", kind="dm", participants=("dora", "eli"))
    assert dm.direct


def test_threads_hold_their_channel_and_main_flag(world_twin: Twin) -> None:
    log = places().add("thread.created", {"thread": "c1-main", "channel": "c1", "main": True})
    world_twin.feed(log.events)
    world = world_twin.world()
    assert world.thread("c1-main") == ThreadInfo(id="c1-main", channel="c1", main=True)
    assert world.thread("t1") == ThreadInfo(id="t1", channel="c1")


# --- readers (S1) and read rights (D2) ----------------------------------------------------


def test_s1_readers_are_the_active_humans_with_access_ascending_each_once(
    world_twin: Twin,
) -> None:
    """S1: the readers of a channel are its grantees (space or channel), the owners and, for
    a DM, its participants: active humans only (no agent, nobody inactive), each once even
    with two grants, ascending by code point."""
    log = places()
    grant(log, "alex", "channel", "c1")  # a second way in
    log.user("Zed")
    grant(log, "Zed", "channel", "c1")  # upper case sorts first by code point
    world_twin.feed(log.events)
    world = world_twin.world()
    assert list(world.readers("c1")) == ["Zed", "alex", "owner", "sam"]
    assert list(world.readers("c2")) == ["alex", "owner"]
    assert list(world.readers("c3")) == ["owner"]
    assert list(world.readers("d")) == ["dora", "eli"]


def test_d2_rights_come_from_grants_owners_and_dm_participation(world_twin: Twin) -> None:
    """D2: a space grant reads every channel of the space, a channel grant only its channel,
    an owner every channel but DMs, a DM only its participants; an inactive person nothing;
    an agent with a grant may read (D2 is about rights, S1 about candidates)."""
    world_twin.feed(places().events)
    world = world_twin.world()
    people = ["alex", "sam", "robin", "owner", "ina", "lotse", "dora", "eli"]
    readable = {t: {p for p in people if world.allowed(p, t)} for t in ("t1", "t2", "t3", "td")}
    assert readable == {
        "t1": {"alex", "sam", "owner", "lotse"},
        "t2": {"alex", "owner", "lotse"},
        "t3": {"owner"},
        "td": {"dora", "eli"},
    }


def test_d2_a_revoked_grant_and_a_deactivated_person_read_nothing(world_twin: Twin) -> None:
    log = places()
    grant(log, "alex", "space", "s", revoke=True)
    grant(log, "sam", "channel", "c1", revoke=True)
    log.add("user.updated", {"user": "owner", "active": False})
    grant(log, "robin", "channel", "c2")
    world_twin.feed(log.events)
    world = world_twin.world()
    assert [p for p in ("alex", "sam", "owner", "robin") if world.allowed(p, "t2")] == ["robin"]
    assert not any(world.allowed(p, "t1") for p in ("alex", "sam", "owner"))
    assert list(world.readers("c1")) == []


def test_d2_an_archived_channel_or_space_is_read_by_nobody(world_twin: Twin) -> None:
    """D2: nobody may read a thread of an archived channel or of a channel in an archived
    space, not even an owner or a DM participant."""
    log = places()
    log.add("channel.archived", {"channel": "c1"})
    log.add("channel.archived", {"channel": "d"})
    log.add("space.archived", {"space": "s2"})
    world_twin.feed(log.events)
    world = world_twin.world()
    for thread in ("t1", "t3", "td"):
        assert not any(world.allowed(p, thread) for p in ("alex", "sam", "owner", "dora", "eli")), (
            thread
        )
    assert world.allowed("alex", "t2") and world.allowed("owner", "t2")


# --- the badge's threads (B1) -------------------------------------------------------------


def test_b1_badge_threads_are_readable_threads_with_messages_that_may_count(
    world_twin: Twin,
) -> None:
    """B1: at least every thread a person can read that holds messages and could count (an
    unread mention, level ``all``, a DM), each once; never a thread they cannot read or one
    without messages (a twin may list more readable threads: the pipeline checks each)."""
    log = places()
    log.add("channel.archived", {"channel": "c2"})
    log.add("thread.created", {"thread": "t1-empty", "channel": "c1", "main": False})
    log.add("thread.created", {"thread": "t1-b", "channel": "c1", "main": False})
    log.at(1).msg("m1", "owner", thread="t1", seq=1, mention_ids=["alex", "sam"])
    log.msg("m2", "owner", thread="t1-b", seq=1)
    log.msg("m3", "owner", thread="t2", seq=1, mention_ids=["alex"])
    log.msg("m4", "owner", thread="t3", seq=1, mention_ids=["alex"])
    log.msg("m5", "dora", thread="td", seq=1)
    log.pref("sam", "thread", "t1-b", "all")
    world_twin.feed(log.events)
    world = world_twin.world()
    readable = {
        "alex": {"t1", "t1-b"},
        "sam": {"t1", "t1-b"},
        "eli": {"td"},
        "dora": {"td"},
        "robin": set(),
        "ghost": set(),
    }
    must = {"alex": {"t1"}, "sam": {"t1", "t1-b"}, "eli": {"td"}, "dora": {"td"}}
    for person, allowed in readable.items():
        got = list(world.badge_threads(person))
        assert len(got) == len(set(got)), person
        assert must.get(person, set()) <= set(got) <= allowed, person
