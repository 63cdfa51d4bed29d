"""Benchmark: the inbox fan-out of one event to many watchers, in memory, printed as JSON.

    python bench/bench_inbox.py [--watchers 10000] [--repeat 7] [--baseline-src DIR --rounds 3]

Stages, each the median of ``--repeat`` runs, as entry decisions per second of this process's
CPU time (``time.process_time``: on a shared machine, wall time measures the neighbours):
- ``baseline``: a plain loop over the watchers that looks each one up and builds one tuple
  (the least any per-person decision costs in Python); the other figures are also given as
  a ratio to it (``over_baseline``), which is what to compare between machines.
- ``fan_out``: the pure decision (`notify_core.inbox.fan_out`) of one ``page.edited`` for
  every watcher: actor, account, access (per group set), section, choices, priority.
- ``pipeline_new``: the inbox path of the pipeline (`InboxPipeline.handle`) on the in-memory
  store, its people's facts already read once (a warm store): gather the candidates and their
  facts, decide, start one entry per watcher and write one line per decision.
- ``pipeline_coalesce``: the same for a second edit, which coalesces into those entries.
  Both pipeline stages also give ``over_fan_out`` (their rate over ``fan_out``'s in the same
  run: the decision alone is their baseline) and ``goal_met``.

The world: 10,000 watchers of one page in six group sets (two without access), a tenth of
them with stored choices, a twentieth without a verified address. Goal: ``fan_out``,
``pipeline_new`` and ``pipeline_coalesce`` >= 300,000 entry decisions/s. Nothing here
asserts a speed (tests/bench/test_bench_inbox.py only runs the functions on a small world).

``--baseline-src DIR`` compares two source trees of the library on the same workload: this
script runs ``--rounds`` times as a child process on each tree in turn (``PYTHONPATH``: DIR,
then this script's own tree; each child imports ``notify_core`` from its tree), and prints
each stage's median rate over the rounds for both (``base``, ``new``), their ``ratio``
(new over base) and the load average before and after. For example a worktree of main:
``git worktree add ../inbox-base main``, then ``--baseline-src ../inbox-base``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import notify_core
from notify_cli.batch import batch_gc
from notify_core.events.log import parse_event
from notify_core.inbox import (
    Group,
    InboxEvent,
    InboxPrefs,
    InboxSettings,
    Match,
    PageFacts,
    Permission,
    PersonFacts,
    Rule,
    fan_out,
)
from notify_core.inbox.pipeline import InboxPipeline

T0 = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
#: The source tree this script belongs to (its ``notify_core``), for ``--baseline-src``.
OWN_SRC = Path(__file__).resolve().parents[1]
#: The stages ``--baseline-src`` compares.
STAGES = ("baseline", "fan_out", "pipeline_new", "pipeline_coalesce")
#: Issue 11's goal for the whole path (``pipeline_new`` and ``pipeline_coalesce``).
GOAL_PER_S = 300_000
ALL = [{"permission": "read_pages", "match": "all"}]
GROUPS = {
    "readers": ALL,
    "staff": ALL,
    "no-ops": [{"permission": "read_pages", "match": "path_prefix", "value": "ops/", "deny": True}],
    "guests": [],
}
#: Six group sets; the last two hold no access to ops/runbook.
GROUP_SETS = [
    ("readers",),
    ("staff",),
    ("readers", "staff"),
    ("readers", "guests"),
    ("readers", "no-ops"),
    ("guests",),
]


def person_name(i: int) -> str:
    """The id of the i-th watcher."""
    return f"u{i:06d}"


def world_events(watchers: int) -> list[dict[str, Any]]:
    """The log of the world: settings, a site, groups, people, one page and its watchers."""
    events: list[dict[str, Any]] = []

    def add(kind: str, payload: dict[str, Any], **envelope: Any) -> None:
        at = T0.strftime("%Y-%m-%dT%H:%M:%SZ")
        events.append(
            {
                "seq": len(events) + 1,
                "type": kind,
                "occurred_at": at,
                **envelope,
                "payload": payload,
            }
        )

    add("notifications.settings", {"mail_configured": True})
    add("site.created", {"site": "s1", "host": "wiki.example.org", "https": True})
    for name, rules in GROUPS.items():
        add("group.created", {"group": name, "rules": rules})
    add("user.created", {"user": "editor", "kind": "human"})
    add(
        "page.created",
        {"page": "p1", "site": "s1", "path": "ops/runbook", "locale": "en", "title": "Runbook"},
        actor="editor",
    )
    for i in range(watchers):
        person = person_name(i)
        add(
            "user.created",
            {
                "user": person,
                "kind": "human",
                "email": f"{person}@example.org",
                "verified": i % 20 != 0,
            },
        )
        for group in GROUP_SETS[i % len(GROUP_SETS)]:
            add("group.member_added", {"group": group, "user": person})
        if i % 10 == 0:
            add(
                "inbox_pref.updated",
                {"category": "watched_page", "channel": "email", "enabled": False},
                audience=person,
            )
        add("page.watched", {"page": "p1", "user": person})
    return events


def core_inputs(
    watchers: int,
) -> tuple[
    InboxEvent, dict[str, list[str]], dict[str, PersonFacts], dict[str, Group], InboxSettings
]:
    """The fan-out's inputs for the same world, built directly."""
    groups = {
        name: Group(
            rules=tuple(
                Rule(
                    permission=Permission(r["permission"]),
                    match=Match(r["match"]),
                    value=r.get("value"),
                    deny=r.get("deny", False),
                )
                for r in rules
            )
        )
        for name, rules in GROUPS.items()
    }
    sets = [frozenset(s) for s in GROUP_SETS]
    no_email = InboxPrefs().set("watched_page", "email", False)
    people = {
        person_name(i): PersonFacts(
            groups=sets[i % len(sets)],
            email=f"{person_name(i)}@example.org",
            verified=i % 20 != 0,
            prefs=no_email if i % 10 == 0 else InboxPrefs(),
        )
        for i in range(watchers)
    }
    event = InboxEvent(
        id="e1",
        type="page.edited",
        actor="editor",
        site="s1",
        page=PageFacts(path="ops/runbook"),
        ids={"page": "p1"},
        variant="edited",
    )
    return (
        event,
        {"watched_page": list(people)},
        people,
        groups,
        InboxSettings(mail_configured=True),
    )


