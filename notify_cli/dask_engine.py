"""``notify replay --engine dask``: one recipient partition per task on a Dask cluster.

Each task replays the whole log deciding for one partition (`notify_core.partitioned`) and
returns its lines grouped by log line, as zlib-compressed chunks (`Spool`); this process
merges the chunks by streaming (one chunk per partition decompressed at a time) into the
single replay's output, and the summaries into its summary. Without ``--scheduler`` a
`distributed.LocalCluster` of one single-threaded process per partition runs on this
machine (loopback only); with one, every worker must read the log at the same path
(docs/replay.md).
"""

from __future__ import annotations

import functools
import logging
import os
import pickle
import resource
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any, Final

import attrs

from notify_cli import fastjson
from notify_cli.batch import batch_gc
from notify_cli.options import (
    STDIN,
    BadInput,
    lines_of,
    open_out,
    writing,
)
from notify_core.decide import Policy
from notify_core.events import EventError
from notify_core.partitioned import (
    Group,
    error_of,
    merge_groups,
    merge_summaries,
    run_partition,
)
from notify_core.partitions import Partition
from notify_core.replay import Replay, Summary

__all__ = [
    "INSTALL",
    "Spool",
    "SpooledRun",
    "check_options",
    "replay_dask",
    "replay_partition",
    "run_dask_replay",
    "unspool",
]

#: What the CLI says when Dask is missing.
INSTALL = "--engine dask needs the Dask extra: pip install 'notify-engine[dask]'"


#: Lines per compressed chunk: big enough for zlib to find the lines' repetitions, small
#: enough that the merge holds little decompressed (one chunk per partition).
CHUNK_LINES: Final = 20_000


class Spool:
    """A partition's groups as zlib-compressed pickles of about `CHUNK_LINES` lines each.

    A task's lines are kept compressed (bytes, which the collector never walks) and travel
    to the merging process as they are, a tenth of their text's size.
    """

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.lines = 0
        self._buffer: list[Group] = []
        self._buffered = 0

    def put(self, group: Group) -> None:
        """Add the lines of one log line."""
        self._buffer.append(group)
        self._buffered += len(group[2])
        if self._buffered >= CHUNK_LINES:
            self._flush()

    def close(self) -> list[bytes]:
        """Compress what is buffered; return every chunk, in order."""
        if self._buffer:
            self._flush()
        return self.chunks

    def _flush(self) -> None:
        data = pickle.dumps(self._buffer, protocol=pickle.HIGHEST_PROTOCOL)
        self.chunks.append(zlib.compress(data, 1))
        self.lines += self._buffered
        self._buffer, self._buffered = [], 0


def unspool(chunks: list[bytes]) -> Iterator[Group]:
    """Yield the groups of `Spool` chunks, decompressing one at a time; each chunk is dropped
    from ``chunks`` once read, so that memory falls as the merge goes on."""
    for index, chunk in enumerate(chunks):
        chunks[index] = b""
        groups: list[Group] = pickle.loads(zlib.decompress(chunk))
        del chunk
        yield from groups


@attrs.define
class SpooledRun:
    """What one Dask task returns: its `Spool` chunks, counts and bad lines.

    Attributes:
        chunks: the partition's lines (`unspool` reads them).
        lines: how many lines the chunks hold.
        summary: the partition's counts.
        errors: its bad lines (`notify_core.partitioned.PartitionRun.errors`).
        peak_kib: the peak resident memory of the worker process that ran it.
        cpu_s: the CPU time of that process during the task (its Dask threads included).
    """

    chunks: list[bytes]
    lines: int
    summary: Summary
    errors: list[tuple[int, str, str, str | None]]
    peak_kib: int
    cpu_s: float


def replay_partition(
    path: str, policy: Policy, include_skips: bool, index: int, count: int
) -> SpooledRun:
    """Replay the log at ``path`` for partition ``index`` of ``count`` (one Dask task)."""
    started = time.process_time()
    partition = Partition(index, count)
    # An MD5 per candidate otherwise: a recipient's partition is asked once per fan-out.
    owns = functools.cache(partition.__call__)
    replay = Replay(policy=policy, include_skips=include_skips, reader=fastjson.reader(), owns=owns)
    spool = Spool()
    # The single replay's collector settings: a task holds the whole world's state too.
    with batch_gc():
        run = run_partition(replay, partition, lines_of(path), fastjson.dumps, spool.put)
    chunks = spool.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu = time.process_time() - started
    return SpooledRun(chunks, spool.lines, run.summary, run.errors, peak, cpu)


