"""The worker of a process, built from plain options: every wing's rounds in one loop.

`build_worker` assembles what ``notify worker`` runs, and what a host's own process can run
the same way: the push path's rounds (`notify_pg.push.worker.Worker`: held results,
consumer, due work, push sends), the inbox's fan-out and purge (`notify_pg.inbox.rounds`)
and, given `MailOptions`, the mail drain (`notify_pg.mail.rounds`), all on one connection in
the worker's `notify_pg.rounds.loop.Loop`. docs/embedding.md shows it in a few lines.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import timedelta

import attrs

from notify_core.hints.decide import Policy
from notify_core.values.errors import UsageError
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.seam import Conn
from notify_pg.inbox.fanout import InboxFanOut, InboxHostPorts
from notify_pg.inbox.rounds import FanOutRound, PurgeRound
from notify_pg.mail.drain import MailDrain, MailDrainConfig, MailHostPorts, MailSender
from notify_pg.mail.rounds import MailRound
from notify_pg.mail.secret import unsubscribe_secret
from notify_pg.push.context import Clock, HintSink, WorkerConfig, now_utc
from notify_pg.push.providers import PushProvider
from notify_pg.push.recorder import NullRecorder, Recorder
from notify_pg.push.worker import Worker, worker_connection
from notify_pg.rounds.loop import Loop, Round
from notify_pg.stores.ports import PipelineHostPorts

__all__ = ["MailOptions", "WorkerLoop", "build_worker"]


@attrs.frozen(kw_only=True)
class MailOptions:
    """How the worker sends the inbox's mails (the mail drain, E4-E5).

    Args:
        sender: opens a sender for a round that has a mail to send (e.g. ``lambda:
            SmtpSender(SmtpConfig.from_url(url))``, `notify_pg.mail.smtp`).
        address: the ``From`` and envelope sender address of every mail.
        people: people whose due mails one pass of the drain claims (1 to 1000; ``None``: the
            instance's mail batch size when the host keeps it, else 100).
        poll: the longest pause between two looks at the mail queue.
    """

    sender: Callable[[], MailSender]
    address: str
    people: int | None = None
    poll: timedelta = timedelta(minutes=1)


class WorkerLoop:
    """A built worker: its loop and the parts whose counters a host reads.

    Attributes:
        loop: every round, in order (`notify_pg.rounds.loop.Loop`; the worker's loop).
        worker: the push path and the loop (`Worker`: ``prepare``, ``stats``, ``close``).
        fanout: the inbox's fan-out (``stats``), ``None`` without inbox ports.
        mail: the mail drain, ``None`` without `MailOptions`.
    """

    def __init__(
        self,
        worker: Worker,
        fanout: InboxFanOut | None,
        mail: MailDrain | None,
    ) -> None:
        self.loop: Loop = worker.loop
        self.worker = worker
        self.fanout = fanout
        self.mail = mail

    def prepare(self) -> None:
        """Create or re-partition the consumer's cursors before any round (`Worker.prepare`).

        Raises:
            PartitionError: the partition count cannot be taken now.
            StorageError: PostgreSQL failed.
        """
        self.worker.prepare()

    def run_once(self, stop: threading.Event | None = None) -> int:
        """Run every round once; return the work done (0: idle).

        Raises:
            Exception: a round's failure (not retried here).
        """
        return self.loop.run_once(stop)

    def run_until_idle(self, stop: threading.Event | None = None) -> int:
        """Run passes until one does no work or ``stop`` is set; return the work done.

        Raises:
            Exception: a round's failure (not retried here).
        """
        stop = stop if stop is not None else threading.Event()
        total = 0
        while not stop.is_set():
            work = self.loop.run_once(stop)
            total += work
            if not work:
                break
        return total

    def run(self, stop: threading.Event) -> None:
        """Run until ``stop`` is set, failures retried (`Loop.run`); everything is closed at
        the end."""
        self.loop.run(stop)

    def close(self) -> None:
        """Close the rounds and the connection (after `run_once` or `run_until_idle`)."""
        self.loop.close()


def build_worker(
    connect: Callable[[], Conn],
    host: PipelineHostPorts,
    *,
    inbox: InboxHostPorts | None = None,
    mail: MailOptions | None = None,
    schema: str = DEFAULT_SCHEMA,
    policy: Policy | None = None,
    config: WorkerConfig | None = None,
    providers: Sequence[PushProvider] = (),
    sink: HintSink | None = None,
    recorder: Recorder | None = None,
    purge_every: timedelta = timedelta(days=1),
    clock: Clock = now_utc,
) -> WorkerLoop:
    """Build the loop of a worker process from plain options.

    Args:
        connect: opens a new connection in autocommit mode (called again after a failure).
        host: the host's pipeline ports (`notify_pg.stores.ports.PipelineHostPorts`).
        inbox: the host's inbox ports (`notify_pg.inbox.fanout.InboxHostPorts`; with
            ``mail`` also `notify_pg.mail.drain.MailHostPorts`); ``None``: no inbox rounds.
        mail: how mails are sent; ``None``: no mail drain (pending emails wait).
        schema: the library's schema.
        policy: the instance's policy.
        config: the push worker's settings (`WorkerConfig`; its ``poll_interval`` is the
            loop's idle pause).
        providers: the push providers.
        sink: the host's hand-off of every hint (`HintSink`).
        recorder: receives the metric edges (`notify_pg.ops.metrics.Metrics.recorder`).
        purge_every: the pause between two purges of the inbox (H3); the first pass purges.
        clock: the current instant (due work, push sends, the purge, the mail drain's wake).

    Returns:
        The built worker (`WorkerLoop`): ``prepare()``, then ``run(stop)``.

    Raises:
        UsageError: ``mail`` without ``inbox`` (the drain sends the inbox's entries).
    """
    if mail is not None and inbox is None:
        raise UsageError("mail_without_inbox", "mail needs the host's inbox ports (inbox=...)")
    config = config or WorkerConfig()
    recorder = recorder or NullRecorder()
    # The inbox's and the mail's rounds run on the worker's connection: it is built first.
    connection = worker_connection(connect, config, schema=schema)
    rounds: list[Round] = []
    fanout: InboxFanOut | None = None
    drain: MailDrain | None = None
    if inbox is not None:
        fanout = InboxFanOut(inbox, schema=schema, worker=config.consumer)
        rounds.append(FanOutRound(fanout, connection, recorder))
        rounds.append(PurgeRound(fanout, connection, recorder, every=purge_every, clock=clock))
    if mail is not None and fanout is not None:
        mail_host: MailHostPorts = inbox  # type: ignore[assignment]
        drain = MailDrain(
            mail_host,
            mail.sender,
            secret=lambda conn: unsubscribe_secret(conn, schema=schema),
            config=MailDrainConfig(sender=mail.address, people=mail.people),
            schema=schema,
            clock=clock,
        )
        mail_round = MailRound(drain, connection, recorder, poll=mail.poll)
        # The fan-out of this worker tells the drain when the emails it queued fall due.
        fanout.on_written = lambda rows: mail_round.notice([r.email_after for r in rows])
        rounds.append(mail_round)
    worker = Worker(
        connection,
        host,
        schema=schema,
        policy=policy,
        config=config,
        clock=clock,
        providers=providers,
        sink=sink,
        rounds=rounds,
        recorder=recorder,
    )
    return WorkerLoop(worker, fanout, drain)
