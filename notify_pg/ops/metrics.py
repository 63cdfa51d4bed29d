"""Metrics of the pipeline on PostgreSQL on the OpenTelemetry API, served for Prometheus.

Needs the ``metrics`` extra (``opentelemetry-api``, ``opentelemetry-sdk``,
``opentelemetry-exporter-prometheus``); nothing else in the library imports this module, and
the core never does. Three sources feed the instruments (docs/operators.md lists them; the
skip reasons are those of D10):

- `OtelRecorder`, the worker's `notify_pg.push.recorder.Recorder`: counters and histograms of what
  the worker did (hints by kind and decision, pushes sent and skipped by reason, send
  durations, retries, deactivations, rounds);
- `DatabaseGauges`: observable gauges read from the database when Prometheus scrapes
  (active registrations, consumer lag per partition, due work waiting, the outbox, mails);
- `HttpMetrics`, for ``notify serve``: requests by method, route template and status, and
  their durations.

Every label value comes from a closed vocabulary (kinds, decisions, reasons, outcomes,
provider names, round and state names, partition numbers, the consumer's name): never a
person, a thread, a message, a token or an address.

Example:
    >>> metrics = Metrics.start(port=0)  # doctest: +SKIP
    >>> worker = Worker(connect, host, recorder=metrics.recorder)  # doctest: +SKIP
    >>> metrics.observe_database(connect, schema="notify", consumer="push")  # doctest: +SKIP
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import Any

import attrs
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import CallbackOptions, Meter, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from prometheus_client import CollectorRegistry, generate_latest, start_http_server

from notify_core.hints.decide import METRIC_REASONS, Collect, Send, Skip
from notify_core.hints.pipeline import Hint
from notify_pg.db.seam import Conn, Seam

__all__ = ["DatabaseGauges", "HttpMetrics", "Metrics", "OtelRecorder"]

_log = logging.getLogger("notify_pg.metrics")

#: The span of the sent and failed mails (E4, E5), as ``notify db status`` counts them.
MAIL_WINDOW = timedelta(hours=24)

#: Bucket bounds of the durations (seconds): provider calls take milliseconds to seconds.
DURATION_BOUNDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class OtelRecorder:
    """The worker's `notify_pg.push.recorder.Recorder` on an OpenTelemetry meter.

    Args:
        meter: where the instruments are created (`Metrics.meter`, or any meter of a host
            that runs its own OpenTelemetry SDK).
    """

    def __init__(self, meter: Meter) -> None:
        self._hints = meter.create_counter(
            "notify.hints.decided",
            unit="{hint}",
            description="Hint decisions by kind and decision (send, collect, skip).",
        )
        self._skipped = meter.create_counter(
            "notify.push.skipped",
            unit="{push}",
            description="Hints decided none and push sends ended without a call, by the "
            "metric reason of D10.",
        )
        self._sent = meter.create_counter(
            "notify.push.sent",
            unit="{push}",
            description="Provider results written, by provider and outcome (R1).",
        )
        self._duration = meter.create_histogram(
            "notify.push.send.duration",
            unit="s",
            description="Duration of one provider call, by provider.",
            explicit_bucket_boundaries_advisory=DURATION_BOUNDS,
        )
        self._retries = meter.create_counter(
            "notify.push.retries",
            unit="{push}",
            description="Push sends scheduled again after a provider result, by provider.",
        )
        self._deactivations = meter.create_counter(
            "notify.push.deactivations",
            unit="{registration}",
            description="Registrations deactivated by a provider result, by provider and reason.",
        )
        self._rounds = meter.create_counter(
            "notify.worker.rounds",
            unit="{round}",
            description="Worker rounds that did work, by round.",
        )
        self._round_duration = meter.create_histogram(
            "notify.worker.round.duration",
            unit="s",
            description="Duration of the worker's rounds that did work, by round.",
            explicit_bucket_boundaries_advisory=DURATION_BOUNDS,
        )
        self._round_work = meter.create_counter(
            "notify.worker.work",
            unit="{item}",
            description="Items handled by the worker's rounds (events, due work, push sends, "
            "outbox work), by round.",
        )
        self._failures = meter.create_counter(
            "notify.worker.round.failures",
            unit="{round}",
            description="Worker rounds that failed and rolled back, by round.",
        )
        self._paused = meter.create_up_down_counter(
            "notify.push.provider.paused",
            unit="{provider}",
            description="1 while a provider is paused by a configuration fault (alert on it), "
            "by provider.",
        )
        self._faults = meter.create_counter(
            "notify.push.provider.faults",
            unit="{pause}",
            description="Pauses of a provider by a configuration fault, by provider and reason.",
        )

    def hints(self, hints: Sequence[Hint]) -> None:
        """Count each hint by kind and decision, and each skip by its metric reason (D10)."""
        decided: Counter[tuple[str, str]] = Counter()
        skipped: Counter[str] = Counter()
        for hint in hints:
            decision = hint.decision
            if isinstance(decision, Skip):
                name = "skip"
                reason = METRIC_REASONS.get(decision.reason)
                if reason is not None:
                    skipped[reason] += 1
            elif isinstance(decision, Collect):
                name = "collect"
            elif isinstance(decision, Send):
                name = "send"
            else:  # pragma: no cover - the three decisions are all there are
                continue
            decided[hint.kind.value, name] += 1
        for (kind, name), count in decided.items():
            self._hints.add(count, {"notify.kind": kind, "notify.decision": name})
        for reason, count in skipped.items():
            self._skipped.add(count, {"notify.reason": reason})

    def push_skipped(self, reason: str, kind: int) -> None:
        """Count a push send that ended without a provider call."""
        self._skipped.add(1, {"notify.reason": reason})

    def send_duration(self, provider: str, seconds: float) -> None:
        """Record one provider call's duration."""
        self._duration.record(seconds, {"notify.push.provider": provider})

    def push_result(
        self, provider: str, kind: int, outcome: str, action: str, deactivated: str | None
    ) -> None:
        """Count a written provider result, its retry and its deactivation."""
        self._sent.add(1, {"notify.push.provider": provider, "notify.outcome": outcome})
        if action == "retry":
            self._retries.add(1, {"notify.push.provider": provider})
        if deactivated is not None:
            attributes = {"notify.push.provider": provider, "notify.reason": str(deactivated)}
            self._deactivations.add(1, attributes)

    def round_done(self, round_name: str, work: int, seconds: float) -> None:
        """Count a round that did work, its items and its duration."""
        attributes = {"notify.round": round_name}
        self._rounds.add(1, attributes)
        self._round_work.add(work, attributes)
        self._round_duration.record(seconds, attributes)

    def round_failed(self, round_name: str) -> None:
        """Count a failed round."""
        self._failures.add(1, {"notify.round": round_name})

    def provider_paused(self, provider: str, reason: str) -> None:
        """A provider paused by a configuration fault (`notify_pg.push.providers.health`)."""
        self._paused.add(1, {"notify.push.provider": provider})
        self._faults.add(1, {"notify.push.provider": provider, "notify.reason": reason})

    def provider_resumed(self, provider: str) -> None:
        """A paused provider answered without a fault again."""
        self._paused.add(-1, {"notify.push.provider": provider})


