"""``notify worker``: the pipeline on PostgreSQL (needs the ``pg`` extra).

Runs the loop of `notify_pg.worker.build` (the consumer of the event log, the due work and the
push sends of `notify_pg.push`, the inbox's fan-out and purge, the mail drain) until SIGTERM or
SIGINT, then finishes the round in progress and exits 0. Logs are JSON lines
(or text, ``--log-format text``) on stderr with rounds, partitions, counts, durations, kinds,
reasons and outcomes: never a person, a thread or a token. ``--metrics-port`` serves the
metrics of `notify_pg.ops.metrics` for Prometheus (the ``metrics`` extra).
"""

from __future__ import annotations

import importlib
import logging
import signal
import threading
from datetime import timedelta
from types import FrameType
from typing import Any, Final

import click

from notify_cli.install import install_hint
from notify_cli.logs import JsonLines, TextLines, configure
from notify_cli.options import (
    BadInput,
    Seconds,
    Utf8Text,
    dsn_option,
    log_format_option,
    log_level_option,
    metrics_host_option,
    read_bounded,
    read_policy,
    schema_option,
)
from notify_cli.signals import handling_stop_signals
from notify_cli.startup import require_schemas
from notify_core.values.errors import InvalidInput

#: The default of ``--partitions`` (`notify_pg.push.worker.WorkerConfig.partitions`, chosen by
#: bench/bench_pg_pipeline.py; docs/decisions.md). A literal: the pg extra may be missing.
DEFAULT_PARTITIONS = 2

