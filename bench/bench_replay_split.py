"""Benchmark: how much work the partitioned replay repeats, one stage at a time, as JSON.

    python bench/bench_replay_split.py --log LOG [--partitions 2] [--rounds 2] [--instructions]

Each stage runs in a child process of its own, one after the other (never two at once, so
that neither slows the other), and reports its CPU time:
- ``single``: the single-process replay of LOG (each line encoded as ``notify replay`` does,
  then dropped);
- ``task``: the replay of one `notify_cli.dask_engine.replay_partition` task, deciding for
  the people `notify_cli.dask_engine.even_owners` gives it (what ``--engine dask`` runs),
  one per partition;
- ``shared``: a replay that owns nobody: what every task repeats (reading, checking,
  building the world, classifying).

The rounds alternate the stages, so that the machine's drift touches them alike; the report
takes each stage's fastest round. ``tasks_over_single`` is the tasks' CPU summed over the
single replay's (1.0 would be a split that repeats nothing), ``slowest_over_single`` the
slowest task's (the CPU bound of ``--engine dask`` on idle cores is its inverse), and
``shared_share`` the shared stage's. Those are CPU times: on a virtual machine they move
with its neighbours by several percent between runs.

``--instructions`` runs each stage once more under Valgrind's cachegrind (``valgrind`` on
the PATH; about 20 times slower) and reports the instructions each executed, less those of
a child that only starts and imports (``idle``): a count that does not move with the
machine, so that ``instructions.tasks_over_single`` shows what a change to the split saves
to the instruction, where CPU times cannot. Timing the same stages against those counts
shows what the counts miss: on the development machine the tasks' CPU summed 1.3x the single
replay's where their instructions summed 1.17x (docs/replay.md).

Figures depend on the machine; nothing asserts a speed (tests/bench/test_bench_replay_split.py
only runs the stages on a small log).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from notify_cli import fastjson
from notify_cli.batch import batch_gc
from notify_cli.dask_engine import even_owners, replay_partition
from notify_cli.options import lines_of
from notify_core.events.log import EventError
from notify_core.hints.decide import Policy
from notify_core.replay.lines import dumps_item
from notify_core.replay.run import Replay

#: cachegrind's summary line of the instructions executed ("I refs: 1,234").
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def run_stage(stage: str, log: str, index: int = 0, count: int = 2, owners_file: str = "") -> float:
    """Run one stage in this process; return its CPU time (``idle``: nothing, 0).

    A ``task`` is task ``index`` of ``count``, deciding for the people ``owners_file`` (JSON:
    person to task) gives it; without one, for its MD5 partition.
    """
    if stage == "idle":
        return 0.0
    if stage == "task":
        owners = json.loads(Path(owners_file).read_text()) if owners_file else None
        run = replay_partition(log, Policy(), False, index, count, owners=owners)
        return run.cpu_s
    owns = (lambda _: False) if stage == "shared" else None
    started = time.process_time()
    replay = Replay(policy=Policy(), reader=fastjson.reader(), owns=owns)
    with batch_gc():
        for item in replay.run(lines_of(log)):
            if not isinstance(item, EventError):  # a bad line: the CLI reports it, once
                dumps_item(item, fastjson.dumps)
    return time.process_time() - started


def instructions(report: str) -> int:
    """The instructions a cachegrind run reports (its standard error), or an error."""
    found = _REFS.search(report)
    if found is None:
        raise RuntimeError(f"no instruction count in cachegrind's report: {report[-500:]}")
    return int(found[1].replace(",", ""))


def child(
    stage: str, log: str, index: int, count: int, owners_file: str, valgrind: bool = False
) -> dict[str, Any]:
    """Run a stage in a child process; its CPU time, and its instructions under Valgrind."""
    command = [sys.executable, __file__, "--child", stage, "--log", log]
    command += [f"--index={index}", f"--partitions={count}"]
    if owners_file:
        command.append(f"--owners={owners_file}")
    if valgrind:
        command = [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
            *command,
        ]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    if valgrind:
        result["instructions"] = instructions(done.stderr)
    return result


def stages(partitions: int) -> list[tuple[str, int]]:
    """The stages of one round, in order: single, each task, shared."""
    return [("single", 0), *[("task", i) for i in range(partitions)], ("shared", 0)]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--log", required=True)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--child", choices=["single", "task", "shared", "idle"])
    parser.add_argument("--index", type=int, default=0)
    parser.add_argument("--owners", default="")
    args = parser.parse_args(argv)
    if args.child:
        seconds = run_stage(args.child, args.log, args.index, args.partitions, args.owners)
        print(json.dumps({"cpu_s": round(seconds, 3)}))
        return {}
    if args.instructions and shutil.which("valgrind") is None:
        parser.error("--instructions needs valgrind on the PATH")
    with tempfile.TemporaryDirectory(prefix="notify-split-") as tmp:
        owners_file = str(Path(tmp) / "owners.json")
        owners: dict[str, int] = even_owners(args.log, args.partitions)
        Path(owners_file).write_text(json.dumps(owners))
        cpu: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            for stage, index in stages(args.partitions):
                name = f"task{index}" if stage == "task" else stage
                taken = child(stage, args.log, index, args.partitions, owners_file)["cpu_s"]
                cpu.setdefault(name, []).append(taken)
                print(json.dumps({"stage": name, "cpu_s": taken}), file=sys.stderr, flush=True)
        best = {name: min(values) for name, values in cpu.items()}
        tasks = [best[f"task{i}"] for i in range(args.partitions)]
        report: dict[str, Any] = {
            "log": args.log,
            "partitions": args.partitions,
            "rounds": args.rounds,
            "cpu_s": cpu,
            "best_cpu_s": best,
            "tasks_over_single": round(sum(tasks) / best["single"], 3),
            "slowest_over_single": round(max(tasks) / best["single"], 3),
            "shared_share": round(best["shared"] / best["single"], 3),
        }
        if args.instructions:
            idle = child("idle", args.log, 0, args.partitions, "", valgrind=True)["instructions"]
            counts = {
                (f"task{index}" if stage == "task" else stage): child(
                    stage, args.log, index, args.partitions, owners_file, valgrind=True
                )["instructions"]
                - idle
                for stage, index in stages(args.partitions)
            }
            ir_tasks = [counts[f"task{i}"] for i in range(args.partitions)]
            report["instructions"] = {
                "idle": idle,
                "stages": counts,
                "tasks_over_single": round(sum(ir_tasks) / counts["single"], 3),
                "slowest_over_single": round(max(ir_tasks) / counts["single"], 3),
                "shared_share": round(counts["shared"] / counts["single"], 3),
            }
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
