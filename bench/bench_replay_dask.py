"""Benchmark: ``notify replay --engine dask`` against the single-process replay, as JSON.

    python bench/bench_replay_dask.py [--events 1000000] [--users 10000] [--seed 1]
                                      [--max-fanout 500] [--partitions 2] [--rounds 3]
                                      [--log FILE]

Stages, each reported in the JSON object:
- ``log``: ``notify synth`` writes the log to a temporary file (a child process), unless
  ``--log`` names one already written (by the same synth options).
- ``single``: ``notify replay LOG --out FILE --summary-json FILE`` in a child process: wall
  time, CPU time and peak resident memory.
- ``dask``: a child process (``--dask-child``, so that its peak memory is its own) starts a
  `distributed.LocalCluster` of ``--partitions`` single-threaded worker processes on
  loopback (``cluster_start_s``) and runs `notify_cli.dask_engine.run_partitions`, what
  ``notify replay --engine dask`` runs: one `notify_cli.dask_engine.replay_partition` task
  per partition, each sending its chunks through a queue as it makes them, merged into a
  file while the tasks run. ``tasks_s``: until the merge has read every task's last chunk
  (``task_wall_s``: until each task had ended); ``merge_s``: the rest of the merge after
  that (the tail); ``close_s``: closing the cluster and writing the summary; ``replay_s``
  is all three; ``wall_s`` adds the cluster's start, what ``notify replay --engine dask``
  pays. Each task reports its worker's peak resident memory (``worker_peak_mib``) and CPU time
  (``task_cpu_s``); ``merger_peak_mib`` and ``merger_cpu_s`` (from the tasks' submission to
  the merge's end) are the merging process's (the scheduler's too, on a local cluster),
  ``chunks_mib`` the compressed lines it received.
- The two alternate ``--rounds`` times in the same run; ``best`` takes each one's fastest,
  ``speedup`` is single wall time over the dask wall time (goal >= 1.7 with 2 workers on 2
  cores) and ``cpu_bound`` the single replay's CPU time over the slowest task's: the speedup
  two idle cores would allow. ``shared`` (a child process) replays the log owning no
  recipient: what every task repeats (reading, checking, building the world, classifying);
  ``shared_share`` is its CPU time over the single replay's and ``amdahl_bound`` the speedup
  that share leaves at most to ``--partitions`` tasks on as many idle cores.
  ``task_cpu_share`` is the slowest task's CPU time over the single replay's (at most about
  0.55 for 1.7x: the cluster's start and the merge count too).
  ``identical``: every round's output and summary are the single replay's, byte for byte.
  ``load`` is the machine's load average before and after.
- Progress: each stage prints one JSON line to standard error as it ends (the Dask child also
  when its cluster is up, its tasks are in and its merge is written), so that a long run (the
  1,000,000-event log: ``--rounds 1``) shows where it is; the report goes to standard output.

Figures depend on the machine; nothing here asserts a speed (tests/bench/test_bench_replay_dask.py
only runs the functions on a small log).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import logging
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from notify_cli.dask_engine import LOCAL_CLUSTER_CONFIG, run_partitions
from notify_core.hints.decide import Policy
from notify_core.replay.partitioned import merge_summaries


def notify(*args: str) -> list[str]:
    return [sys.executable, "-m", "notify_cli", *args]


def progress(stage: str, **values: Any) -> None:
    """Print one line of progress to standard error (the report is standard output's)."""
    line = {"stage": stage, "at": time.strftime("%H:%M:%S")} | values
    print(json.dumps(line), file=sys.stderr, flush=True)


def run_child(command: list[str], show_stderr: bool = False) -> tuple[float, int, float, str]:
    """Run a command; return its wall time, peak resident set in KiB, CPU time and stdout.

    ``show_stderr``: the child's standard error (its progress) goes to ours as it comes.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=None if show_stderr else err)
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            raise RuntimeError(f"{command} failed: {err.read().decode()[-2000:]}")
        return elapsed, usage.ru_maxrss, usage.ru_utime + usage.ru_stime, out.read().decode()


def _mib(kib: float) -> float:
    return round(kib / 1024, 1)


def single(log: Path, out: Path, summary: Path) -> dict[str, Any]:
    """The single-process replay, in a child process."""
    seconds, peak, cpu, _ = run_child(
        notify("replay", str(log), f"--out={out}", f"--summary-json={summary}")
    )
    return {"wall_s": round(seconds, 2), "cpu_s": round(cpu, 2), "peak_mib": _mib(peak)}


def dask(
    log: Path, out: Path, summary: Path, partitions: int, scheduler: str | None = None
) -> dict[str, Any]:
    """The same replay as ``partitions`` tasks on a fresh local cluster (or the running one
    at ``scheduler``, as the smoke test does), merged in this process as the chunks come."""
    from distributed import Client, LocalCluster

    start = time.perf_counter()
    cluster = None
    if scheduler is None:
        import dask.config

        dask.config.set(LOCAL_CLUSTER_CONFIG)  # as the CLI does
        cluster = LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=partitions,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=":0",
            scheduler_kwargs={"dashboard": False},
            silence_logs=logging.ERROR,
        )
    client = Client(cluster or scheduler)  # type: ignore[no-untyped-call]
    started, cpu = time.perf_counter(), time.process_time()
    progress("dask.cluster_started", seconds=round(started - start, 2))
    try:
        # A local cluster's chunks travel through a spool directory, as the CLI's do.
        with (
            out.open("w", encoding="utf-8") as handle,
            tempfile.TemporaryDirectory(prefix="notify-bench-") as spool,
        ):
            spool_dir = spool if scheduler is None else ""
            streamed = run_partitions(
                client, str(log), Policy(), False, partitions, handle.write, spool_dir
            )
        merged_at, merge_cpu = time.perf_counter(), time.process_time() - cpu
        runs = streamed.runs
        gathered = max(streamed.ended)
        progress(
            "dask.tasks_done",
            seconds=round(gathered - started, 2),
            task_cpu_s=[round(run.cpu_s, 2) for run in runs],
        )
    finally:
        client.close()  # type: ignore[no-untyped-call]
        if cluster is not None:
            cluster.close()  # type: ignore[no-untyped-call]
    merged = merge_summaries([run.summary for run in runs])
    summary.write_text(json.dumps(merged.to_json(), indent=2) + "\n")
    done = time.perf_counter()
    progress("dask.merged", seconds=round(merged_at - gathered, 2))
    return {
        "partitions": partitions,
        "cluster_start_s": round(started - start, 2),
        "tasks_s": round(gathered - started, 2),
        "merge_s": round(merged_at - gathered, 2),
        "close_s": round(done - merged_at, 2),
        "replay_s": round(done - started, 2),
        "wall_s": round(done - start, 2),
        "task_wall_s": [round(end - started, 2) for end in streamed.finished],
        "lines": sum(run.lines for run in runs),
        "chunks_mib": _mib(sum(run.chunk_bytes for run in runs) / 1024),
        "task_cpu_s": [round(run.cpu_s, 2) for run in runs],
        "merger_cpu_s": round(merge_cpu, 2),
        "worker_peak_mib": [_mib(run.peak_kib) for run in runs],
        "merger_peak_mib": _mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss),
    }


def shared(log: Path) -> dict[str, Any]:
    """What every task repeats: a replay of the whole log that owns no recipient (reading,
    checking, building the world, classifying), in this process."""
    from notify_cli import fastjson
    from notify_cli.batch import batch_gc
    from notify_cli.options import lines_of
    from notify_core.replay.partitioned import run_partition
    from notify_core.replay.partitions import Partition
    from notify_core.replay.run import Replay

    wall, cpu = time.perf_counter(), time.process_time()
    replay = Replay(reader=fastjson.reader(), owns=lambda _: False)
    with batch_gc():
        run = run_partition(replay, Partition(0, 1), lines_of(str(log)), fastjson.dumps)
    assert not run.groups
    return {
        "wall_s": round(time.perf_counter() - wall, 2),
        "cpu_s": round(time.process_time() - cpu, 2),
    }


def _load() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the stages and return the report (also printed as JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-fanout", type=int, default=500)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--log", type=Path, default=None)
    parser.add_argument("--dask-child", nargs=3, metavar=("LOG", "OUT", "SUMMARY"))
    parser.add_argument("--shared-child", metavar="LOG")
    args = parser.parse_args(argv)
    if args.shared_child:
        result = shared(Path(args.shared_child))
        print(json.dumps(result))
        return result
    if args.dask_child:
        log, out, summary = map(Path, args.dask_child)
        result = dask(log, out, summary, args.partitions)
        print(json.dumps(result))
        return result
    with tempfile.TemporaryDirectory(prefix="bench-replay-dask-") as tmp:
        folder = Path(tmp)
        report: dict[str, Any] = {
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            "load": {"before": _load()},
        }
        log = args.log
        if log is None:
            log = folder / "log.jsonl"
            seconds, *_ = run_child(
                notify(
                    "synth",
                    f"--events={args.events}",
                    f"--users={args.users}",
                    f"--seed={args.seed}",
                    f"--max-fanout={args.max_fanout}",
                    f"--out={log}",
                )
            )
            report["log"] = {
                "events": args.events,
                "users": args.users,
                "seconds": round(seconds, 2),
            }
            progress("log", **report["log"])
        else:
            report["log"] = {"file": str(log)}
        singles, dasks, identical = [], [], True
        *_, stdout = run_child([sys.executable, __file__, f"--shared-child={log}"])
        report["shared"] = json.loads(stdout.splitlines()[-1])
        progress("shared", **report["shared"])
        for number in range(1, args.rounds + 1):
            singles.append(single(log, folder / "single.jsonl", folder / "single.json"))
            progress("single", round=number, **singles[-1])
            files = [str(log), str(folder / "dask.jsonl"), str(folder / "dask.json")]
            _, peak, _, stdout = run_child(
                [
                    sys.executable,
                    __file__,
                    f"--partitions={args.partitions}",
                    "--dask-child",
                    *files,
                ],
                show_stderr=True,
            )
            dasks.append(json.loads(stdout.splitlines()[-1]) | {"child_peak_mib": _mib(peak)})
            # Compared a block at a time: reading both outputs whole (1 GiB on 1M events) grew
            # this process, and a child started after it reported that size as its own peak.
            same = all(
                filecmp.cmp(folder / f"single.{ext}", folder / f"dask.{ext}", shallow=False)
                for ext in ("jsonl", "json")
            )
            identical = identical and same
            progress(
                "dask",
                round=number,
                wall_s=dasks[-1]["wall_s"],
                speedup=round(singles[-1]["wall_s"] / dasks[-1]["wall_s"], 2),
                cpu_bound=round(singles[-1]["cpu_s"] / max(dasks[-1]["task_cpu_s"]), 2),
                identical=same,
            )
        report["single"] = singles
        report["dask"] = dasks
        best_single = min(singles, key=lambda run: run["wall_s"])
        best_dask = min(dasks, key=lambda run: run["wall_s"])
        report["best"] = {"single": best_single, "dask": best_dask}
        report["speedup"] = round(best_single["wall_s"] / best_dask["wall_s"], 2)
        report["speedup_without_cluster_start"] = round(
            best_single["wall_s"] / best_dask["replay_s"], 2
        )
        slowest_task = min(max(run["task_cpu_s"]) for run in dasks)
        report["cpu_bound"] = round(min(run["cpu_s"] for run in singles) / slowest_task, 2)
        report["task_cpu_share"] = round(slowest_task / min(run["cpu_s"] for run in singles), 3)
        # Amdahl: every task repeats the shared part; only the rest divides among partitions.
        one = min(run["cpu_s"] for run in singles)
        rest = one - report["shared"]["cpu_s"]
        report["shared_share"] = round(report["shared"]["cpu_s"] / one, 3)
        report["amdahl_bound"] = round(
            one / (report["shared"]["cpu_s"] + rest / args.partitions), 2
        )
        report["identical"] = identical
        report["load"]["after"] = _load()
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