__all__ = ["JsonLines", "TextLines", "load_inbox_host", "work_counts", "worker"]


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
    "--providers",
    "providers_file",
    metavar="FILE",
    help="TOML file of the push providers to send through (apns, fcm, webpush, unifiedpush): "
    "their ids, key files or variables, endpoints (docs/push-providers.md). Needs the push "
    "extra.",
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
    help="The instance's id, carried by every push (R3; absent: left out).",
)
@click.option(
    "--smtp-url",
    metavar="URL",
    type=Utf8Text(),
    help="Send the inbox's mails (the mail drain) through this SMTP server: "
    "smtp://[user:password@]host[:port][?starttls=1&timeout=S] or smtps://... "
    "(absent: no mail is sent; pending emails wait).",
)
@click.option(
    "--mail-from",
    metavar="ADDRESS",
    type=Utf8Text(),
    help="The From and envelope sender address of every mail (required with --smtp-url).",
)
@click.option(
    "--dkim-key",
    "dkim_key_file",
    metavar="FILE",
    help="PEM private key (RSA or Ed25519) to sign every mail with DKIM; the signature covers "
    "both List-Unsubscribe headers. Needs --dkim-selector.",
)
@click.option("--dkim-selector", metavar="NAME", type=Utf8Text(), help="The DKIM selector.")
@click.option(
    "--dkim-domain",
    metavar="DOMAIN",
    type=Utf8Text(),
    help="The DKIM signing domain (default: the domain of --mail-from).",
)
@click.option(
    "--mail-batch",
    type=click.IntRange(1, 1000),
    default=None,
    metavar="N",
    help="People whose due mails one pass of the drain claims (1 to 1000; default: the instance's "
    "mail batch size, which an administrator changes over HTTP, else 100).",
)
@click.option(
    "--mail-poll",
    type=Seconds(1, 3600),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="The longest pause between two looks at the mail queue; the drain otherwise wakes "
    "when the next email falls due (1 to 3600).",
)
@click.option(
    "--purge-every",
    type=Seconds(60, 366 * 86400),
    default=86400.0,
    show_default=True,
    metavar="SECONDS",
    help="The pause between two purges of the inbox (H3: entries past the host's retention, "
    "outbox events processed over a day ago); the first purge runs at the start "
    "(60 to 31622400).",
)
@click.option(
    "--inbox-host",
    "inbox_host",
    metavar="MODULE:FACTORY",
    type=Utf8Text(),
    help="The host's inbox ports: FACTORY (an importable MODULE's attribute) is called with "
    "--host-schema and returns an object with the methods of "
    "notify_pg.inbox.fanout.InboxHostPorts (with --smtp-url also those of "
    "notify_pg.mail.drain.MailHostPorts). Default: the reference host's wiki.",
)
@click.option("--once", is_flag=True, help="Work until idle once, then exit.")
@log_level_option
@log_format_option
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    metavar="PORT",
    help="Serve Prometheus metrics at http://HOST:PORT/metrics (0: a free port, logged); "
    "needs the metrics extra.",
)
@metrics_host_option
def worker(
    dsn: str,
    schema: str,
    host_schema: str,
    policy_file: str | None,
    poll_interval: float,
    fake_providers: tuple[str, ...],
    providers_file: str | None,
    partitions: int,
    partition_takeover: float,
    statement_timeout: float,
    instance_id: str | None,
    smtp_url: str | None,
    mail_from: str | None,
    dkim_key_file: str | None,
    dkim_selector: str | None,
    dkim_domain: str | None,
    mail_batch: int | None,
    mail_poll: float,
    purge_every: float,
    inbox_host: str | None,
    once: bool,
    log_level: str,
    log_format: str,
    metrics_port: int | None,
    metrics_host: str,
) -> None:
    """Run the pipeline on PostgreSQL: consumer, due work and push sends, until stopped.

    Reads the event log of --schema in seq order, decides hints with the facts of the
    reference host in --host-schema, runs windows, delayed pushes and badge syncs when they
    come due and sends pushes through the providers of --providers (and --fake-provider). The
    worker logs the providers it serves at start and warns once for each provider that has
    registrations but is not served: their pushes are skipped as no_provider. A provider's
    configuration fault (a bad key, a wrong team, a revoked account) pauses that provider with
    one log line and the alert metric. It fans out the inbox's outbox
    into entries (the reference host's wiki, or the host's own ports given by --inbox-host; the
    purge at the start and then every --purge-every seconds). SIGTERM or SIGINT finish the
    round in progress only and exit 0 (provider results not written yet are written first
    when the database takes them). A worker idle inside a transaction for
    --partition-takeover seconds loses its session, so another worker takes its partition.
    A failed round is logged with its SQLSTATE and PostgreSQL's message and shown by
    `notify db status`. This worker has no gateway: live connections are not read, so
    every active device gets its push (D4, D5; docs/decisions.md). Several workers may run on one
    database; with --partitions N their consumer rounds run side by side, each deciding for
    one partition of the recipients. With --smtp-url the worker also drains the mail queue
    (E4-E5): when the next email falls due it claims the due entries under a 600 s lease,
    sends one mail per person and site (signed with DKIM given --dkim-key), and marks them
    sent; a failed send is tried again 600 s later and given up after the third attempt. With
    --metrics-port the worker serves its metrics (docs/operators.md) for Prometheus. A
    database that cannot be reached, a schema or host schema missing or not migrated (the
    line names the command to run), a partition count that cannot be taken now, a bad mail
    option or a metrics port that cannot be bound: a message on stderr and exit code 2.
    """
    try:
        import psycopg

        from notify_core.values.errors import NotifyError
        from notify_pg.push.providers import FakeProvider
        from notify_pg.push.worker import WorkerConfig
        from notify_pg.worker.build import build_worker
        from notify_reference_host import ReferenceHost
        from notify_reference_host.wiki import ReferenceWiki
    except ImportError as exc:  # psycopg missing: the pg extra is not installed
        raise BadInput(f"worker needs the pg extra ({install_hint('pg')}): {exc}") from None
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
    mail_on = smtp_url is not None or mail_from is not None or dkim_key_file is not None
    wiki = (
        ReferenceWiki(host_schema)
        if inbox_host is None
        else load_inbox_host(inbox_host, host_schema, mail=mail_on)
    )
    mail = None
    if mail_on:
        mail = _mail_options(
            smtp_url,
            mail_from,
            _dkim(dkim_key_file, dkim_selector, dkim_domain, mail_from),
            batch=mail_batch,
            poll=timedelta(seconds=mail_poll),
        )
    elif dkim_selector is not None or dkim_domain is not None:
        raise BadInput("--dkim-selector and --dkim-domain need --dkim-key and --smtp-url")
    # Before the metrics port and any round: an unmigrated schema is one line and exit 2.
    require_schemas(
        dsn, schema, host_schema=host_schema, host_migrated=inbox_host is None, command="worker"
    )
    metrics = _metrics(metrics_port, metrics_host) if metrics_port is not None else None
    providers: list[Any] = [FakeProvider(name) for name in fake_providers]
    if providers_file is not None:
        try:
            providers += _providers(providers_file, config.max_age, metrics, set(fake_providers))
        except BadInput:
            if metrics is not None:
                metrics.close()
            raise

    def connect() -> psycopg.Connection[Any]:
        return psycopg.connect(
            dsn, autocommit=True, connect_timeout=10, application_name="notify worker"
        )

    if metrics is not None:
        metrics.observe_database(connect, schema, [config.consumer])
        log.info("metrics serving", extra={"fields": {"port": metrics.port}})
    built = build_worker(
        connect,
        ReferenceHost(host_schema),
        inbox=wiki,
        mail=mail,
        schema=schema,
        policy=policy,
        config=config,
        providers=providers,
        recorder=metrics.recorder if metrics is not None else None,
        purge_every=timedelta(seconds=purge_every),
    )
    stop = threading.Event()

    def on_signal(number: int, frame: FrameType | None) -> None:
        log.info("stopping", extra={"fields": {"signal": signal.Signals(number).name}})
        stop.set()

    with handling_stop_signals(on_signal):
        try:
            # Cursors first: a partition count that cannot be taken now is refused before any
            # round, with the positions named (PartitionError), not retried in the loop.
            built.prepare()
            from notify_pg.ops.status import warn_plain_http  # there: the pg extra is in
            from notify_pg.push.providers.announce import announce_providers

            warn_plain_http(connect, wiki, log)
            if once:
                announce_providers(connect, schema, providers, built.worker.push.unserved_warned)
                # A signal ends --once after the round in progress, too.
                built.run_until_idle(stop)
        except NotifyError as exc:
            built.close()
            _close_providers(providers)
            if metrics is not None:
                metrics.close()
            raise BadInput(f"worker: {exc}") from None
        if once:
            built.close()
            _close_providers(providers)
            if metrics is not None:
                metrics.close()
            return
        log.info(
            "worker started",
            extra={"fields": {"consumer": config.consumer, "partitions": config.partitions}},
        )
        announce_providers(connect, schema, providers, built.worker.push.unserved_warned)
        built.run(stop)
        _close_providers(providers)
        if metrics is not None:
            metrics.close()
        counts = work_counts(built.worker) | inbox_counts(built.fanout)
        log.info("worker stopped", extra={"fields": counts})


