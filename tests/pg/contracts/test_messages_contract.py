"""The contract of the messages part of `WorldFacts`, on both twins.

What the messages of the log leave behind: read positions (B3), unread mentions (B2), run
anchors and system messages that never count (B1a), agent runs (S2, S3). The memory twin keeps
them in `notify_core.hints.memory.messages.MemoryMessages`; PostgreSQL reads them from the
reference host's tables or from ``event_log`` (`notify_pg.push.world.PgWorld`), as due work
and as a consumer round handling an event do (the ``world_twin`` fixture gives all three).
"""

from __future__ import annotations

from hint_twins import Twin
from pgpipeline import Log


def team() -> Log:
    """Alex, Sam, Robin, Owner and the agent Lotse; space s, channel c, threads c-main and t."""
    return Log().team()


# --- read positions (B3) -------------------------------------------------------------------


def test_b3_a_read_position_is_zero_until_read_and_for_unknown_ids(world_twin: Twin) -> None:
    world_twin.feed(team().events)
    world = world_twin.world()
    assert world.read_seq("alex", "t") == 0
    assert world.read_seq("ghost", "t") == 0
    assert world.read_seq("alex", "t-unknown") == 0


def test_b3_a_read_state_sets_the_position_even_back_and_per_thread(world_twin: Twin) -> None:
    """``read_state.updated`` sets a person's position in one thread; a later one that goes
    back (a mark as unread) sets it back; other people and threads keep theirs."""
    log = team()
    for seq in (1, 2, 3):
        log.at(seq).msg(f"m{seq}", "owner", seq=seq)
    log.read("alex", "t", 3).read("alex", "t", 1).read("sam", "t", 2)
    world_twin.feed(log.events)
    world = world_twin.world()
    assert (world.read_seq("alex", "t"), world.read_seq("sam", "t")) == (1, 2)
    assert world.read_seq("alex", "c-main") == 0


def test_b3_an_own_message_moves_the_read_position_up_to_it(world_twin: Twin) -> None:
    """A person's own message is read by them: their position moves up to it (never down:
    Robin's read of 3 stays over their own older message 2); a read after it sets the
    position as any read does."""
    log = team()
    log.at(1).msg("m1", "owner", seq=1).msg("m2", "sam", seq=2).msg("m3", "robin", seq=3)
    log.read("sam", "t", 1)
    log.read("robin", "t", 4).msg("m4", "alex", seq=4).msg("m5", "robin", seq=5)
    log.read("alex", "t", 5).msg("m6", "alex", seq=6)
    world_twin.feed(log.events)
    world = world_twin.world()
    got = {who: world.read_seq(who, "t") for who in ("sam", "robin", "alex", "owner")}
    assert got == {"sam": 1, "robin": 5, "alex": 6, "owner": 1}


def test_b1a_run_anchors_and_system_messages_move_no_read_position(world_twin: Twin) -> None:
    """B1a: an agent's run anchor and a system message are not read by their author: they
    never count, so they move nobody's position."""
    log = team()
    log.at(1).msg("anchor", "lotse", seq=1, kind="run", origin="agent", run="r1")
    log.msg("sys", "owner", seq=2, kind="system", origin="system")
    log.msg("m3", "lotse", seq=3, origin="agent")
    world_twin.feed(log.events)
    world = world_twin.world()
    assert world.read_seq("owner", "t") == 0
    assert world.read_seq("lotse", "t") == 3


# --- unread mentions (B2) -----------------------------------------------------------------


def test_b2_mentions_after_the_read_position_are_unread(world_twin: Twin) -> None:
    """Mentions of a person count while they lie after the person's read position; the
    author's mention of themselves never counts; other people's mentions are theirs."""
    log = team()
    log.at(1).msg("m1", "owner", seq=1, mention_ids=["alex", "sam"])
    log.msg("m2", "owner", seq=2, mention_ids=["alex"])
    log.msg("m3", "alex", seq=3, mention_ids=["alex"])  # self-mention
    log.msg("m4", "owner", seq=4, mention_ids=["alex"])
    log.read("sam", "t", 1)
    world_twin.feed(log.events)
    world = world_twin.world()
    # Alex's own message 3 moved their position to 3 (B3): only message 4 is unread.
    assert world.unread_mentions("alex", "t") == 1
    assert world.unread_mentions("sam", "t") == 0
    assert world.unread_mentions("robin", "t") == 0
    assert world.unread_mentions("alex", "c-main") == 0
    assert world.unread_mentions("alex", "t-unknown") == 0


def test_b2_after_counts_the_mentions_a_read_would_leave(world_twin: Twin) -> None:
    """``after`` replaces the person's own position: how many mentions a read up to it would
    leave unread (B2's "read past the last unread mention")."""
    log = team()
    for seq in (1, 2, 3, 4):
        log.at(seq).msg(f"m{seq}", "owner", seq=seq, mention_ids=["sam"] if seq % 2 else [])
    world_twin.feed(log.events)
    world = world_twin.world()
    assert [world.unread_mentions("sam", "t", after) for after in (0, 1, 2, 3, 4)] == [
        2,
        1,
        1,
        0,
        0,
    ]
    assert world.unread_mentions("sam", "t") == 2