def baseline(people: dict[str, PersonFacts], listed: list[str]) -> int:
    """The least a decision costs: look the person up and build one tuple each."""
    out = []
    get = people.get
    for person in listed:
        facts = get(person)
        out.append((person, facts is not None and facts.active, True))
    return len(out)


def median_rate(
    run: Callable[[], int], repeat: int, setup: Callable[[], None] | None = None
) -> dict[str, float]:
    """Run ``run`` ``repeat`` times; return the median decisions/s and CPU seconds."""
    times = []
    count = 0
    for _ in range(repeat):
        if setup is not None:
            setup()
        start = time.process_time()
        count = run()
        times.append(time.process_time() - start)
    seconds = statistics.median(times)
    return {"decisions": count, "seconds": round(seconds, 6), "per_s": round(count / seconds)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the stages and print the figures as one JSON object.

    The garbage collector runs with the thresholds of ``notify replay`` (`batch_gc`).
    """
    with batch_gc():
        return _main(argv)


def _main(argv: list[str] | None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--watchers", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--baseline-src", default=None, help="another source tree to compare")
    parser.add_argument("--rounds", type=int, default=3, help="child runs per tree")
    args = parser.parse_args(argv)
    n, repeat = args.watchers, args.repeat
    if args.baseline_src is not None:
        figures = compare(Path(args.baseline_src), n, repeat, args.rounds)
        json.dump(figures, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return figures

    event, candidates, people, groups, settings = core_inputs(n)
    listed = candidates["watched_page"]
    base = median_rate(lambda: baseline(people, listed), repeat)

    def core() -> int:
        result = fan_out(event, candidates, people, groups, settings)
        return len(result.entries) + len(result.skips)

    core_rate = median_rate(core, repeat)

    world = [parse_event(e) for e in world_events(n)]
    edits = [
        parse_event(
            {
                "seq": len(world) + k,
                "type": "page.edited",
                "occurred_at": (T0 + timedelta(minutes=k)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "actor": "editor",
                "payload": {"page": "p1"},
            }
        )
        for k in (1, 2)
    ]
    state: dict[str, InboxPipeline] = {}

    everyone = [person_name(i) for i in range(n)]

    def fresh() -> None:
        pipeline = InboxPipeline()
        for e in world:
            pipeline.handle(e)
        # A warm store, as after the first events: the people's facts are read and cached
        # (`WikiMemory.people`, `WikiMemory.user`); the first fan-out of a replay builds them.
        pipeline.wiki.people(everyone)
        for person in everyone:
            pipeline.wiki.user(person)
        state["p"] = pipeline

    def first() -> int:
        return len(state["p"].handle(edits[0]))

    def second() -> int:
        return len(state["p"].handle(edits[1]))

    new_rate = median_rate(first, repeat, setup=fresh)

    def fresh_with_entries() -> None:
        fresh()
        state["p"].handle(edits[0])

    coalesce_rate = median_rate(second, repeat, setup=fresh_with_entries)
    figures: dict[str, Any] = {
        "format": 1,
        "python": platform.python_version(),
        "machine": platform.machine(),
        # The tree whose `notify_core` ran (``--baseline-src`` checks its children's).
        "src": str(Path(notify_core.__file__).resolve().parents[1]),
        "watchers": n,
        "repeat": repeat,
        "goal_per_s": GOAL_PER_S,
        "baseline": base,
    }
    for name, rate in (
        ("fan_out", core_rate),
        ("pipeline_new", new_rate),
        ("pipeline_coalesce", coalesce_rate),
    ):
        figures[name] = {**rate, "over_baseline": round(rate["per_s"] / base["per_s"], 3)}
        if name != "fan_out":
            # The whole path against the decision alone, measured in the same run: what the
            # entries, lines and store cost on top of deciding (1.0 would be free).
            figures[name]["over_fan_out"] = round(rate["per_s"] / core_rate["per_s"], 3)
            figures[name]["goal_met"] = rate["per_s"] >= GOAL_PER_S
    json.dump(figures, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return figures


def run_child(src: Path, watchers: int, repeat: int) -> dict[str, Any]:
    """Run this script on the source tree ``src`` in a child process; return its figures."""
    env = {**os.environ, "PYTHONPATH": str(src.resolve())}
    command = [sys.executable, __file__, "--watchers", str(watchers), "--repeat", str(repeat)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    figures: dict[str, Any] = json.loads(done.stdout)
    if figures["src"] != str(src.resolve()):
        raise SystemExit(f"the child ran {figures['src']}, not {src}: is {src} a source tree?")
    return figures


def compare(base_src: Path, watchers: int, repeat: int, rounds: int) -> dict[str, Any]:
    """Run the stages on ``base_src`` and on this script's tree alternately, ``rounds`` each.

    Rounds alternate (base, new, base, new ...) so that a neighbour's load falls on both
    alike; each stage's figure is the median over the rounds of each tree's median rate.
    """
    load_before = os.getloadavg()
    runs: dict[str, list[dict[str, Any]]] = {"base": [], "new": []}
    for _ in range(rounds):
        runs["base"].append(run_child(base_src, watchers, repeat))
        runs["new"].append(run_child(OWN_SRC, watchers, repeat))
    medians = {
        side: {stage: round(statistics.median(r[stage]["per_s"] for r in got)) for stage in STAGES}
        for side, got in runs.items()
    }
    return {
        "format": 1,
        "python": platform.python_version(),
        "watchers": watchers,
        "repeat": repeat,
        "rounds": rounds,
        "base_src": str(base_src.resolve()),
        "new_src": str(OWN_SRC),
        "base": medians["base"],
        "new": medians["new"],
        "ratio": {
            stage: round(medians["new"][stage] / medians["base"][stage], 3) for stage in STAGES
        },
        "per_round": {
            side: {stage: [r[stage]["per_s"] for r in got] for stage in STAGES}
            for side, got in runs.items()
        },
        "load_average": {"before": load_before, "after": os.getloadavg()},
    }


if __name__ == "__main__":
    main()