def _providers(path: str, max_age: timedelta, metrics: Any, fakes: set[str]) -> list[Any]:
    """The providers of ``--providers FILE`` (`notify_pg.push.providers.config`), or exit 2
    saying why not (never with a secret)."""
    try:
        from notify_pg.push.providers.config import ProviderConfigError, load_providers
    except ImportError as exc:  # httpx, h2 or PyJWT missing: the push extra is not installed
        raise BadInput(
            f"--providers needs the push extra (pip install 'notify-engine[push]'): {exc}"
        ) from None
    alerts = metrics.recorder if metrics is not None else None
    try:
        providers = load_providers(path, max_age=max_age, alerts=alerts)
    except ProviderConfigError as exc:
        raise BadInput(f"--providers {path}: {exc}") from None
    both = sorted({p.name for p in providers} & fakes)
    if both:
        _close_providers(providers)
        raise BadInput(f"--providers {path}: {both[0]} is also a --fake-provider")
    return providers


def _close_providers(providers: list[Any]) -> None:
    """Close the providers' connections (`notify_pg.push.providers.announce.close_providers`)."""
    from notify_pg.push.providers.announce import close_providers

    close_providers(providers)


def _metrics(port: int, host: str, service: str = "notify-worker") -> Any:
    """Start the metrics endpoint (`notify_pg.ops.metrics.Metrics`), or exit 2 saying why not."""
    try:
        from notify_pg.ops.metrics import Metrics
    except ImportError as exc:  # opentelemetry missing: the metrics extra is not installed
        raise BadInput(
            f"--metrics-port needs the metrics extra ({install_hint('metrics')}): {exc}"
        ) from None
    try:
        return Metrics.start(port, host, service)
    except OSError as exc:
        command = service.removeprefix("notify-")
        raise BadInput(
            f"{command}: cannot serve metrics on {host}:{port}: {exc.strerror or exc}"
        ) from None


#: The methods `notify_pg.inbox.fanout.InboxHostPorts` and `notify_pg.mail.drain.MailHostPorts`
#: ask of a host (literals: the pg extra may be missing when the options are read).
INBOX_PORTS: Final = (
    "inbox_site",
    "inbox_page",
    "inbox_comment",
    "inbox_watchers",
    "inbox_reviewers",
    "inbox_people",
    "inbox_groups",
    "inbox_settings",
    "inbox_email_delay",
    "inbox_retention_days",
    "inbox_users",
)
MAIL_PORTS: Final = (
    "inbox_site",
    "inbox_first_site",
    "inbox_people",
    "inbox_settings",
    "inbox_users",
)


