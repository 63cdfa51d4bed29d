"""Benchmark: the inbox on PostgreSQL (seed 004 sections 6-8): fan-out writes and the emit.

Prints one JSON object. The database server is NOTIFY_BENCH_DSN (a role with CREATEDB; scratch
databases are created and dropped) or, without it, a throwaway pgserver instance.

    python bench/bench_pg_inbox.py [--watchers 10000] [--emits 2000] [--mails 2000] [--repeat 3]

Figures (each the median of ``repeat`` runs, every run on a fresh database):
- ``fan_out``: one ``page.edited`` to ``watchers`` watchers (all readers, defaults, mail
  configured with verified addresses, so every entry is ``pending``), fanned out by
  `InboxFanOut.drain`: candidates in keyset batches of 1,000, the core's decision, and the
  entries written by multi-row ``INSERT ... ON CONFLICT`` statements of 500 rows
  (``multi_row``), against the same fan-out writing one row per statement (``one_row``, the
  baseline). ``total_s`` is the whole drain (claim, reads, decisions, writes, commits),
  ``write_s`` the time in the write statements; ``write_ratio`` and ``total_ratio`` are the
  baseline's time over the multi-row time, measured in the same run; ``client_cpu_s`` the
  benchmark process's CPU time in a drain, ``server_cpu_s`` its server backend's (Linux
  ``/proc``), ``cpu_s`` their sum: the drain's work without the waits of a loaded machine (the
  load average and core count are printed beside); ``cpu_ratio`` is the baseline's ``cpu_s``
  over the multi-row drain's (the wall ratio moves with the machine's round-trip latency, the
  CPU ratio much less). The two drains alternate
  (multi-row, one row, ...), so a burst of load hits both alike; ``run_ratios`` is each pair's
  ``total_ratio``.
- ``mail_drain``: the E5 drain on PostgreSQL after one event to ``mails`` watchers (every
  entry due, one mail each): claims, plan, compose, DKIM signing (RSA-2048) and the send to an
  SMTP server on loopback (aiosmtpd, in this process), then the marks: mails per second with
  one connection reused per round (``reused``) against a sender that opens a connection for
  each mail (``connection_per_mail``, the baseline), measured in the same run.
- ``emit``: inside the host's transaction (one per action: BEGIN, the host's INSERT, the
  emit, COMMIT), the cost of `emit` against a plain INSERT of the same values into a host
  table (``plain_insert``); ``per_call_us`` is the median of the per-call times and
  ``ratio`` emit over plain.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from aiosmtpd.controller import Controller
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from psycopg.types.json import Jsonb
from scratch_pg import database, process_cpu_seconds, server

from notify_pg.inbox.fanout import InboxFanOut
from notify_pg.inbox.reads import emit
from notify_pg.mail.drain import MailDrain, MailDrainConfig, MailSender
from notify_pg.mail.smtp import DkimKey, Outgoing, SmtpConfig, SmtpSender
from notify_reference_host.wiki import ReferenceWiki

SCHEMA, HOST = "notify", "host"
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def world(conn: psycopg.Connection[Any], watchers: int) -> ReferenceWiki:
    """One site, one page, ``watchers`` verified readers watching it, mail configured."""
    wiki = ReferenceWiki(HOST)
    with conn.transaction():
        wiki.add_site(conn, "s1", host="wiki.example")
        wiki.add_group(conn, "readers", [{"permission": "read_pages", "match": "all"}])
        wiki.add_user(conn, "bob")
        wiki.add_page(conn, "p1", "s1", "/docs/start", title="Start")
        wiki.set_settings(conn, mail_configured=True)
        conn.execute(
            "INSERT INTO host.wiki_users (id, email, verified) "
            "SELECT 'w' || lpad(i::text, 6, '0'), 'w' || i || '@example.org', true "
            "FROM generate_series(1, %s) i",
            [watchers],
        )
        conn.execute(
            "INSERT INTO host.wiki_memberships (group_id, user_id) "
            "SELECT 'readers', 'w' || lpad(i::text, 6, '0') FROM generate_series(1, %s) i",
            [watchers],
        )
        conn.execute(
            "INSERT INTO host.wiki_watchers (page_id, user_id) "
            "SELECT 'p1', 'w' || lpad(i::text, 6, '0') FROM generate_series(1, %s) i",
            [watchers],
        )
    return wiki


def fan_out_once(base: str, watchers: int, write_batch: int) -> dict[str, float]:
    """One event to ``watchers`` watchers on a fresh database; the drain's times."""
    with database(base) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        wiki = world(conn, watchers)
        emit(conn, "page.edited", {"page": "p1"}, actor="bob", occurred_at=T0, schema=SCHEMA)
        conn.execute("VACUUM ANALYZE")
        worker = InboxFanOut(wiki, schema=SCHEMA, write_batch=write_batch)
        backend = conn.info.backend_pid
        server_cpu = process_cpu_seconds(backend)
        started, cpu = time.perf_counter(), time.process_time()
        worker.drain(conn)
        total, cpu = time.perf_counter() - started, time.process_time() - cpu
        server_cpu = process_cpu_seconds(backend) - server_cpu
        written = conn.execute("SELECT count(*) FROM notify.inbox_entries").fetchone()
        assert written == (watchers,), written
        return {
            "total_s": total,
            "write_s": worker.stats.write_s,
            "client_cpu_s": cpu,
            "server_cpu_s": server_cpu,
        }


