"""``notify worker``: the pipeline on PostgreSQL (needs the ``pg`` extra).

Runs the consumer of the event log, the due work and the push sends of `notify_pg.worker`
until SIGTERM or SIGINT, then finishes the round in progress and exits 0. Logs are JSON lines
(or text, ``--log-format text``) on stderr with rounds, partitions, counts, durations, kinds,
reasons and outcomes: never a person, a thread or a token. ``--metrics-port`` serves the
metrics of `notify_pg.metrics` for Prometheus (the ``metrics`` extra).
"""

from __future__ import annotations

import logging
import signal
import threading
from datetime import timedelta
from types import FrameType
from typing import Any

import click

from notify_cli.logs import LOG_FORMATS, JsonLines, TextLines, configure
from notify_cli.options import BadInput, Seconds, Utf8Text, dsn_option, read_policy, schema_option

#: The default of ``--partitions`` (`notify_pg.worker.WorkerConfig.partitions`, chosen by
#: bench/bench_pg_pipeline.py; docs/decisions.md). A literal: the pg extra may be missing.
DEFAULT_PARTITIONS = 2

__all__ = ["JsonLines", "TextLines", "work_counts", "worker"]


def _logging(level: str, log_format: str = "json") -> None:
    """The notify_pg loggers to stderr (`notify_cli.logs.configure`; other commands call it)."""
    configure(level, log_format)