def load_inbox_host(spec: str, host_schema: str, *, mail: bool = False) -> Any:
    """Return the inbox ports a host plugs in with ``--inbox-host MODULE:FACTORY``.

    ``FACTORY`` (a dotted attribute path inside ``MODULE``) is called with the host schema;
    what it returns must have every method of `INBOX_PORTS` (and of `MAIL_PORTS` when the
    worker sends mail). A bad spec, a module that does not import, a missing or failing
    factory or a missing method is one line (`BadInput`), naming the option.
    """
    module_name, colon, factory_path = spec.partition(":")
    if not colon or not module_name or not factory_path:
        raise BadInput(f"--inbox-host {spec!r}: give MODULE:FACTORY, e.g. mywiki.notify:ports")
    try:
        found: Any = importlib.import_module(module_name)
    except Exception as exc:  # any import failure of the host's module is the option's fault
        raise BadInput(
            f"--inbox-host {spec!r}: cannot import {module_name} ({type(exc).__name__}: {exc})"
        ) from None
    for name in factory_path.split("."):
        if not hasattr(found, name):
            raise BadInput(f"--inbox-host {spec!r}: {module_name} has no {factory_path}")
        found = getattr(found, name)
    if not callable(found):
        raise BadInput(f"--inbox-host {spec!r}: {factory_path} is not callable")
    try:
        ports = found(host_schema)
    except Exception as exc:
        raise BadInput(
            f"--inbox-host {spec!r}: {factory_path}({host_schema!r}) failed "
            f"({type(exc).__name__}: {exc})"
        ) from None
    wanted = INBOX_PORTS + (MAIL_PORTS if mail else ())
    missing = sorted({m for m in wanted if not callable(getattr(ports, m, None))})
    if missing:
        raise BadInput(
            f"--inbox-host {spec!r}: the ports lack {', '.join(missing)} "
            "(notify_pg.inbox.fanout.InboxHostPorts"
            + (", notify_pg.mail.drain.MailHostPorts)" if mail else ")")
        )
    return ports


def _dkim(
    key_file: str | None, selector: str | None, domain: str | None, mail_from: str | None
) -> Any:
    """The DKIM key of the options (``None`` without --dkim-key), tried once on a message."""
    if key_file is None:
        if selector is not None or domain is not None:
            raise BadInput("--dkim-selector and --dkim-domain need --dkim-key")
        return None
    from notify_pg.mail.smtp import DkimKey

    if not selector:
        raise BadInput("--dkim-key needs --dkim-selector")
    if not domain:
        domain = (mail_from or "").rpartition("@")[2]
        if not domain:
            raise BadInput("--dkim-key needs --dkim-domain (or a --mail-from with a domain)")
    private_key = read_bounded(key_file, "--dkim-key")  # bounded: /dev/zero never ends
    try:
        key = DkimKey(selector=selector, domain=domain, private_key=private_key)
        key.sign(b"From: a@" + domain.encode() + b"\r\nSubject: t\r\n\r\nt\r\n")
    except InvalidInput as exc:  # the key refused, with the reason (never the key itself)
        raise BadInput(f"--dkim-key {key_file}: {exc.message}") from None
    except Exception:  # dkimpy raises several kinds for a key it cannot use
        raise BadInput(
            f"--dkim-key {key_file}: not a PEM private key (RSA or Ed25519) that can sign"
        ) from None
    return key


def _mail_options(
    smtp_url: str | None,
    mail_from: str | None,
    dkim_key: Any,
    *,
    batch: int | None,
    poll: timedelta,
) -> Any:
    """The mail drain's options (`notify_pg.worker.build.MailOptions`); a bad option is one
    line and exit 2."""
    from notify_core.values.errors import NotifyError
    from notify_pg.mail.smtp import SmtpConfig, SmtpSender
    from notify_pg.worker.build import MailOptions

    if smtp_url is None:
        raise BadInput("--mail-from and --dkim-key need --smtp-url")
    if mail_from is None:
        raise BadInput("--smtp-url needs --mail-from (the sender address of every mail)")
    local, _at, domain = mail_from.rpartition("@")
    if not local or not domain or any(c.isspace() or c in "<>,;" for c in mail_from):
        raise BadInput(f"--mail-from {mail_from!r}: not a plain address like notify@example.org")
    try:
        smtp = SmtpConfig.from_url(smtp_url)
    except NotifyError as exc:
        raise BadInput(f"--smtp-url: {exc.message}") from None
    return MailOptions(
        sender=lambda: SmtpSender(smtp, dkim_key=dkim_key),
        address=mail_from,
        people=batch,
        poll=poll,
    )


def inbox_counts(fanout: Any) -> dict[str, Any]:
    """The inbox fan-out's counters for the last log line: events, entries, skipped
    candidates and dropped events by reason (no person data; none without a fan-out)."""
    if fanout is None:
        return {}
    stats = fanout.stats
    return {
        "inbox": {
            "events": stats.events,
            "entries": stats.entries,
            "skips": dict(sorted(stats.skips.items())),
            "dropped": dict(sorted(stats.dropped.items())),
        }
    }


def work_counts(work: Any) -> dict[str, Any]:
    """The worker's counters for the last log line (no person data)."""
    stats = work.stats
    return {
        "events": stats.events,
        "partition_events": stats.partition_events,
        "due": stats.due,
        "push_sends": stats.push_sends,
        "decisions": dict(stats.decisions),
        "skipped": dict(stats.skipped),
        "sent": dict(stats.sent),
        "provider_calls": stats.provider_calls,
        "failures": stats.failures,
    }
