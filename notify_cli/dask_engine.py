"""``notify replay --engine dask``: one recipient partition per task on a Dask cluster.

Each task replays the whole log deciding for one partition (`notify_core.replay.partitioned`) and
sends its lines grouped by log line, as compressed chunks (`Spool`: LZ4, else zlib), through a
`distributed.Queue` of its own as it makes them; this process merges the chunks while the
tasks run (one chunk per partition decompressed at a time, a log line written once every
partition has passed it) into the single replay's output, and the tasks' summaries into its
summary. Without ``--scheduler`` a
`distributed.LocalCluster` of one single-threaded process per partition runs on this
machine (loopback only), and the chunks go through files in a temporary directory, the queue
carrying only their names; with one, every worker must read the log at the same path
(docs/replay.md).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import pickle
import resource
import sys
import tempfile
import time
import uuid
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any, Final

import attrs
import orjson

from notify_cli import fastjson
from notify_cli.batch import batch_gc
from notify_cli.install import install_hint
from notify_cli.options import (
    STDIN,
    BadInput,
    lines_of,
    open_out,
    writing,
)
from notify_core.events.log import EventError
from notify_core.hints.decide import Policy
from notify_core.replay.partitioned import (
    Group,
    error_of,
    merge_groups,
    merge_summaries,
    run_partition,
)
from notify_core.replay.partitions import Partition, partition_of
from notify_core.replay.run import Replay, Summary

__all__ = [
    "LOCAL_CLUSTER_CONFIG",
    "Spool",
    "SpooledRun",
    "StreamedRuns",
    "check_options",
    "decompress",
    "even_owners",
    "install",
    "replay_dask",
    "replay_partition",
    "run_dask_replay",
    "run_partitions",
    "unspool",
]


#: What the CLI says when Dask is missing.
def install() -> str:
    """What `--engine dask` says when the Dask extra is missing: the command that adds it."""
    return f"--engine dask needs the Dask extra: {install_hint('dask')}"


#: Lines per compressed chunk: big enough for the codec to find the lines' repetitions, small
#: enough that the merge holds little decompressed (one chunk per partition).
CHUNK_LINES: Final = 20_000


#: The chunk number that wakes the merge when a task failed (it waits for chunks unbounded:
#: a timed-out wait of a queue is logged as an error by the scheduler).
FAILED: Final = -1


#: Dask settings for the local cluster (its workers get them from this process). Its tasks
#: are few and long and its processes share the machine's cores: what a cluster does on its
#: own every few milliseconds only takes CPU from them. Idle, a default local cluster of two
#: workers took 1.4 s of CPU in this process and 1.2 s in its workers per 30 s, this one 0.2 s
#: and 0.2 s (docs/replay.md).
LOCAL_CLUSTER_CONFIG: Final[dict[str, object]] = {
    # The sampling profiler takes the GIL every 10 ms from a pure Python task.
    "distributed.worker.profile.enabled": False,
    # The event loop's "unresponsive" check, every 20 ms by default.
    "distributed.admin.tick.interval": "1s",
    # CPU and memory figures for a dashboard nobody looks at, every 500 ms by default.
    "distributed.admin.system-monitor.interval": "5s",
    # The memory limit's check (a task holds ~250 MB), every 100 ms by default.
    "distributed.worker.memory.monitor-interval": "5s",
    # One task per worker: nothing to steal (it looks every 100 ms by default).
    "distributed.scheduler.work-stealing": False,
}


#: The first bytes of an LZ4 frame (a zlib stream begins with 0x78).
LZ4_MAGIC: Final = b"\x04\x22\x4d\x18"


def _zlib_compress(data: bytes) -> bytes:
    return zlib.compress(data, 1)


def _codec() -> Callable[[bytes], bytes]:
    try:
        import lz4.frame
    except ImportError:
        return _zlib_compress
    compress: Callable[[bytes], bytes] = lz4.frame.compress
    return compress


_compress: Final = _codec()


def decompress(chunk: bytes) -> bytes:
    """Decompress a `Spool` chunk, LZ4 or zlib (whichever made it)."""
    if chunk[:4] == LZ4_MAGIC:
        try:
            import lz4.frame
        except ImportError:
            raise BadInput(f"the Dask workers send LZ4 chunks: {install()}") from None
        data: bytes = lz4.frame.decompress(chunk)
        return data
    return zlib.decompress(chunk)


class Spool:
    """A partition's groups as compressed pickles of about `CHUNK_LINES` lines each.

    The codec is LZ4's frame format when the ``lz4`` package is there (the ``dask`` extra
    installs it: it compresses 4x faster than zlib's fastest level, decompresses 2x faster,
    for chunks about 30 % larger), zlib otherwise; `decompress` tells them by their header.

    A task's lines are kept compressed (bytes, which the collector never walks) and travel
    to the merging process as they are, a tenth of their text's size.

    Args:
        send: called with each chunk's number (from 0) and the chunk as soon as it is made;
            ``None`` keeps the chunks in `chunks` instead.
    """

    def __init__(self, send: Callable[[int, bytes | None], object] | None = None) -> None:
        self.chunks: list[bytes] = []
        self.sent = 0
        self.lines = 0
        self.size = 0
        self._send = send
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
        chunk = _compress(data)
        self.size += len(chunk)
        if self._send is None:
            self.chunks.append(chunk)
        else:
            self._send(self.sent, chunk)
            self.sent += 1
        self.lines += self._buffered
        self._buffer, self._buffered = [], 0


def unspool(chunks: list[bytes]) -> Iterator[Group]:
    """Yield the groups of `Spool` chunks, decompressing one at a time; each chunk is dropped
    from ``chunks`` once read, so that memory falls as the merge goes on."""
    for index, chunk in enumerate(chunks):
        chunks[index] = b""
        groups: list[Group] = pickle.loads(decompress(chunk))
        del chunk
        yield from groups


@attrs.define
class SpooledRun:
    """What one Dask task returns: its `Spool` chunks (unless sent), counts and bad lines.

    Attributes:
        chunks: the partition's lines (`unspool` reads them); empty when the task sent them
            through a queue as it made them.
        lines: how many lines the chunks hold.
        summary: the partition's counts.
        errors: its bad lines (`notify_core.replay.partitioned.PartitionRun.errors`).
        chunk_bytes: the size of its chunks (sent or not).
        peak_kib: the peak resident memory of the worker process that ran it.
        cpu_s: the CPU time of that process during the task (its Dask threads included).
    """

    chunks: list[bytes]
    lines: int
    summary: Summary
    errors: list[tuple[int, str, str, str | None]]
    chunk_bytes: int
    peak_kib: int
    cpu_s: float


def even_owners(path: str, count: int) -> dict[str, int]:
    """Assign people to ``count`` tasks so that each gets about the same work; one quick pass.

    A person's work in a replay follows the fan-outs they are in, and those follow the
    messages of the channels they can read: the estimate of a person is the number of
    messages of the channels granted to them (directly or through a space), the whole log
    counted. People are taken heaviest first, each given to the task with the least
    estimate so far (the lowest index on a tie). Anyone not named (a DM participant, a person
    without grants) stays in their `partition_of` partition.

    Any assignment gives the same merged output (each person's lines come from one task):
    this only decides which task ends first. So the pass reads the lines with orjson and
    takes what it can: a line it cannot read counts for nothing here, and the replay reports
    it. On the 1,000,000-event log it costs 2 s of CPU and evened the two tasks' CPU from
    171 : 198 s (MD5) to 181 : 186 s (docs/replay.md).

    Example:
        >>> even_owners("/dev/null", 2)
        {}
    """
    messages: Counter[str] = Counter()
    granted: defaultdict[str, set[str]] = defaultdict(set)
    space_grants: defaultdict[str, set[str]] = defaultdict(set)
    channels_of: defaultdict[str, set[str]] = defaultdict(set)
    loads = orjson.loads
    with open(path, "rb") as file:
        for line in file:
            try:
                event = loads(line)
                kind, payload = event.get("type"), event.get("payload")
                if kind == "message.created":
                    scope = event.get("scope")
                    channel = scope.get("channel") if type(scope) is dict else None
                    if type(channel) is str:
                        messages[channel] += 1
                elif kind == "access.granted":
                    target = payload["target"]
                    mine = granted if target["kind"] == "channel" else space_grants
                    mine[str(payload["user"])].add(str(target["id"]))
                elif kind == "channel.created" and "space" in payload:
                    channels_of[str(payload["space"])].add(str(payload["channel"]))
            except (ValueError, TypeError, KeyError, AttributeError):
                continue  # not an event this pass can read: the replay says what is wrong

    def estimate(person: str) -> int:
        channels = set(granted.get(person, ()))
        for space in space_grants.get(person, ()):
            channels |= channels_of.get(space, set())
        return sum(messages[channel] for channel in channels)

    weights = {person: estimate(person) for person in granted.keys() | space_grants.keys()}
    totals = [0] * count
    owners: dict[str, int] = {}
    for person in sorted(weights, key=lambda person: (-weights[person], person)):
        task = totals.index(min(totals))
        owners[person] = task
        totals[task] += weights[person]
    return owners


def replay_partition(
    path: str,
    policy: Policy,
    include_skips: bool,
    index: int,
    count: int,
    queue: str = "",
    spool_dir: str = "",
    owners: Mapping[str, int] | None = None,
) -> SpooledRun:
    """Replay the log at ``path`` for partition ``index`` of ``count`` (one Dask task).

    ``queue``: the name of a `distributed.Queue` that gets each chunk as ``[number, chunk]``
    as soon as it is made, then ``[chunks, None]`` at the end (`run_partitions` reads it);
    empty: the chunks come back in `SpooledRun.chunks`. ``spool_dir`` (with ``queue``): a
    directory the merging process reads too, where each chunk is written as a file whose
    path the queue gets instead of the chunk (`spool_file`). ``owners``: the task of each
    person named (`even_owners`; the others by `partition_of`); ``None``: the recipient
    partition ``index`` of ``count``.
    """
    started = time.process_time()
    send = None
    if queue:
        from distributed import Queue

        put: Callable[[object], object] = Queue(queue).put  # type: ignore[no-untyped-call]

        def send(number: int, chunk: bytes | None) -> None:
            if spool_dir and chunk is not None:
                put([number, spool_file(spool_dir, index, number, chunk)])
            else:
                put([number, chunk])

    partition = Partition(index, count)
    if owners is None:
        asked: Callable[[str], bool] = partition.__call__
    else:
        task_of = owners.get

        def asked(person: str) -> bool:
            task = task_of(person)
            return (task if task is not None else partition_of(person, count)) == index

    # An MD5 per candidate otherwise: a recipient's partition is asked once per fan-out.
    owns = functools.cache(asked)
    replay = Replay(policy=policy, include_skips=include_skips, reader=fastjson.reader(), owns=owns)
    spool = Spool(send)
    # The single replay's collector settings: a task holds the whole world's state too.
    with batch_gc():
        run = run_partition(replay, partition, lines_of(path), fastjson.dumps, spool.put)
    chunks = spool.close()
    if send is not None:
        send(spool.sent, None)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu = time.process_time() - started
    return SpooledRun(chunks, spool.lines, run.summary, run.errors, spool.size, peak, cpu)


def spool_file(directory: str, index: int, number: int, chunk: bytes) -> str:
    """Write chunk ``number`` of task ``index`` into ``directory``; return the file's path.

    On a local cluster the chunks go through files: through the queue each would be received
    by the scheduler, then sent to the client and received again, all in the merging
    process, which shares the machine's cores with the tasks. The file appears whole under
    its name (written aside, then renamed): a task Dask runs again writes the same chunks
    again.
    """
    name = os.path.join(directory, f"{index}-{number}")
    with open(name + ".part", "wb") as file:
        file.write(chunk)
    os.replace(name + ".part", name)
    return name


def _read_spooled(name: str) -> bytes:
    """The chunk of a `spool_file` path, which is deleted once read."""
    with open(name, "rb") as file:
        chunk = file.read()
    os.unlink(name)
    return chunk


@contextmanager
def _client(scheduler: str | None, partitions: int | None) -> Iterator[tuple[Any, int, str]]:
    """Yield a connected client, the partition count (one per worker thread by default) and
    a spool directory on a local cluster (empty with ``scheduler``: its workers may be
    other machines)."""
    try:
        import dask.config
        import distributed
    except ImportError:
        raise BadInput(install()) from None
    # distributed has no complete type hints: its objects are used as Any.
    dist: Any = distributed
    Client, LocalCluster = dist.Client, dist.LocalCluster
    if scheduler is None:
        workers = partitions or 2
        dask.config.set(LOCAL_CLUSTER_CONFIG)
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
            with (
                Client(cluster) as client,
                tempfile.TemporaryDirectory(
                    prefix="notify-replay-", ignore_cleanup_errors=True
                ) as spool_dir,
            ):
                yield client, workers, spool_dir
        finally:
            cluster.close()
        return
    try:
        client = Client(scheduler, timeout="10s")
    except (OSError, ValueError, TypeError) as exc:
        raise BadInput(f"--scheduler {scheduler}: cannot connect: {exc}") from None
    with client:
        yield client, partitions or max(1, sum(client.nthreads().values())), ""


@attrs.define
class StreamedRuns:
    """What `run_partitions` gives: each task's `SpooledRun` and when the merge saw its end.

    Attributes:
        runs: the tasks' runs, in partition order (their chunks empty: they were streamed).
        ended: `time.perf_counter` when the merge read each task's last chunk (for all but
            the slowest task, when the merge caught up with it: it waits for the slowest).
        finished: `time.perf_counter` when this process learnt each task had ended.
    """

    runs: list[SpooledRun]
    ended: list[float]
    finished: list[float]


def _failed(futures: list[Any]) -> None:
    """Raise `BadInput` for the first task that failed, if any did."""
    for future in futures:
        if future.status in ("error", "cancelled", "lost"):
            _result(future)


def _result(future: Any) -> SpooledRun:
    """A task's run, or `BadInput` for its failure (a worker's failure is its own exception)."""
    try:
        run: SpooledRun = future.result()
    except BadInput:
        raise
    except Exception as exc:
        raise BadInput(f"the Dask replay failed: {type(exc).__name__}: {exc}") from None
    return run


def _streamed(queue: Any, futures: list[Any], ended: list[float], index: int) -> Iterator[Group]:
    """Yield the groups task ``index`` sends through ``queue``, as they come.

    A chunk numbered below the next one expected is skipped: a task that Dask runs again (its
    worker was lost) sends the same chunks again, from the first.
    """
    expected = 0
    while True:
        try:
            number, chunk = queue.get()
        except OSError as exc:  # the scheduler is gone (not a failed write: keep them apart)
            raise BadInput(f"the Dask replay failed: {type(exc).__name__}: {exc}") from None
        if number == FAILED:
            _failed(futures)
            continue
        if number < expected:
            continue
        if chunk is None:
            ended[index] = time.perf_counter()
            return
        expected += 1
        if type(chunk) is str:  # a `spool_file` path
            chunk = _read_spooled(chunk)
        groups: list[Group] = pickle.loads(decompress(chunk))
        del chunk
        yield from groups


def run_partitions(
    client: Any,
    path: str,
    policy: Policy,
    include_skips: bool,
    count: int,
    write: Callable[[str], object] | None,
    spool_dir: str = "",
    owners: Mapping[str, int] | None = None,
) -> StreamedRuns:
    """Run ``count`` partition tasks on ``client``'s cluster and merge their lines as they come.

    ``write`` gets the merged output, a log line's lines at a time, while the tasks still run
    (``None``: the lines are read and dropped). ``spool_dir``: a directory that this process
    and every worker share (a local cluster's), through which the chunks travel as files
    (`spool_file`); empty: through the queues. ``owners``: who each task decides for
    (`replay_partition`); ``None``: `even_owners` of the log when this machine can read its
    path (a remote cluster's may be elsewhere), else the MD5 partitions.

    Raises:
        BadInput: a task failed (its own `BadInput` as it is).
    """
    from distributed import Queue

    if owners is None and count > 1 and os.path.isfile(path):
        owners = even_owners(path, count)
    token = uuid.uuid4().hex
    names = [f"notify-replay-{token}-{index}" for index in range(count)]
    queues = [Queue(name, client=client) for name in names]  # type: ignore[no-untyped-call]
    futures = [
        client.submit(
            replay_partition,
            path,
            policy,
            include_skips,
            index,
            count,
            names[index],
            spool_dir,
            owners,
            pure=False,
        )
        for index in range(count)
    ]

    finished = [0.0] * count

    def wake(future: Any) -> None:
        finished[futures.index(future)] = time.perf_counter()
        if future.status != "finished":
            with contextlib.suppress(Exception):  # only a wake-up: the merge finds the cause
                for queue in queues:
                    queue.put([FAILED, None])  # type: ignore[no-untyped-call]

    for future in futures:
        future.add_done_callback(wake)
    ended = [0.0] * count
    parts = [_streamed(queues[index], futures, ended, index) for index in range(count)]
    # Unpickling makes a key tuple per line: the default thresholds collect every 700.
    with batch_gc():
        if write is None:
            for _ in merge_groups(parts):
                pass
        else:
            for texts in merge_groups(parts):
                write("\n".join(texts))
                write("\n")
    runs = [_result(future) for future in futures]
    for queue in queues:
        queue.close()  # type: ignore[no-untyped-call]
    return StreamedRuns(runs, ended, finished)


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
    with _client(scheduler, partitions) as (client, count, spool_dir):
        if out is None:
            runs = run_partitions(client, path, policy, include_skips, count, None, spool_dir).runs
        else:
            with writing(out_name):
                runs = run_partitions(
                    client, path, policy, include_skips, count, out.write, spool_dir
                ).runs
    summary = merge_summaries([run.summary for run in runs])
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