class _Sink:
    """An aiosmtpd handler that counts what it receives."""

    def __init__(self) -> None:
        self.received = 0

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.received += 1
        return "250 OK"


class _ConnectionPerMail:
    """The baseline sender: a new SMTP connection for every mail."""

    def __init__(self, config: SmtpConfig, key: DkimKey) -> None:
        self.config, self.key = config, key

    def send(self, outgoing: Outgoing) -> None:
        with SmtpSender(self.config, dkim_key=self.key) as smtp:
            smtp.send(outgoing)

    def close(self) -> None:
        pass


def dkim_key() -> DkimKey:
    """A fresh RSA-2048 signing key (the size mail providers expect)."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return DkimKey(selector="bench", domain="wiki.example", private_key=pem)


def drain_once(base: str, mails: int, key: DkimKey, *, reused: bool) -> dict[str, float]:
    """One event to ``mails`` watchers, fanned out, then the mail drain timed to the end."""
    sink = _Sink()
    with socket.socket() as probe:  # a free port on loopback
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    controller = Controller(sink, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        config = SmtpConfig.from_url(f"smtp://127.0.0.1:{port}?timeout=30")
        with database(base) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
            wiki = world(conn, mails)
            emit(conn, "page.edited", {"page": "p1"}, actor="bob", occurred_at=T0, schema=SCHEMA)
            InboxFanOut(wiki, schema=SCHEMA).drain(conn)
            conn.execute("VACUUM ANALYZE")

            def sender() -> MailSender:
                if reused:
                    return SmtpSender(config, dkim_key=key)
                return _ConnectionPerMail(config, key)

            drain = MailDrain(
                wiki,
                sender,
                secret=lambda conn: bytes(32),
                config=MailDrainConfig(sender="notifications@wiki.example"),
                schema=SCHEMA,
                clock=lambda: T0 + timedelta(days=1),
            )
            started, cpu = time.perf_counter(), time.process_time()
            drain.drain(conn)
            total, cpu = time.perf_counter() - started, time.process_time() - cpu
            sent = conn.execute(
                "SELECT count(*) FROM notify.inbox_entries WHERE email_state = 'sent'"
            ).fetchone()
            assert sent == (mails,) and sink.received == mails, (sent, sink.received)
            return {"total_s": total, "cpu_s": cpu, "per_s": mails / total}
    finally:
        controller.stop()


def emit_once(base: str, emits: int) -> dict[str, float]:
    """Per-call times of emit and of a plain INSERT, each in the host's transaction."""
    with database(base) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        world(conn, 0)
        conn.execute(
            "CREATE TABLE host.bench_plain (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
            "type text, origin text, actor_id text, payload jsonb, occurred_at timestamptz)"
        )
        payload = {"page": "p1", "variant": "edited", "title": "Start"}
        plain: list[float] = []
        emitted: list[float] = []
        for n in range(emits):
            with conn.transaction():
                started = time.perf_counter()
                conn.execute(
                    "INSERT INTO host.bench_plain (type, origin, actor_id, payload, occurred_at) "
                    "VALUES (%s, %s, %s, %s, %s)",
                    ["page.edited", "user", "bob", Jsonb(payload), T0],
                )
                plain.append(time.perf_counter() - started)
            with conn.transaction():
                started = time.perf_counter()
                got = emit(conn, "page.edited", payload, actor="bob", occurred_at=T0, schema=SCHEMA)
                emitted.append(time.perf_counter() - started)
                assert got is not None, n
        return {
            "emit_us": statistics.median(emitted) * 1e6,
            "plain_insert_us": statistics.median(plain) * 1e6,
        }


