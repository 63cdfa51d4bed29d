"""The candidates of a source event: its kind of hint and whom it may reach (S1-S4).

`classify` reads the world as it is before the event: who can read the channel, who is
mentioned, whether a run is under way. The pipeline (`notify_core.hints.pipeline`) decides for
each candidate's recipients.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import Final

import attrs

from notify_core.events.log import Event
from notify_core.hints.ports import WorldFacts
from notify_core.values.kinds import Kind, RunState

__all__ = ["Candidate", "Owns", "classify", "classify_for"]


@attrs.frozen(kw_only=True)
class Candidate:
    """The hints one source event gives: a kind, whom, and what it points at (S1-S4)."""

    kind: Kind
    recipients: tuple[str, ...]
    thread: str | None = None
    message: str | None = None
    message_seq: int = 0
    target: str | None = None
    exclude_device: str | None = None
    run_starter: str | None = None
    #: Every recipient is one of `WorldFacts.readers` of the thread's channel (S1's message
    #: candidates): a store that knows its readers may read the thread answers their read
    #: rights at once (`notify_core.hints.fan_out.read_rights`).
    from_readers: bool = False


_RUN_KIND: Final = {
    RunState.WAITING_INPUT: Kind.INPUT_NEEDED,
    RunState.COMPLETED: Kind.RUN_DONE,
    RunState.FAILED: Kind.RUN_FAILED,
}
_RUN_ENDS: Final = frozenset({RunState.COMPLETED, RunState.FAILED, RunState.CANCELLED})


#: Who may be a candidate; ``None``: everyone (a partition narrows it to its recipients).
Owns = Callable[[str], bool] | None


def classify(event: Event, world: WorldFacts) -> list[Candidate]:
    """Map a source event to its candidates and kinds (S1-S4), by the facts before it.

    One hint per person and event: precedence dm, mention, message. Only active humans are
    candidates; the author never is.
    """
    return classify_for(event, world, world.readers, None)


def classify_for(
    event: Event, world: WorldFacts, readers: Callable[[str], Sequence[str]], owns: Owns
) -> list[Candidate]:
    """`classify`, with the candidates narrowed to those ``owns`` owns (none left: no
    candidate) and a channel's readers answered by ``readers`` (already narrowed by it)."""
    p = event.payload
    kind = event.type
    if kind == "message.created":
        return _classify_message(event, world, readers, owns)
    if kind == "run.state_changed":
        return _classify_run(event, world, readers, owns)
    if kind in ("access.expiring", "device.pending"):
        person = world.user(event.audience or "")
        if person is None or not person.active_human:
            return []
        if owns is not None and not owns(person.id):
            return []
        if kind == "access.expiring":
            return [Candidate(kind=Kind.ADMIN, recipients=(person.id,), target=str(p["target"]))]
        device = str(p["device"])
        return [
            Candidate(
                kind=Kind.SECURITY, recipients=(person.id,), target=device, exclude_device=device
            )
        ]
    return []


def _humans(world: WorldFacts, people: Sequence[str], but: set[str], owns: Owns) -> tuple[str, ...]:
    """The active humans among ``people`` (those ``owns`` owns) but ``but``, ascending and
    each once."""
    if owns is not None:
        # A partition owns few of them (a replay deciding for nobody, none): they are not
        # looked up.
        people = list(filter(owns, people))
        if not people:
            return ()
    user = world.user
    out = {
        person
        for person in people
        if person not in but and (info := user(person)) is not None and info.active_human
    }
    return tuple(sorted(out))