@click.command()
@dsn_option
@schema_option
@click.option(
    "--host-schema",
    default="host",
    show_default=True,
    metavar="NAME",
    type=Utf8Text(),
    help="Schema of the reference host whose facts the pipeline reads.",
)
@click.option("--policy", "policy_file", metavar="FILE", help="TOML policy (defaults when absent).")
@click.option(
    "--poll-interval",
    type=Seconds(0.01, 3600),
    default=1.0,
    show_default=True,
    metavar="SECONDS",
    help="Pause when there is nothing to do (0.01 to 3600).",
)
@click.option(
    "--fake-provider",
    "fake_providers",
    multiple=True,
    metavar="NAME",
    type=Utf8Text(),
    help="Accept every push for provider NAME without sending (demo and tests; repeatable).",
)
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    default=DEFAULT_PARTITIONS,
    show_default=True,
    metavar="N",
    help="Recipient partitions of the consumer: up to N workers run consumer rounds side by "
    "side. Every worker of a database needs the same N; a new N is taken only while the "
    "consumer's cursors stand at one position.",
)
@click.option(
    "--partition-takeover",
    type=click.FloatRange(min=0.1),
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="A worker idle inside a transaction this long (frozen, paused) loses its session, so "
    "another worker takes its partition and due work.",
)
@click.option(
    "--statement-timeout",
    type=click.FloatRange(min=0.1),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="The longest one statement of the worker may run or wait for a lock.",
)
@click.option(
    "--instance-id",
    metavar="ID",
    type=Utf8Text(),
    help="The instance's id, carried by every push (seed 001 note 12; absent: left out).",
)
@click.option("--once", is_flag=True, help="Work until idle once, then exit.")
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
    help="Lowest level of the log lines on stderr.",
)
@click.option(
    "--log-format",
    type=click.Choice(LOG_FORMATS),
    default="json",
    show_default=True,
    help="Log lines on stderr as JSON objects or as text (time, level, message, key=value).",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    metavar="PORT",
    help="Serve Prometheus metrics at http://HOST:PORT/metrics (0: a free port, logged); "
    "needs the metrics extra.",
)
@click.option(
    "--metrics-host",
    default="127.0.0.1",
    show_default=True,
    metavar="ADDR",
    type=Utf8Text(),
    help="The address --metrics-port listens on (0.0.0.0: every interface).",
)
def worker(
    dsn: str,
    schema: str,
    host_schema: str,
    policy_file: str | None,
    poll_interval: float,
    fake_providers: tuple[str, ...],
    partitions: int,
    partition_takeover: float,
    statement_timeout: float,
    instance_id: str | None,
    once: bool,
    log_level: str,
    log_format: str,
    metrics_port: int | None,
    metrics_host: str,
) -> None:
    """Run the pipeline on PostgreSQL: consumer, due work and push sends, until stopped.

    Reads the event log of --schema in seq order, decides hints with the facts of the
    reference host in --host-schema, runs windows, delayed pushes and badge syncs when they
    come due and sends pushes through the registered providers (none unless --fake-provider:
    pushes of other providers are skipped as no_provider), and fans out the inbox's outbox
    into entries (the reference host's wiki; the purge once a day). SIGTERM or SIGINT finish the
    round in progress only and exit 0 (provider results not written yet are written first
    when the database takes them). A worker idle inside a transaction for
    --partition-takeover seconds loses its session, so another worker takes its partition.
    A failed round is logged with its SQLSTATE and PostgreSQL's message and shown by
    `notify db status`. This worker has no gateway: live connections are not read, so
    every active device gets its push (seed 001 note 10). Several workers may run on one
    database; with --partitions N their consumer rounds run side by side, each deciding for
    one partition of the recipients. With --metrics-port the worker serves its metrics
    (docs/operators.md) for Prometheus. A database that cannot be reached, a partition count
    that cannot be taken now or a metrics port that cannot be bound: a message on stderr and
    exit code 2.
    """
    try:
        import psycopg

        from notify_core.errors import NotifyError
        from notify_pg.inbox_fanout import InboxFanOut, InboxRound
        from notify_pg.push import FakeProvider
        from notify_pg.reference_host import ReferenceHost
        from notify_pg.reference_host.wiki import ReferenceWiki
        from notify_pg.worker import Worker, WorkerConfig
    except ImportError as exc:  # psycopg missing: the pg extra is not installed
        raise BadInput(
            f"worker needs the pg extra (pip install 'notify-engine[pg]'): {exc}"
        ) from None
    if not schema:
        raise BadInput("--schema must not be empty")
    policy = read_policy(policy_file)
    _logging(log_level, log_format)
    log = logging.getLogger("notify_pg.worker")
    config = WorkerConfig(
        poll_interval=timedelta(seconds=poll_interval),
        partitions=partitions,
        partition_takeover=timedelta(seconds=partition_takeover),
        statement_timeout=timedelta(seconds=statement_timeout),
        instance_id=instance_id or None,
    )
    metrics = _metrics(metrics_port, metrics_host) if metrics_port is not None else None

    def connect() -> psycopg.Connection[Any]:
        return psycopg.connect(
            dsn, autocommit=True, connect_timeout=10, application_name="notify worker"
        )

    if metrics is not None:
        metrics.observe_database(connect, schema, [config.consumer])
        log.info("metrics serving", extra={"fields": {"port": metrics.port}})
    work = Worker(
        connect,
        ReferenceHost(host_schema),
        schema=schema,
        policy=policy,
        config=config,
        providers=[FakeProvider(name) for name in fake_providers],
        rounds=[
            InboxRound(
                InboxFanOut(ReferenceWiki(host_schema), schema=schema, worker=config.consumer)
            )
        ],
        recorder=metrics.recorder if metrics is not None else None,
    )
    stop = threading.Event()

    def on_signal(number: int, frame: FrameType | None) -> None:
        log.info("stopping", extra={"fields": {"signal": signal.Signals(number).name}})
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        # Cursors first: a partition count that cannot be taken now is refused before any
        # round, with the positions named (PartitionError), not retried in the loop.
        work.prepare()
        if once:
            # A signal ends --once after the round in progress, too.
            while not stop.is_set() and work.run_once(stop=stop):
                pass
    except NotifyError as exc:
        work.close()
        if metrics is not None:
            metrics.close()
        raise BadInput(f"worker: {exc}") from None
    if once:
        work.close()
        if metrics is not None:
            metrics.close()
        return
    log.info(
        "worker started",
        extra={"fields": {"consumer": config.consumer, "partitions": config.partitions}},
    )
    work.run(stop)
    if metrics is not None:
        metrics.close()
    log.info("worker stopped", extra={"fields": work_counts(work)})


def _metrics(port: int, host: str) -> Any:
    """Start the metrics endpoint (`notify_pg.metrics.Metrics`), or exit 2 saying why not."""
    try:
        from notify_pg.metrics import Metrics
    except ImportError as exc:  # opentelemetry missing: the metrics extra is not installed
        raise BadInput(
            f"--metrics-port needs the metrics extra (pip install 'notify-engine[metrics]'): {exc}"
        ) from None
    try:
        return Metrics.start(port, host)
    except OSError as exc:
        raise BadInput(
            f"worker: cannot serve metrics on {host}:{port}: {exc.strerror or exc}"
        ) from None


def work_counts(work: Any) -> dict[str, Any]:
    """The worker's counters for the last log line (no person data)."""
    stats = work.stats
    return {
        "events": stats.events,
        "due": stats.due,
        "push_sends": stats.push_sends,
        "decisions": dict(stats.decisions),
        "skipped": dict(stats.skipped),
        "sent": dict(stats.sent),
        "provider_calls": stats.provider_calls,
        "failures": stats.failures,
    }