@contextmanager
def _client(scheduler: str | None, partitions: int | None) -> Iterator[tuple[Any, int]]:
    """Yield a connected client and the partition count (one per worker thread by default)."""
    try:
        import dask.config
        import distributed
    except ImportError:
        raise BadInput(INSTALL) from None
    # distributed has no complete type hints: its objects are used as Any.
    dist: Any = distributed
    Client, LocalCluster = dist.Client, dist.LocalCluster
    if scheduler is None:
        workers = partitions or 2
        # The worker's sampling profiler takes the GIL every 10 ms from a pure Python task.
        dask.config.set({"distributed.worker.profile.enabled": False})
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=":0",  # a free port: never a clash on a shared machine
            scheduler_kwargs={"dashboard": False},
            silence_logs=logging.ERROR,
        )
        try:
            with Client(cluster) as client:
                yield client, workers
        finally:
            cluster.close()
        return
    try:
        client = Client(scheduler, timeout="10s")
    except (OSError, ValueError, TypeError) as exc:
        raise BadInput(f"--scheduler {scheduler}: cannot connect: {exc}") from None
    with client:
        yield client, partitions or max(1, sum(client.nthreads().values()))


def replay_dask(
    path: str,
    policy: Policy,
    include_skips: bool,
    out: IO[str] | None,
    out_name: str,
    scheduler: str | None,
    partitions: int | None,
) -> tuple[Summary, list[EventError]]:
    """Replay ``path`` as ``partitions`` Dask tasks; write the merged lines to ``out``.

    Returns:
        The merged summary and the log's bad lines (in line order), for the caller to report.
    """
    if partitions is not None and partitions < 1:
        raise BadInput(f"--partitions must be at least 1, not {partitions}")
    with _client(scheduler, partitions) as (client, count):
        futures = [
            client.submit(replay_partition, path, policy, include_skips, index, count, pure=False)
            for index in range(count)
        ]
        try:
            runs: list[SpooledRun] = client.gather(futures)
        except BadInput:
            raise
        except Exception as exc:  # a worker's failure comes back as its own exception
            raise BadInput(f"the Dask replay failed: {type(exc).__name__}: {exc}") from None
    summary = merge_summaries([run.summary for run in runs])
    if out is not None:
        write = out.write
        with writing(out_name):
            for texts in merge_groups([unspool(run.chunks) for run in runs]):
                write("\n".join(texts))
                write("\n")
    return summary, [error_of(values) for values in runs[0].errors]


def check_options(
    log: str | None,
    dsn: str | None,
    compare_file: str | None,
    mail_dir: str | None,
    scheduler: str | None,
) -> None:
    """Refuse what ``--engine dask`` does not do, before anything runs.

    Raises:
        BadInput: standard input, ``--from-pg``, ``--compare``, ``--mail-dir``, or (on a
            local cluster) a log that is no file.
    """
    if dsn is not None or log is None or log == STDIN:
        raise BadInput("--engine dask reads a log file (every worker opens it): give its path")
    if compare_file is not None or mail_dir is not None:
        raise BadInput("--engine dask writes one replay's lines: not with --compare or --mail-dir")
    if scheduler is None and not os.path.isfile(log):
        raise BadInput(f"{log}: no such file")


def run_dask_replay(
    log: str,
    policy: Policy,
    include_skips: bool,
    out_file: str | None,
    scheduler: str | None,
    partitions: int | None,
    report: Callable[[str, EventError], None],
) -> tuple[Summary, bool]:
    """``notify replay --engine dask``: the CLI's side; bad lines are reported by ``report``
    (the single replay's, so that both engines print the same).

    Returns:
        The merged summary and whether the log had bad lines.
    """
    # A local cluster's workers open the path from their own directory: make it absolute.
    path = os.path.abspath(log) if scheduler is None else log
    if out_file is None:
        summary, errors = replay_dask(
            path, policy, include_skips, sys.stdout, "stdout", scheduler, partitions
        )
    else:
        with open_out(out_file) as out:
            summary, errors = replay_dask(
                path, policy, include_skips, out, out_file, scheduler, partitions
            )
    for error in errors:
        report(log, error)
    return summary, bool(errors)