# --- uncounted messages (B1a, D8) ---------------------------------------------------------


def test_b1a_uncounted_between_counts_anchors_and_system_messages_in_the_range(
    world_twin: Twin,
) -> None:
    """Run anchors and system messages with a position in (after, upto] of one thread: the
    lower bound excluded, the upper included, an empty range none, other threads apart."""
    log = team()
    log.at(1).msg("m1", "owner", seq=1)
    log.msg("anchor", "lotse", seq=2, kind="run", origin="agent", run="r1")
    log.msg("m3", "lotse", seq=3, origin="agent")
    log.msg("sys", "owner", seq=4, kind="system", origin="system")
    log.msg("main-sys", "owner", thread="c-main", seq=1, kind="system", origin="system")
    world_twin.feed(log.events)
    world = world_twin.world()
    assert world.uncounted_between("t", 0, 4) == 2
    assert world.uncounted_between("t", 2, 4) == 1  # 2 excluded
    assert world.uncounted_between("t", 1, 2) == 1  # 2 included
    assert world.uncounted_between("t", 4, 4) == 0
    assert world.uncounted_between("t", 4, 1) == 0
    assert world.uncounted_between("c-main", 0, 9) == 1
    assert world.uncounted_between("t-unknown", 0, 9) == 0


def test_b1a_only_counted_messages_move_a_threads_newest_message(world_twin: Twin) -> None:
    """A thread's ``last_message_seq`` and ``newest_message`` follow its counted messages:
    silent and imported ones included, run anchors and system messages not."""
    log = team()
    log.at(1).msg("m1", "owner", seq=1)
    log.msg("m2", "owner", seq=2, silent=True)
    log.msg("m3", "owner", seq=3, origin="import")
    log.msg("anchor", "lotse", seq=4, kind="run", origin="agent", run="r1")
    log.msg("sys", "owner", seq=5, kind="system", origin="system")
    world_twin.feed(log.events)
    info = world_twin.world().thread("t")
    assert info is not None
    assert (info.last_message_seq, info.newest_message) == (3, "m3")


# --- runs (S2, S3) ------------------------------------------------------------------------


def test_s2_a_message_is_during_a_run_of_its_agent_while_the_newest_anchor_is_active(
    world_twin: Twin,
) -> None:
    """S2 (K3): the newest run anchor of the thread belongs to a run of this agent whose last
    state change is active (queued, running, waiting_input); not for another agent, not in
    another thread, not once the run ended."""
    log = team()
    world_twin.feed(log.events)
    assert not world_twin.world().during_run("t", "lotse")  # no anchor
    log = Log()
    log.at(10).msg("anchor", "lotse", seq=1, kind="run", origin="agent", run="r1")
    log.run("r1", "queued")
    world_twin.feed(log.events[:2])
    world = world_twin.world()
    assert world.during_run("t", "lotse")
    assert not world.during_run("t", "other-agent")
    assert not world.during_run("c-main", "lotse")
    states = []
    for state in ("running", "waiting_input", "completed"):
        world_twin.feed([Log().run("r1", state).events[0]])
        states.append(world_twin.world().during_run("t", "lotse"))
    assert states == [True, True, False]


def test_s2_only_the_newest_anchor_of_the_thread_counts(world_twin: Twin) -> None:
    """An older run still active does not make a message during a run once a newer anchor
    of an ended run follows it."""
    log = team()
    log.at(1).msg("a1", "lotse", seq=1, kind="run", origin="agent", run="r1")
    log.run("r1", "running")
    log.msg("a2", "lotse", seq=2, kind="run", origin="agent", run="r2")
    log.run("r2", "running").run("r2", "failed")
    world_twin.feed(log.events)
    assert not world_twin.world().during_run("t", "lotse")


def test_s3_the_last_agent_message_of_a_run_lies_after_its_anchor(world_twin: Twin) -> None:
    """S3: the run agent's newest text, voice or card message in the run's thread after the
    anchor, with its position; nothing before the first such message, for a run without an
    anchor, an unknown run, or messages of others."""
    log = team()
    log.at(1).msg("before", "lotse", seq=1, origin="agent")
    log.msg("anchor", "lotse", seq=2, kind="run", origin="agent", run="r1")
    log.run("r1", "running")
    log.msg("human", "alex", seq=3)
    log.msg("sys", "lotse", seq=4, kind="system", origin="agent")
    world_twin.feed(log.events)
    assert world_twin.world().last_agent_message("r1") is None
    later = Log()
    later.at(5).msg("a1", "lotse", seq=5, origin="agent").msg("a2", "lotse", seq=6, origin="agent")
    later.msg("elsewhere", "lotse", thread="c-main", seq=1, origin="agent")
    world_twin.feed(later.events)
    world = world_twin.world()
    assert world.last_agent_message("r1") == ("a2", 6)
    assert world.last_agent_message("r-unknown") is None


def test_s3_a_run_without_an_anchor_message_points_at_nothing(world_twin: Twin) -> None:
    log = team()
    log.at(1).run("r9", "running")
    log.msg("a1", "lotse", seq=1, origin="agent")
    log.run("r9", "completed")
    world_twin.feed(log.events)
    assert world_twin.world().last_agent_message("r9") is None
