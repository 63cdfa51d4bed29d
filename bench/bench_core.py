"""Speed of the core's hot paths, printed as JSON.

- ``decide``: one event fanned out to 10,000 recipients with realistic facts, through
  ``decide_all`` and through a plain loop over ``decide``; goal >= 400,000 decisions/s.
- ``in_quiet_hours``: one or two rules whose zones are loaded; goal >= 1,000,000 /s.

Every figure comes with a baseline measured in the same process: the same loop calling a
trivial function, so the ratio survives a noisy machine. Run: ``python bench/bench_core.py``.

With ``--synapse-python PATH`` (the interpreter of a venv holding ``matrix-synapse==1.163.2``)
it also runs the peer benchmark ``synapse_push_bench.py`` (Synapse's compiled push-rule
evaluator deciding each member of a 10,000-member room, 10 of them mentioned) as a
subprocess, alternating with our ``decide_all`` round by round, with Python's automatic GC
off and on, and reports the best of each side and the ratio (goal: >= 2). The script is
looked up in ``../shared/bench/peers/`` next to the repository unless ``--synapse-script``
names it. See docs/speed.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from notify_core import (
    Connection,
    Device,
    EventFacts,
    LevelFacts,
    Policy,
    Preference,
    QuietRule,
    RecipientFacts,
    decide,
    decide_all,
    in_quiet_hours,
)

NOW = datetime(2026, 10, 23, 21, 30, tzinfo=UTC)
ZONES = ["Europe/Berlin", "America/New_York", "Asia/Kathmandu", "Australia/Lord_Howe", "UTC"]
PLATFORMS = ["ios", "android", "desktop", "web"]
ROOT = Path(__file__).resolve().parents[1]
PEER_SCRIPT = ROOT.parent / "shared" / "bench" / "peers" / "synapse_push_bench.py"
#: The room of issue 15: 10,000 members (9,999 recipients), 10 of them mentioned.
PEER_ARGS = ["--n", "10000", "--mention-fraction", "0.001"]
#: wall: elapsed time, as the issue measures; cpu: the thread's CPU time, which leaves out
#: the time other processes of a shared machine take from the benchmark.
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.thread_time}
# Runs the peer script as its own file would run (its folder first on sys.path), with the
# thread's CPU time as its clock.
CPU_CLOCK_PEER = (
    "import os, runpy, sys, time; time.perf_counter = time.thread_time; "
    "sys.argv = sys.argv[1:]; sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0])); "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


def recipients(n: int, seed: int = 7) -> list[RecipientFacts]:
    """Realistic facts: rows at three depths for a third, quiet rules in a few zones."""
    rng = random.Random(seed)
    people = []
    levels = ["all", "mentions", "mute"]
    for i in range(n):
        if i % 3 == 0:
            facts = LevelFacts(
                thread=Preference(level=rng.choice(levels)) if rng.random() < 0.5 else None,
                channel=Preference(level=rng.choice(levels)) if rng.random() < 0.5 else None,
                space=Preference(level=rng.choice(levels)),
                instance_default="mentions",
            )
        else:
            facts = LevelFacts(channel_default="all", instance_default="mentions")
        rules = []
        if rng.random() < 0.6:
            for _ in range(rng.randint(1, 2)):
                rules.append(
                    QuietRule(
                        weekdays=rng.randint(1, 127),
                        start_local=f"{rng.randint(18, 23):02d}:00",
                        end_local=f"{rng.randint(5, 8):02d}:30",
                        time_zone=rng.choice([None, *ZONES]),
                    )
                )
        devices = [
            Device(id=f"d-{i}-{k}", platform=rng.choice(PLATFORMS))
            for k in range(rng.randint(1, 3))
        ]
        connections = []
        if rng.random() < 0.05:
            connections.append(
                Connection(device=devices[0].id, focus={"t-other"}, idle=rng.random() < 0.5)
            )
        people.append(
            RecipientFacts(
                allowed=rng.random() < 0.98,
                level=facts,
                user_time_zone=rng.choice(ZONES),
                quiet_rules=rules,
                devices=devices,
                connections=connections,
            )
        )
    return people


def best_of(fn: Callable[[], object], repeat: int = 7) -> float:
    """Best wall time of ``repeat`` runs (the least disturbed one)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def best_of_fresh(
    fn: Callable[[list[RecipientFacts]], object],
    n: int,
    repeat: int = 7,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Best time of ``fn`` over freshly built facts each run (building is not timed).

    Values derive some facts on first use (a person's zone, push routes), so reusing one list
    would time warm values; a fan-out decides each person's facts once.
    """
    times = []
    for _ in range(repeat):
        people = recipients(n)
        start = clock()
        fn(people)
        times.append(clock() - start)
    return min(times)


def trivial(event: object, person: object) -> object:
    return person


def ours_best(event: EventFacts, n: int, reps: int, gc_on: bool, clock: str) -> float:
    """Best time of ``decide_all`` over fresh facts, GC as the Synapse script sets it."""
    gc.collect()
    if not gc_on:
        gc.disable()
    try:
        return best_of_fresh(lambda people: decide_all(event, people), n, reps, CLOCKS[clock])
    finally:
        gc.enable()


def synapse_best(
    python: str, script: Path, reps: int, gc_on: bool, clock: str
) -> dict[str, object]:
    """One run of the peer script in its own interpreter; its JSON line.

    With the ``cpu`` clock the script runs unchanged, but its ``time.perf_counter`` is the
    thread's CPU time, the clock our side then uses too.
    """
    run = [str(script)] if clock == "wall" else ["-c", CPU_CLOCK_PEER, str(script)]
    command = [python, *run, *PEER_ARGS, "--reps", str(reps), "--warmup", "1"]
    if gc_on:
        command.append("--gc")
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"bench_core: the Synapse peer failed: {done.stderr.strip() or done.stdout}")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def against_synapse(
    event: EventFacts,
    python: str,
    script: Path,
    rounds: int,
    reps: int,
    n: int = 10_000,
    clock: str = "wall",
) -> dict[str, object]:
    """Alternate our ``decide_all`` and the Synapse peer; best of each side, GC off and on.

    Each round runs, in this order, ours with GC off, the peer with GC off, ours with GC on
    and the peer with GC on, so a slow spell of the machine hits both sides alike.
    """
    best: dict[tuple[str, bool], float] = {}
    peer: dict[str, object] = {}
    for _ in range(rounds):
        for gc_on in (False, True):
            ours = n / ours_best(event, n, reps, gc_on, clock)
            peer = synapse_best(python, script, reps, gc_on, clock)
            theirs = float(peer["recipients"]) / float(peer["best_s"])  # type: ignore[arg-type]
            best["ours", gc_on] = max(best.get(("ours", gc_on), 0.0), ours)
            best["synapse", gc_on] = max(best.get(("synapse", gc_on), 0.0), theirs)
    report: dict[str, object] = {
        "synapse_version": peer["version"],
        "room": {"members": peer["n"], "recipients": peer["recipients"]},
        "mentioned": peer["mentioned"],
        "rounds": rounds,
        "reps_per_round": reps,
        "clock": clock,
    }
    for gc_on in (False, True):
        ours, theirs = best["ours", gc_on], best["synapse", gc_on]
        report["gc_on" if gc_on else "gc_off"] = {
            "ours_per_s": round(ours),
            "synapse_per_s": round(theirs),
            "ours_us": round(1e6 / ours, 3),
            "synapse_us": round(1e6 / theirs, 3),
            "ratio": round(ours / theirs, 2),
        }
    report["goal_ratio"] = 2.0
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description="Speed of the core's hot paths, as JSON.")
    parser.add_argument(
        "--synapse-python", help="interpreter of a venv with matrix-synapse: run the peer"
    )
    parser.add_argument(
        "--synapse-script", type=Path, default=PEER_SCRIPT, help="the peer benchmark script"
    )
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    parser.add_argument("--reps", type=int, default=11, help="passes per side per round")
    parser.add_argument(
        "--clock", choices=sorted(CLOCKS), default="wall", help="of the Synapse comparison"
    )
    args = parser.parse_args()
    if args.synapse_python and not args.synapse_script.is_file():
        parser.error(f"no peer script at {args.synapse_script}; name it with --synapse-script")
    n = 10_000
    people = recipients(n)
    event = EventFacts(now=NOW, kind="message", thread="t-1", policy=Policy())
    decide_all(event, people)  # warm zone caches

    t_all = best_of_fresh(lambda people: decide_all(event, people), n)
    t_loop = best_of_fresh(lambda people: [decide(event, p) for p in people], n)
    t_base = best_of_fresh(lambda people: [trivial(event, p) for p in people], n)

    rule1 = [
        QuietRule(weekdays=16, start_local="22:00", end_local="07:00", time_zone="Europe/Berlin")
    ]
    rule2 = [*rule1, QuietRule(weekdays=127, start_local="12:00", end_local="13:00")]
    m = 200_000
    t_q1 = best_of(lambda: [in_quiet_hours(rule1, NOW, None) for _ in range(m)], 3)
    t_q2 = best_of(lambda: [in_quiet_hours(rule2, NOW, "America/New_York") for _ in range(m)], 3)
    t_qb = best_of(lambda: [trivial(rule1, NOW) for _ in range(m)], 3)

    report = {
        "python": sys.version.split()[0],
        "decide": {
            "recipients": n,
            "decide_all_per_s": round(n / t_all),
            "decide_loop_per_s": round(n / t_loop),
            "us_per_decision": round(t_all / n * 1e6, 3),
            "baseline_trivial_loop_per_s": round(n / t_base),
            "ratio_to_baseline": round(t_all / t_base, 2),
            "goal_per_s": 400_000,
        },
        "in_quiet_hours": {
            "one_rule_per_s": round(m / t_q1),
            "two_rules_per_s": round(m / t_q2),
            "baseline_trivial_per_s": round(m / t_qb),
            "ratio_to_baseline_one_rule": round(t_q1 / t_qb, 2),
            "goal_per_s": 1_000_000,
        },
    }
    if args.synapse_python:
        report["synapse"] = against_synapse(
            event,
            args.synapse_python,
            args.synapse_script,
            args.rounds,
            args.reps,
            clock=args.clock,
        )
    json.dump(report, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