#: Bucket bounds of request durations (seconds): most answers take a few milliseconds.
REQUEST_BOUNDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class HttpMetrics:
    """Per-request metrics of ``notify serve`` (`notify_pg.http.app.ReferenceApp`'s
    ``on_request`` hook): requests by method, route template and status, and their durations
    by method and route. The route is the template
    (``/sites/<site>/notifications/<entry>/read``, or ``unmatched``), never the path as sent.

    Args:
        meter: where the instruments are created (`Metrics.meter`).
    """

    def __init__(self, meter: Meter) -> None:
        self._requests = meter.create_counter(
            "notify.http.requests",
            unit="{request}",
            description="HTTP requests answered, by method, route and status.",
        )
        self._duration = meter.create_histogram(
            "notify.http.request.duration",
            unit="s",
            description="Duration of one HTTP request until its answer, by method and route.",
            explicit_bucket_boundaries_advisory=REQUEST_BOUNDS,
        )

    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one answered request and record its duration."""
        attributes: dict[str, str | int] = {"http.request.method": method, "http.route": route}
        self._duration.record(seconds, attributes)
        attributes["http.response.status_code"] = status
        self._requests.add(1, attributes)


@attrs.frozen
class _Snapshot:
    registrations: tuple[tuple[str, int], ...]
    lag: tuple[tuple[str, int, int, float], ...]
    due: dict[str, int]
    outbox: tuple[int, float]
    mails: dict[str, int]


class DatabaseGauges:
    """Observable gauges read from the database at each scrape (one read serves them all).

    Args:
        meter: where the gauges are created.
        connect: opens a connection in autocommit mode (again after a failure).
        schema: the library's schema.
        consumers: the consumers whose partitions are shown (all when empty).
        max_age: a read younger than this serves the next scrape too (the gauges of one
            scrape come from one read).

    A read that fails (PostgreSQL unreachable) is logged with its error type only and the
    gauges report nothing for that scrape; the counter ``notify.metrics.read_failures``
    counts it.
    """

    def __init__(
        self,
        meter: Meter,
        connect: Callable[[], Conn],
        schema: str,
        consumers: Sequence[str] = (),
        max_age: float = 0.25,
    ) -> None:
        self._connect = connect
        self._seam = Seam("notify_pg", schema)
        self._consumers = frozenset(consumers)
        self._max_age = max_age
        self._lock = threading.Lock()
        self._conn: Conn | None = None
        self._snapshot: _Snapshot | None = None
        self._read_at = float("-inf")
        self._read_failures = meter.create_counter(
            "notify.metrics.read_failures",
            unit="{read}",
            description="Scrapes whose database read failed (the gauges were left out).",
        )
        gauges: list[tuple[str, str, str, Callable[[_Snapshot], Iterable[Observation]]]] = [
            (
                "notify.push.registrations.active",
                "{registration}",
                "Active push registrations, by provider.",
                lambda s: [Observation(n, {"notify.push.provider": p}) for p, n in s.registrations],
            ),
            (
                "notify.consumer.lag",
                "{event}",
                "Events of the log after a consumer partition's position.",
                lambda s: [Observation(n, _part(c, p)) for c, p, n, _age in s.lag],
            ),
            (
                "notify.consumer.lag.age",
                "s",
                "Age of the first event a consumer partition has not handled (0 at the head).",
                lambda s: [Observation(age, _part(c, p)) for c, p, _n, age in s.lag],
            ),
            (
                "notify.due.waiting",
                "{item}",
                "Due work whose time has come and that no round has done yet, by kind.",
                lambda s: [Observation(n, {"notify.job.kind": k}) for k, n in s.due.items()],
            ),
            (
                "notify.outbox.backlog",
                "{event}",
                "Inbox outbox events not fanned out yet.",
                lambda s: [Observation(s.outbox[0])],
            ),
            (
                "notify.outbox.age",
                "s",
                "Age of the oldest inbox outbox event not fanned out yet (0 when none).",
                lambda s: [Observation(s.outbox[1])],
            ),
            (
                "notify.mails",
                "{mail}",
                "Notification mails by state: pending now, sent and failed over the last 24 h.",
                lambda s: [Observation(n, {"notify.mail.state": k}) for k, n in s.mails.items()],
            ),
        ]
        for name, unit, description, observe in gauges:
            meter.create_observable_gauge(
                name, callbacks=[self._callback(observe)], unit=unit, description=description
            )

    def _callback(
        self, observe: Callable[[_Snapshot], Iterable[Observation]]
    ) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def callback(options: CallbackOptions) -> Iterable[Observation]:
            snapshot = self.read()
            return [] if snapshot is None else list(observe(snapshot))

        return callback

    def read(self) -> _Snapshot | None:
        """Return the values of the gauges (read again when older than ``max_age``)."""
        with self._lock:
            if time.monotonic() - self._read_at < self._max_age:
                return self._snapshot
            try:
                self._snapshot = self._read()
            except Exception as exc:  # the endpoint stays up while the database is away
                self._snapshot = None
                self._read_failures.add(1)
                _log.warning(
                    "metrics read failed", extra={"fields": {"error_type": type(exc).__name__}}
                )
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
            self._read_at = time.monotonic()
            return self._snapshot

    def _read(self) -> _Snapshot:
        if self._conn is None or self._conn.closed:
            self._conn = self._connect()
        conn, seam = self._conn, self._seam
        with conn.transaction():
            registrations = tuple(
                (str(p), int(n)) for p, n in seam.all(conn, "metrics_registrations")
            )
            lag = tuple(
                (str(c), int(p), int(n), float(age))
                for c, p, n, age in seam.all(conn, "metrics_consumer_lag")
                if not self._consumers or c in self._consumers
            )
            row: Any = seam.one(conn, "metrics_backlog", {"mail_window": MAIL_WINDOW})
        windows, releases, syncs, sends, outbox, outbox_age, pending, sent, failed = row
        return _Snapshot(
            registrations=registrations,
            lag=lag,
            due={
                "window": int(windows),
                "release": int(releases),
                "badge_sync": int(syncs),
                "push_send": int(sends),
            },
            outbox=(int(outbox), float(outbox_age)),
            mails={"pending": int(pending), "sent": int(sent), "failed": int(failed)},
        )

    def close(self) -> None:
        """Close the gauges' connection."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _part(consumer: str, part: int) -> dict[str, str | int]:
    return {"notify.consumer": consumer, "notify.partition": part}


