"""``notify records audit --delivery`` and ``--principal --from --to`` (docs/rules.md#records,
M6): the record that governed a push send or a mail at its decision and at its send, its
status then and whether the delivery was allowed; a person's deliveries with their records.
Bad input: one line on stderr and exit code 2."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from pgpipeline import POLICY, START, Log, PgRun, lines_of
from pgworld import SCHEMA

from notify_cli.main import cli
from notify_core.replay.run import policy_from_mapping
from notify_core.values.instants import format_instant
from notify_pg.push.providers import FakeProvider
from notify_pg.push.worker import WorkerConfig


@pytest.fixture
def run(new_database: Callable[[str | None], str], pg_template: str) -> Iterator[PgRun]:
    dsn = new_database(pg_template)
    with psycopg.connect(dsn, autocommit=True) as conn:
        run = PgRun(
            dsn,
            conn,
            policy_from_mapping(tomllib.loads(POLICY)),
            providers=[FakeProvider("apns")],
            config=WorkerConfig(max_age=timedelta(minutes=30)),
        )
        run.feed_lines(lines_of(Log().team()))
        yield run
        run.worker.close()


def at(seconds: float) -> str:
    return format_instant(START + timedelta(seconds=seconds))


def record(run: PgRun, type_: str, seconds: float, preference_id: str, **payload: Any) -> None:
    run.event(
        type_,
        {"preference_id": preference_id, **payload},
        actor="alex",
        audience="alex",
        at=START + timedelta(seconds=seconds),
    )


def set_record(run: PgRun, seconds: float, preference_id: str, **channels: Any) -> None:
    record(
        run,
        "record.set",
        seconds,
        preference_id,
        declared_channels=["push", "email"],
        channels=channels or {"push": {"enabled": True}},
    )


def mention_alex(run: PgRun, seconds: float, seq: int) -> None:
    run.event(
        "message.created",
        {
            "message": f"m{seq}",
            "thread": "t",
            "thread_seq": seq,
            "author": "sam",
            "origin": "human",
            "kind": "text",
            "mention_ids": ["alex"],
        },
        actor="sam",
        at=START + timedelta(seconds=seconds),
    )


def audit(run: PgRun, *args: str) -> Any:
    runner = CliRunner(env={"COLUMNS": "220"})
    return runner.invoke(
        cli,
        ["records", "audit", "--dsn", run.dsn, "--schema", SCHEMA, *args],
        catch_exceptions=False,
    )


def notification(run: PgRun) -> str:
    row = run.conn.execute(
        f"SELECT notification_id FROM {SCHEMA}.push_deliveries ORDER BY id DESC LIMIT 1"
    ).fetchone()
    assert row is not None
    return str(row[0])


def mail(run: PgRun, seconds: float, record_id: str | None, state: str = "sent") -> int:
    """One entry of Alex's whose email was sent (or skipped) at ``seconds``; its id."""
    when = START + timedelta(seconds=seconds)
    skip = "suspended" if state == "skipped" else None
    row = run.conn.execute(
        f"INSERT INTO {SCHEMA}.inbox_entries (user_id, site_id, category, variant, group_key,"
        " variants, last_event, in_app, email_state, emailed_at, email_skip, email_skipped_at,"
        " email_record, created_at, updated_at)"
        " VALUES ('alex', 'w', 'watched_page', 'edited', %s, ARRAY['edited'], 1, true, %s,"
        " %s, %s, %s, %s, %s, %s) RETURNING id",
        [
            f"k{seconds}",
            state,
            when if state == "sent" else None,
            skip,
            when if skip else None,
            record_id,
            when - timedelta(seconds=30),
            when - timedelta(seconds=30),
        ],
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_m6_a_push_allowed_at_its_decision_and_stopped_at_its_send(run: PgRun) -> None:
    set_record(run, 5, "p1")
    mention_alex(run, 10, 1)
    record(run, "record.suspended", 11, "p1")
    run.push()
    nid = notification(run)
    result = audit(run, "--delivery", f"push:{nid}", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["delivery"] == f"push:{nid}" and out["channel"] == "push"
    assert out["recipient"] == "alex" and out["kind"] == "mention"
    assert out["decided_at"] == at(10) and out["sent_at"] == at(11)
    assert (out["outcome"], out["reason"]) == ("skipped", "suspended")
    assert out["decided_record"] == out["record"] == "p1"
    assert out["at_decision"] == {"preference_id": "p1", "status": "active", "allowed": True}
    assert out["at_send"] == {
        "preference_id": "p1",
        "status": "suspended",
        "allowed": False,
        "reason": "suspended",
    }
    assert out["allowed"] is False
    # A bare notification id finds the same push; the table names the readings.
    table = audit(run, "--delivery", nid)
    assert table.exit_code == 0, table.output
    assert "at the decision: p1 (active): allowed" in table.stdout
    assert "at the send: p1 (suspended): held back (suspended)" in table.stdout


def test_m6_a_push_sent_with_no_record_and_a_value_not_applied(run: PgRun) -> None:
    mention_alex(run, 10, 1)
    set_record(run, 11, "p1", push={"enabled": True, "max_per_day": 0})
    run.push()
    out = json.loads(audit(run, "--delivery", f"push:{notification(run)}", "--json").stdout)
    assert out["at_decision"] == {"none": True}
    assert out["at_send"] == {
        "preference_id": "p1",
        "status": "active",
        "allowed": True,
        "not_applied": ["/push/max_per_day"],
    }
    assert out["outcome"] == "sent" and out["allowed"] is True


def test_m6_a_mail_and_the_cap_of_its_day(run: PgRun) -> None:
    set_record(run, 5, "p1", email={"max_per_day": 1})
    first = mail(run, 100, "p1")
    second = mail(run, 200, "p1")
    one = json.loads(audit(run, "--delivery", f"mail:{first}", "--json").stdout)
    assert one["channel"] == "email" and one["kind"] == "watched_page"
    assert one["sent_at"] == at(100) and one["decided_at"] == at(70)
    assert one["record"] == "p1" and one["allowed"] is True
    two = json.loads(audit(run, "--delivery", str(second), "--json").stdout)
    assert two["at_send"]["reason"] == "frequency_cap" and two["allowed"] is False


def test_m6_a_person_s_deliveries_with_their_records(run: PgRun) -> None:
    set_record(run, 5, "p1")
    mention_alex(run, 10, 1)
    run.push()
    record(run, "record.suspended", 20, "p1")
    entry = mail(run, 30, "p1", state="skipped")
    result = audit(run, "--principal", "alex", "--from", at(0), "--to", at(60), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["principal_ref"] == "alex" and (out["from"], out["to"]) == (at(0), at(60))
    push, email = out["deliveries"]
    assert push["channel"] == "push" and push["outcome"] == "sent" and push["allowed"]
    assert email["delivery"] == f"mail:{entry}" and email["outcome"] == "skipped"
    assert email["at_send"]["status"] == "suspended"
    assert out["held"] == []
    # The period is half-open: nothing from the instant of the mail's skip on.
    later = audit(run, "--principal", "alex", "--from", at(30), "--json")
    assert [d["channel"] for d in json.loads(later.stdout)["deliveries"]] == ["email"]
    table = audit(run, "--principal", "alex", "--from", at(0), "--to", at(60))
    assert table.exit_code == 0 and f"mail:{entry}" in table.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--delivery", "push:nope"], "no push send and no mail has the id 'push:nope'"),
        (["--delivery", "mail:12"], "no push send and no mail has the id 'mail:12'"),
        (["--delivery", "x", "--principal", "alex"], "--delivery excludes"),
        (["--principal", "alex", "--from", "2026-10-23T10:00:00Z", "--to", "2026-10-23T09:00:00Z"],
         "--to: must be after --from"),
        (["--principal", "alex", "--to", "2026-10-23T09:00:00Z"], "--to needs --from"),
        (["--principal", "alex", "--from", "yesterday"], "--from:"),
        (["--delivery", "x", "--time-zone", "Mars/Base"], "--time-zone:"),
        ([], "give --principal P or --delivery ID"),
    ],
)  # fmt: skip
def test_bad_input_exits_2(run: PgRun, args: list[str], message: str) -> None:
    result = audit(run, *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
