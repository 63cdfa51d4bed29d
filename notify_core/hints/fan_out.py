"""D1-D3 (`decide.gate`) for every recipient of one fan-out at once.

Most recipients of a ``message`` end at D3 (their level is not ``all``), and nearly all of a
fan-out share the same few facts gate reads: the same `LevelFacts` value (the preference
store shares one among everyone without a row), no switches of their own, not the run
starter. So gate runs once per distinct combination of those facts, and the per-person work
is a handful of passes over the recipients done by C code (``map``, ``zip``, ``dict``)
instead of one Python loop iteration each: that loop was the replay's largest cost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import compress, filterfalse, repeat
from typing import Final

from notify_core.hints.decide import EventFacts, Skip, Switches, gate
from notify_core.hints.levels import LevelFacts
from notify_core.hints.ports import PreferenceFacts, WorldFacts

__all__ = [
    "NO_SWITCHES",
    "Gated",
    "GatedShared",
    "gate_fan_out",
    "gate_shared",
    "level_facts",
    "read_rights",
]

#: The switches of everyone who set none (the policy defaults apply).
NO_SWITCHES = Switches()

#: gate's facts of one person that vary in a fan-out (`gate_fan_out`).
_Key = object


def read_rights(
    world: WorldFacts, people: Sequence[str], thread: str | None, from_readers: bool = False
) -> list[bool]:
    """D2's read right of each of ``people``, in order: `WorldFacts.allowed` for a thread;
    without one, whether the person is an active human.

    A world with an ``allowed_many(people, thread)`` method (the in-memory one) answers a
    whole fan-out at once; it must answer as `WorldFacts.allowed` does, person by person.
    ``from_readers``: every one of ``people`` is among `WorldFacts.readers` of the thread's
    channel; a world with a ``readers_allowed(thread)`` method (the in-memory one, whose
    readers are exact) answers them all with one value, as `WorldFacts.allowed` would each.
    """
    if thread is None:
        return [info is not None and info.active_human for info in map(world.user, people)]
    if from_readers:
        readers_allowed = getattr(world, "readers_allowed", None)
        if readers_allowed is not None:
            return [readers_allowed(thread)] * len(people)
    many = getattr(world, "allowed_many", None)
    if many is not None:
        return many(people, thread)  # type: ignore[no-any-return]
    return list(map(world.allowed, people, repeat(thread)))


def level_facts(
    prefs: PreferenceFacts, thread: str, people: Sequence[str]
) -> dict[str, LevelFacts]:
    """`PreferenceFacts.level_facts`, with a one-person path: due work (a flush, a release)
    reads one person, and a store with a ``level_facts_of(thread, user)`` method (the
    in-memory one) answers them without the sets and dicts of a fan-out; it must answer as
    `PreferenceFacts.level_facts` does."""
    one = getattr(prefs, "level_facts_of", None) if len(people) == 1 else None
    if one is not None:
        (person,) = people
        return {person: one(thread, person)}
    return prefs.level_facts(thread, people)


def gate_fan_out(
    facts: EventFacts,
    people: Sequence[str],
    *,
    rights: Sequence[bool],
    levels: Mapping[str, LevelFacts],
    switches: Mapping[str, Switches],
    starter: str | None,
) -> Gated:
    """Run `gate` for each of ``people``: what it would answer, calling it once per person
    with their read right (``rights``, in the same order), level facts (``None`` when
    absent), switches (`NO_SWITCHES` when absent) and whether they started the run.

    Raises:
        InvalidFacts: as `gate` (a kind that needs level facts and a person without them).
    """
    # A person's combination holds only the facts that vary in this fan-out (ids: values
    # compared by identity, equal values that are distinct objects only cost one more gate
    # call); shared facts are read at the combination's first person.
    parts: list[Iterable[object]] = []
    if not all(rights):
        parts.append(rights)
    level_list: list[LevelFacts | None] | None = None
    if levels:
        level_list = list(map(levels.get, people))
        parts.append(map(id, level_list))
    own_list: list[Switches] | None = None
    if switches:
        own_list = list(map(switches.get, people, repeat(NO_SWITCHES)))
        parts.append(map(id, own_list))
    if starter is not None:
        parts.append(map(starter.__eq__, people))
    keys: list[object]
    if not parts:
        keys = [None] * len(people)
    elif len(parts) == 1:
        keys = list(parts[0])
    else:
        keys = list(zip(*parts, strict=True))
    counts = Counter(keys)
    if len(counts) <= _FEW:
        # The first person of each combination: a scan in C per combination.
        first: Mapping[object, int] = {key: keys.index(key) for key in counts}
    else:  # a later duplicate's index is overwritten
        first = dict(zip(reversed(keys), range(len(keys) - 1, -1, -1), strict=True))
    answers = {
        key: gate(
            facts,
            allowed=rights[index],
            run_starter=starter is not None and people[index] == starter,
            level=level_list[index] if level_list is not None else None,
            switches=own_list[index] if own_list is not None else NO_SWITCHES,
        )
        for key, index in first.items()
    }
    return Gated(people, keys, counts, answers)


#: Up to this many combinations in a fan-out, each one's first person is found by a scan.
_FEW: Final = 16


class Gated:
    """`gate`'s answers for the people of one fan-out (`gate_fan_out`), kept by combination
    of the facts it read: most of a fan-out shares one, and one answer."""

    __slots__ = ("_answers", "_counts", "_keys", "_people")

    def __init__(
        self,
        people: Sequence[str],
        keys: Sequence[_Key],
        counts: Counter[_Key],
        answers: dict[_Key, Skip | None],
    ) -> None:
        self._people, self._keys, self._counts, self._answers = people, keys, counts, answers

    def answers(self) -> list[Skip | None]:
        """Return the answer for each person, in order (``None``: the decision goes on)."""
        return list(map(self._answers.__getitem__, self._keys))

    def passed(self) -> Sequence[str]:
        """Return the people gate let through, in order."""
        going = {key for key, answer in self._answers.items() if answer is None}
        if not going:
            return ()
        if len(going) == len(self._answers):
            return self._people
        return list(compress(self._people, map(going.__contains__, self._keys)))

    def count_skips(self, into: Counter[Skip]) -> None:
        """Add the skips gate answered to ``into``, by value, as many as people got each."""
        answers = self._answers
        for key, count in self._counts.items():
            answer = answers[key]
            if answer is not None:
                into[answer] += count


def gate_shared(
    facts: EventFacts,
    people: Sequence[str],
    *,
    rights: Sequence[bool],
    shared: LevelFacts,
    differ: Mapping[str, LevelFacts],
    switches: Mapping[str, Switches],
    starter: str | None,
) -> GatedShared:
    """`gate_fan_out` where the level facts come as one value most share (``shared``) and
    the people whose value differs (``differ``): everyone else with the read right, no
    switches and not the run starter gets one answer, and no work is done person by person
    for them (only C passes over ``rights``).

    Raises:
        InvalidFacts: as `gate`.
    """
    exceptions: dict[str, None] = dict.fromkeys(differ)
    exceptions.update(dict.fromkeys(switches))
    if starter is not None and starter in people:
        exceptions[starter] = None
    refused: set[str] = set()
    if not all(rights):
        start = 0
        for _ in range(rights.count(False)):
            index = rights.index(False, start)
            refused.add(people[index])
            start = index + 1
        exceptions.update(dict.fromkeys(refused))
    by_facts: dict[tuple[bool, int, int, bool], Skip | None] = {}
    answers: dict[str, Skip | None] = {}
    for person in exceptions:
        allowed = person not in refused
        level = differ.get(person, shared)
        own = switches.get(person, NO_SWITCHES)
        is_starter = person == starter
        key = (allowed, id(level), id(own), is_starter)
        if key not in by_facts:
            by_facts[key] = gate(
                facts, allowed=allowed, run_starter=is_starter, level=level, switches=own
            )
        answers[person] = by_facts[key]
    rest = len(people) - len(answers)
    common = (
        gate(facts, allowed=True, run_starter=False, level=shared, switches=NO_SWITCHES)
        if rest
        else None
    )
    return GatedShared(people, common, rest, answers)


class GatedShared:
    """`gate`'s answers for a fan-out (`gate_shared`): one for everyone but a few, and
    those few's own; the same methods as `Gated`."""

    __slots__ = ("_answers", "_common", "_people", "_rest")

    def __init__(
        self,
        people: Sequence[str],
        common: Skip | None,
        rest: int,
        answers: dict[str, Skip | None],
    ) -> None:
        self._people, self._common, self._rest, self._answers = people, common, rest, answers

    def answers(self) -> list[Skip | None]:
        """Return the answer for each person, in order (``None``: the decision goes on)."""
        return list(map(self._answers.get, self._people, repeat(self._common)))

    def passed(self) -> Sequence[str]:
        """Return the people gate let through, in order."""
        answers = self._answers
        if self._common is None and self._rest:
            stopped = {person for person, answer in answers.items() if answer is not None}
            if not stopped:
                return self._people
            return list(filterfalse(stopped.__contains__, self._people))
        going = [person for person, answer in answers.items() if answer is None]
        if len(going) < 2:  # most fan-outs: nobody or one person passes, no pass over them
            return going
        return list(filter(set(going).__contains__, self._people))

    def count_skips(self, into: Counter[Skip]) -> None:
        """Add the skips gate answered to ``into``, by value, as many as people got each."""
        if self._common is not None and self._rest:
            into[self._common] += self._rest
        for answer in self._answers.values():
            if answer is not None:
                into[answer] += 1
