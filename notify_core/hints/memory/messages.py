"""`MemoryMessages`: the messages part of the in-memory `notify_core.hints.ports.WorldFacts`.

What the messages of the log leave behind: read positions (B3), mentions (B2), the run
anchors and system messages that never count (B1a), and agent runs (S2, S3), learnt from
``message.created``, ``run.state_changed`` and ``read_state.updated``. `MemoryWorld`
answers the port's questions about them from it.
"""

from __future__ import annotations

import bisect

import attrs

from notify_core.events.log import Event
from notify_core.hints.ports import ThreadInfo
from notify_core.hints.slots import positional
from notify_core.values.kinds import RunState, run_active

__all__ = ["MemoryMessages"]

#: ``ThreadInfo(id=..., channel=..., main=..., last_message_seq=..., unread_floor_seq=...,
#: newest_message=...)``, the fields in the order of the class. Once per message: by keyword,
#: a replay runs 0.44 % more instructions.
_new_thread_info = positional(ThreadInfo)


@attrs.define
class _Run:
    agent: str = ""
    state: RunState | None = None
    anchor_seq: int = 0
    thread: str = ""
    anchored: bool = False


@attrs.define
class MemoryMessages:
    """Read positions, mentions and agent runs of one replay, in memory.

    Its handlers (``_on_*``) are applied by `MemoryWorld.record`.

    Args:
        threads: the world's threads; a message moves its thread's positions
            (``last_message_seq``, ``newest_message``) here.
        read: the read positions by (person, thread).
        mentions: per (person, thread), the ascending positions of the mentions of them.
        uncounted: per thread, the ascending positions of its run anchors and system
            messages (B1a).
        anchors: per thread, the run of its newest run anchor.
        runs: the agent runs by id.
        agent_messages: per (thread, agent), the agent's newest message and its position.
    """

    threads: dict[str, ThreadInfo] = attrs.field(factory=dict, repr=False)
    read: dict[tuple[str, str], int] = attrs.field(factory=dict)
    mentions: dict[tuple[str, str], list[int]] = attrs.field(factory=dict)
    uncounted: dict[str, list[int]] = attrs.field(factory=dict)
    anchors: dict[str, str] = attrs.field(factory=dict)
    runs: dict[str, _Run] = attrs.field(factory=dict)
    agent_messages: dict[tuple[str, str], tuple[str, int]] = attrs.field(factory=dict)
    #: Per person, the threads that mention them (derived; the badge's candidates read it).
    mentioned: dict[str, set[str]] = attrs.field(factory=dict, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        # The derived index of what a store is given at construction (usually nothing).
        for user, thread in self.mentions:
            self.mentioned.setdefault(user, set()).add(thread)

    def read_seq(self, user: str, thread: str) -> int:
        """Return a person's read position in a thread (0 when never read)."""
        return self.read.get((user, thread), 0)

    def unread_mentions(self, user: str, thread: str, after: int | None = None) -> int:
        """Return how many mentions of a person in a thread lie after the read position
        (or after ``after`` instead) and the thread's unread floor."""
        seqs = self.mentions.get((user, thread))
        if not seqs:
            return 0
        info = self.threads.get(thread)
        position = self.read_seq(user, thread) if after is None else after
        floor = max(position, info.unread_floor_seq if info else 0)
        return len(seqs) - bisect.bisect_right(seqs, floor)

    def uncounted_between(self, thread: str, after: int, upto: int) -> int:
        """Return how many run anchors and system messages of a thread lie in (after, upto]."""
        seqs = self.uncounted.get(thread)
        if not seqs or upto <= after:
            return 0
        return bisect.bisect_right(seqs, upto) - bisect.bisect_right(seqs, after)

    def during_run(self, thread: str, agent: str) -> bool:
        """S2: the newest anchor in the thread is a run of this agent, last seen active."""
        run = self.runs.get(self.anchors.get(thread, ""))
        return (
            run is not None
            and run.agent == agent
            and run.state is not None
            and run_active(run.state)
        )

    def last_agent_message(self, run: str) -> tuple[str, int] | None:
        """S3: the run agent's newest message in the run's thread after the anchor."""
        info = self.runs.get(run)
        if info is None or not info.anchored:
            return None  # S3: a run without an anchor message points at its thread only
        last = self.agent_messages.get((info.thread, info.agent))
        return last if last is not None and last[1] > info.anchor_seq else None

    def _on_message_created(self, event: Event, p: dict[str, object]) -> None:
        # Every message of the log comes here in every replay (each task of a partitioned one
        # too): each member of the payload is read once.
        thread_id, seq, kind = str(p["thread"]), int(p["thread_seq"]), p["kind"]  # type: ignore[call-overload]
        author = str(p["author"])
        counted = kind != "run" and kind != "system"
        info = self.threads.get(thread_id)
        if info is not None and counted and seq >= info.last_message_seq:
            # Built through its slots (`attrs.evolve` looks the fields up again, the keyword
            # `__init__` sets each by name): once per message.
            self.threads[thread_id] = _new_thread_info(
                info.id, info.channel, info.main, seq, info.unread_floor_seq, str(p["message"])
            )
        if not counted:
            bisect.insort(self.uncounted.setdefault(thread_id, []), seq)  # B1a
        else:
            # B3: the author's own message moves their read position to it (never back).
            key = (author, thread_id)
            read = self.read
            if read.get(key, 0) < seq:
                read[key] = seq
        if kind == "run" and "run" in p:
            run = self.runs.setdefault(str(p["run"]), _Run())
            run.anchor_seq, run.thread, run.anchored = seq, thread_id, True
            self.anchors[thread_id] = str(p["run"])
        elif p["origin"] == "agent" and kind in ("text", "voice", "card"):
            self.agent_messages[(thread_id, author)] = (str(p["message"]), seq)
        mention_ids = p.get("mention_ids")
        if mention_ids:
            for person in mention_ids:  # type: ignore[attr-defined]
                if person != author:
                    bisect.insort(self.mentions.setdefault((str(person), thread_id), []), seq)
                    self.mentioned.setdefault(str(person), set()).add(thread_id)

    def _on_run_state_changed(self, event: Event, p: dict[str, object]) -> None:
        run = self.runs.setdefault(str(p["run"]), _Run(thread=str(p["thread"])))
        run.agent, run.state = str(p["agent"]), RunState(str(p["state"]))
        if not run.thread:
            run.thread = str(p["thread"])

    def _on_read_state_updated(self, event: Event, p: dict[str, object]) -> None:
        self.read[(str(event.audience), str(p["thread"]))] = int(p["last_read_seq"])  # type: ignore[call-overload]