class Metrics:
    """One process's meter, its Prometheus registry and, once started, its ``/metrics`` server.

    Args:
        service: the ``service.name`` of the metrics' resource (Prometheus's ``target_info``).

    The registry is the instance's own (not prometheus_client's global one), so several
    `Metrics` live side by side in one process (tests, a server that runs a worker).
    """

    def __init__(self, service: str = "notify-worker") -> None:
        self.registry = CollectorRegistry()
        self._reader = PrometheusMetricReader(registry=self.registry, scope_info_enabled=False)
        self._provider = MeterProvider(
            metric_readers=[self._reader], resource=Resource.create({"service.name": service})
        )
        self.meter: Meter = self._provider.get_meter("notify")
        self.recorder = OtelRecorder(self.meter)
        self._gauges: list[DatabaseGauges] = []
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.port: int | None = None

    @classmethod
    def start(cls, port: int, host: str = "127.0.0.1", service: str = "notify-worker") -> Metrics:
        """Create the metrics and serve them over HTTP at ``http://host:port/metrics``.

        Port 0 takes a free port (`port` tells which).

        Raises:
            OSError: the address cannot be bound (in use, not an address of this machine).
        """
        metrics = cls(service)
        metrics.serve(port, host)
        return metrics

    def serve(self, port: int, host: str = "127.0.0.1") -> None:
        """Serve the metrics in the Prometheus text format on a daemon thread."""
        server, thread = start_http_server(port, addr=host, registry=self.registry)
        self._server, self._thread = server, thread
        self.port = int(server.server_address[1])

    def observe_database(
        self, connect: Callable[[], Conn], schema: str, consumers: Sequence[str] = ()
    ) -> DatabaseGauges:
        """Add the gauges read from the database of ``schema`` (`DatabaseGauges`)."""
        gauges = DatabaseGauges(self.meter, connect, schema, consumers)
        self._gauges.append(gauges)
        return gauges

    def exposition(self) -> bytes:
        """The metrics in the Prometheus text format, as a scrape gets them."""
        return generate_latest(self.registry)

    def close(self) -> None:
        """Stop the server, the meter provider and the gauges' connections."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        for gauges in self._gauges:
            gauges.close()
        self._provider.shutdown()