def _without(readers: Sequence[str], but: set[str]) -> tuple[str, ...]:
    """``readers`` (active humans, ascending: `WorldFacts.readers`) but the few of ``but``."""
    # Found by bisection (the readers are ascending): a fan-out can be hundreds, ``but`` (the
    # author and the mentioned) a handful; the rest is copied by slices, in C.
    size = len(readers)
    cuts = []
    for person in but:
        index = bisect_left(readers, person)
        if index < size and readers[index] == person:
            cuts.append(index)
    if not cuts:
        return tuple(readers)
    if len(cuts) == 1:
        (index,) = cuts
        return (*readers[:index], *readers[index + 1 :])
    cuts.sort()
    out: list[str] = []
    start = 0
    for index in cuts:
        out += readers[start:index]
        start = index + 1
    out += readers[start:]
    return tuple(out)


def _classify_message(
    event: Event, world: WorldFacts, readers_of: Callable[[str], Sequence[str]], owns: Owns
) -> list[Candidate]:
    # Every message of the log is classified in every replay, also in each task of a
    # partitioned one, which owns few of the candidates or none: what only a candidate
    # needs (the message and its position) is read once there is one.
    p = event.payload
    if p.get("silent") or p["origin"] in ("import", "system") or p["kind"] in ("run", "system"):
        return []
    thread_id, author = str(p["thread"]), str(p["author"])
    thread = world.thread(thread_id)
    if thread is None:
        return []
    channel = world.channel(thread.channel)
    if channel is None:
        return []
    if channel.direct:
        dm = _humans(world, channel.participants, {author}, owns)
        if not dm:
            return []
        return [
            Candidate(
                kind=Kind.DM,
                recipients=dm,
                thread=thread_id,
                message=str(p["message"]),
                message_seq=int(p["thread_seq"]),  # type: ignore[call-overload]
            )
        ]
    mention_ids = p.get("mention_ids")
    # ``but`` takes every mentioned person, owned or not: the readers are owned ones already.
    but = {author}
    out = []
    if mention_ids:
        named = [str(m) for m in mention_ids]  # type: ignore[attr-defined]
        but.update(named)
        mentioned = _humans(world, named, {author}, owns)
        if mentioned:
            out.append(
                Candidate(
                    kind=Kind.MENTION,
                    recipients=mentioned,
                    thread=thread_id,
                    message=str(p["message"]),
                    message_seq=int(p["thread_seq"]),  # type: ignore[call-overload]
                )
            )
    if p["origin"] == "agent" and world.during_run(thread_id, author):
        return out  # S2: no message hints during a run; its end gives one
    everyone = readers_of(channel.id)
    readers = _without(everyone, but) if everyone else ()
    if readers:
        out.append(
            Candidate(
                kind=Kind.MESSAGE,
                recipients=readers,
                thread=thread_id,
                message=str(p["message"]),
                message_seq=int(p["thread_seq"]),  # type: ignore[call-overload]
                from_readers=True,
            )
        )
    return out


def _classify_run(
    event: Event, world: WorldFacts, readers_of: Callable[[str], Sequence[str]], owns: Owns
) -> list[Candidate]:
    p = event.payload
    state = RunState(str(p["state"]))
    run, thread, starter = str(p["run"]), str(p["thread"]), str(p["triggered_by"])
    last = world.last_agent_message(run)
    message, message_seq = last if last is not None else (None, 0)
    out = []
    kind = _RUN_KIND.get(state)
    starter_info = world.user(starter)
    if (
        kind is not None
        and starter_info is not None
        and starter_info.active_human
        and (owns is None or owns(starter))
    ):
        out.append(
            Candidate(
                kind=kind,
                recipients=(starter,),
                thread=thread,
                message=message,
                message_seq=message_seq,
                run_starter=starter,
            )
        )
    if state in _RUN_ENDS and message is not None:
        but = {str(p["agent"])} | ({starter} if state is not RunState.CANCELLED else set())
        readers = _without(readers_of(str(p["channel"])), but)
        if readers:
            out.append(
                Candidate(
                    kind=Kind.MESSAGE,
                    recipients=readers,
                    thread=thread,
                    message=message,
                    message_seq=message_seq,
                    from_readers=True,
                )
            )
    return out
