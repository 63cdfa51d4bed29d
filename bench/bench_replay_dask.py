"""Benchmark: ``notify replay --engine dask`` against the single-process replay, as JSON.

    python bench/bench_replay_dask.py [--events 1000000] [--users 10000] [--seed 1]
                                      [--max-fanout 500] [--partitions 2]

Stages, each reported in the JSON object:
- ``log``: ``notify synth`` writes the log to a temporary file (a child process).
- ``single``: ``notify replay LOG --out FILE --summary-json FILE`` in a child process: wall
  time and peak resident memory.
- ``dask``: this process starts a `distributed.LocalCluster` of ``--partitions``
  single-threaded worker processes on loopback (``cluster_start_s``), runs one
  `notify_cli.dask_engine.replay_partition` task per partition, merges their lines into a
  file and their summaries (``replay_s``; ``wall_s`` is both, what ``notify replay --engine
  dask`` pays), and asks every worker for its peak resident memory (``worker_peak_mib``);
  ``merger_peak_mib`` is this process's, which holds every line until the merge.
- ``speedup``: single wall time over the dask wall time (goal >= 1.7 with 2 workers on 2
  cores), and ``identical``: whether the output and summary are byte-identical.

Figures depend on the machine; nothing here asserts a speed (tests/test_bench_replay_dask.py
only runs the functions on a small log).
"""

from __future__ import annotations

import argparse
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

from notify_cli.dask_engine import replay_partition
from notify_core.decide import Policy
from notify_core.partitioned import PartitionRun, merge_lines, merge_summaries


def notify(*args: str) -> list[str]:
    return [sys.executable, "-m", "notify_cli", *args]


def run_child(command: list[str]) -> tuple[float, int]:
    """Run a command; return its wall time and its peak resident set in KiB."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{command} failed: {stderr.decode()[-2000:]}")
    return elapsed, usage.ru_maxrss


def _peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def single(log: Path, out: Path, summary: Path) -> dict[str, Any]:
    """The single-process replay, in a child process."""
    seconds, peak = run_child(
        notify("replay", str(log), f"--out={out}", f"--summary-json={summary}")
    )
    return {"wall_s": round(seconds, 2), "peak_mib": round(peak / 1024, 1)}


def dask(
    log: Path, out: Path, summary: Path, partitions: int, scheduler: str | None = None
) -> dict[str, Any]:
    """The same replay as ``partitions`` tasks on a fresh local cluster (or the running one
    at ``scheduler``, as the smoke test does), merged."""
    from distributed import Client, LocalCluster

    start = time.perf_counter()
    cluster = None
    if scheduler is None:
        import dask.config

        dask.config.set({"distributed.worker.profile.enabled": False})  # as the CLI does
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
    started = time.perf_counter()
    try:
        futures = [
            client.submit(
                replay_partition, str(log), Policy(), False, index, partitions, pure=False
            )
            for index in range(partitions)
        ]
        runs: list[PartitionRun] = client.gather(futures)
        gathered = time.perf_counter()
        with out.open("w", encoding="utf-8") as handle:
            for text in merge_lines([run.lines for run in runs]):
                handle.write(text + "\n")
        merged = merge_summaries([run.summary for run in runs])
        summary.write_text(json.dumps(merged.to_json(), indent=2) + "\n")
        done = time.perf_counter()
        peaks = client.run(_peak_kib)  # type: ignore[no-untyped-call]
    finally:
        client.close()  # type: ignore[no-untyped-call]
        if cluster is not None:
            cluster.close()  # type: ignore[no-untyped-call]
    return {
        "partitions": partitions,
        "cluster_start_s": round(started - start, 2),
        "tasks_s": round(gathered - started, 2),
        "merge_s": round(done - gathered, 2),
        "replay_s": round(done - started, 2),
        "wall_s": round(done - start, 2),
        "lines": sum(len(run.lines) for run in runs),
        "worker_peak_mib": sorted(round(kib / 1024, 1) for kib in peaks.values()),
        "merger_peak_mib": round(_peak_kib() / 1024, 1),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the stages and return the report (also printed as JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-fanout", type=int, default=500)
    parser.add_argument("--partitions", type=int, default=2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-replay-dask-") as tmp:
        folder = Path(tmp)
        log = folder / "log.jsonl"
        seconds, _ = run_child(
            notify(
                "synth",
                f"--events={args.events}",
                f"--users={args.users}",
                f"--seed={args.seed}",
                f"--max-fanout={args.max_fanout}",
                f"--out={log}",
            )
        )
        report: dict[str, Any] = {
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            "log": {"events": args.events, "users": args.users, "seconds": round(seconds, 2)},
        }
        report["single"] = single(log, folder / "single.jsonl", folder / "single.json")
        report["dask"] = dask(log, folder / "dask.jsonl", folder / "dask.json", args.partitions)
        report["speedup"] = round(report["single"]["wall_s"] / report["dask"]["wall_s"], 2)
        report["speedup_without_cluster_start"] = round(
            report["single"]["wall_s"] / report["dask"]["replay_s"], 2
        )
        report["identical"] = all(
            (folder / f"single.{ext}").read_bytes() == (folder / f"dask.{ext}").read_bytes()
            for ext in ("jsonl", "json")
        )
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