def main() -> None:
    """Run the benchmark and print its JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--watchers", type=int, default=10_000)
    parser.add_argument("--emits", type=int, default=2_000)
    parser.add_argument("--mails", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    key = dkim_key()
    with server() as base:
        multi, single = [], []
        for _ in range(args.repeat):  # alternating, so a burst of load hits both alike
            multi.append(fan_out_once(base, args.watchers, 500))
            single.append(fan_out_once(base, args.watchers, 1))
        emits = [emit_once(base, args.emits) for _ in range(args.repeat)]
        reused, per_mail = [], []
        for _ in range(args.repeat):  # alternating, so a burst of load hits both alike
            reused.append(drain_once(base, args.mails, key, reused=True))
            per_mail.append(drain_once(base, args.mails, key, reused=False))

    def median(runs: list[dict[str, float]], key: str) -> float:
        return statistics.median(r[key] for r in runs)

    m_total, m_write = median(multi, "total_s"), median(multi, "write_s")
    m_cpu, m_server = median(multi, "client_cpu_s"), median(multi, "server_cpu_s")
    s_total, s_write = median(single, "total_s"), median(single, "write_s")
    s_cpu, s_server = median(single, "client_cpu_s"), median(single, "server_cpu_s")
    emit_us, plain_us = median(emits, "emit_us"), median(emits, "plain_insert_us")
    print(
        json.dumps(
            {
                "fan_out": {
                    "watchers": args.watchers,
                    "multi_row": {
                        "total_s": round(m_total, 3),
                        "write_s": round(m_write, 3),
                        "client_cpu_s": round(m_cpu, 3),
                        "server_cpu_s": round(m_server, 3),
                        "cpu_s": round(m_cpu + m_server, 3),
                    },
                    "one_row": {
                        "total_s": round(s_total, 3),
                        "write_s": round(s_write, 3),
                        "client_cpu_s": round(s_cpu, 3),
                        "server_cpu_s": round(s_server, 3),
                        "cpu_s": round(s_cpu + s_server, 3),
                    },
                    "write_ratio": round(s_write / m_write, 1),
                    "total_ratio": round(s_total / m_total, 1),
                    "cpu_ratio": round((s_cpu + s_server) / (m_cpu + m_server), 1),
                    "run_ratios": [
                        round(s["total_s"] / m["total_s"], 1)
                        for m, s in zip(multi, single, strict=True)
                    ],
                    "under_1s": m_total < 1.0,
                },
                "mail_drain": {
                    "mails": args.mails,
                    "dkim": "rsa-sha256 (2048 bits)",
                    "reused_per_s": round(median(reused, "per_s")),
                    "reused_client_cpu_s": round(median(reused, "cpu_s"), 3),
                    "connection_per_mail_per_s": round(median(per_mail, "per_s")),
                    "ratio": round(median(reused, "per_s") / median(per_mail, "per_s"), 2),
                    "goal_per_s": 200,
                },
                "emit": {
                    "calls": args.emits,
                    "per_call_us": {"emit": round(emit_us, 1), "plain_insert": round(plain_us, 1)},
                    "ratio": round(emit_us / plain_us, 2),
                },
                "repeat": args.repeat,
                "load_average": os.getloadavg()[0],
                "cores": os.cpu_count(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
