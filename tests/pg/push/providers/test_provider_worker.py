"""``notify worker --providers FILE`` against the local APNs server: pushes reach it with a
verified provider token, the worker names its providers, a configuration fault pauses the
provider without deactivating a registration, and no secret reaches a log or an error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from pgpipeline import Log
from pgworld import HOST_SCHEMA, SCHEMA

from notify_cli.main import cli
from notify_core.events.log import parse_event
from notify_pg import EventLog, NewEvent
from notify_pg.push.providers.local.apns import LocalApns
from notify_pg.push.providers.local.tls import LocalCa
from notify_reference_host.world import WorldLoader

TEAM, KID = "TEAM123456", "KEY1234567"


def seed(conn: psycopg.Connection[Any]) -> None:
    """The team world (apns registrations, app id ``app``) and Sam's mention of Alex, at the
    database's clock; each registration's token made an APNs device token (hex)."""
    log = Log().team().pref("sam", "thread", "t", "all")
    log.msg("m1", "sam", seq=1, mention_ids=["alex"]).msg("m2", "owner", seq=2)
    loader, events = WorldLoader(SCHEMA, HOST_SCHEMA), EventLog(SCHEMA)
    for obj in log.events:
        event = parse_event(obj)
        with conn.transaction():
            loader.apply(conn, event)
            events.append(
                conn,
                NewEvent(
                    type=event.type,
                    payload=dict(event.payload),
                    actor=event.actor,
                    audience=event.audience,
                ),
            )
    conn.execute(f"UPDATE {SCHEMA}.push_registrations SET token = encode(sha256(id::bytea), 'hex')")


@pytest.fixture
def apns(ca: LocalCa, conn: psycopg.Connection[Any]) -> Iterator[LocalApns]:
    server = LocalApns(ca).start()
    seed(conn)
    for (token,) in conn.execute(f"SELECT token FROM {SCHEMA}.push_registrations"):
        server.device(token, "app")
    yield server
    server.close()


def config(tmp_path: Path, apns: LocalApns, ca: LocalCa, key: str, team: str = TEAM) -> str:
    (tmp_path / "apns.p8").write_text(key)
    path = tmp_path / "providers.toml"
    path.write_text(
        f'[apns]\nteam_id = "{team}"\nkey_id = "{KID}"\nkey_file = "apns.p8"\n'
        f'production_url = "{apns.server.url}"\nca_file = "{ca.ca_file}"\n'
    )
    return str(path)


def lines(stderr: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stderr.splitlines()]


def test_the_worker_pushes_through_apns(
    apns: LocalApns, ca: LocalCa, db_dsn: str, tmp_path: Path, conn: psycopg.Connection[Any]
) -> None:
    key = apns.team_key(TEAM, KID)
    providers = config(tmp_path, apns, ca, key)
    result = CliRunner().invoke(
        cli, ["worker", "--dsn", db_dsn, "--once", "--providers", providers]
    )
    assert result.exit_code == 0, result.output
    logged = lines(result.stderr)
    assert [line["providers"] for line in logged if line["msg"] == "push providers"] == [["apns"]]
    assert not [line for line in logged if line["msg"] == "push provider missing"]
    outcomes = [line["outcome"] for line in logged if line["msg"] == "push sent"]
    assert outcomes == ["accepted", "accepted"]
    assert len(apns.received) == 2 and len(apns.provider_tokens) == 1
    assert {p.payload["k"] for p in apns.received} == {"mention", "message"}
    assert "PRIVATE KEY" not in result.stderr and key.splitlines()[1] not in result.stderr
    for token in apns.received:
        assert token.device not in result.stderr
    status = CliRunner().invoke(cli, ["db", "status", "--dsn", db_dsn])
    assert status.exit_code == 0 and key.splitlines()[1] not in status.output
    successes = conn.execute(
        f"SELECT count(*) FROM {SCHEMA}.push_registrations WHERE last_success_at IS NOT NULL"
    ).fetchone()
    assert successes == (2,)


def test_a_wrong_team_pauses_apns_once_and_deactivates_nothing(
    apns: LocalApns, ca: LocalCa, db_dsn: str, tmp_path: Path, conn: psycopg.Connection[Any]
) -> None:
    providers = config(tmp_path, apns, ca, apns.team_key(TEAM, KID), team="OTHERTEAM1")
    result = CliRunner().invoke(
        cli, ["worker", "--dsn", db_dsn, "--once", "--providers", providers]
    )
    assert result.exit_code == 0, result.output
    logged = lines(result.stderr)
    (paused,) = [line for line in logged if line["msg"] == "push provider paused"]
    assert (paused["level"], paused["provider"], paused["reason"]) == (
        "error",
        "apns",
        "InvalidProviderToken",
    )
    assert apns.received == []
    disabled = conn.execute(
        f"SELECT count(*) FROM {SCHEMA}.push_registrations WHERE disabled_at IS NOT NULL"
    ).fetchone()
    assert disabled == (0,)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[apns]\nteam_id = "T"\nkey_id = "K"\nkey_file = "missing.p8"\n', "cannot read"),
        ('[apns]\nteam_id = "T"\nkey_id = "K"\nkey_env = "NOTIFY_NO_SUCH_VAR"\n', "not set"),
        (
            '[apns]\nteam_id = "T"\nkey_id = "K"\nkey_file = "k.p8"\nkey_env = "X"\n',
            "exactly one of key_file and key_env",
        ),
        ('[apns]\nteam_id = "T"\nkey_id = "K"\nkey_file = "k.p8"\n', "not a .p8 key"),
        ('[apn]\nteam_id = "T"\n', "unknown key or table 'apn'"),
        ('[fcm]\nservice_account_file = "k.p8"\nbogus = 1\n', "unknown key 'bogus'"),
        ('[webpush]\nvapid_key_file = "k.p8"\nsubject = "ops"\n', "mailto: or https://"),
    ],
)
def test_a_bad_configuration_is_one_line_and_exit_2_without_the_secret(
    db_dsn: str, tmp_path: Path, text: str, message: str
) -> None:
    secret = "SECRET-KEY-MATERIAL-0123456789"
    (tmp_path / "k.p8").write_text(secret)
    path = tmp_path / "providers.toml"
    path.write_text(text)
    result = CliRunner().invoke(
        cli, ["worker", "--dsn", db_dsn, "--once", "--providers", str(path)]
    )
    assert result.exit_code == 2
    assert message in result.stderr
    assert secret not in result.output + result.stderr


def test_a_provider_cannot_be_both_real_and_fake(
    apns: LocalApns, ca: LocalCa, db_dsn: str, tmp_path: Path
) -> None:
    providers = config(tmp_path, apns, ca, apns.team_key(TEAM, KID))
    result = CliRunner().invoke(
        cli,
        ["worker", "--dsn", db_dsn, "--once", "--providers", providers, "--fake-provider", "apns"],
    )
    assert result.exit_code == 2
    assert "apns is also a --fake-provider" in result.stderr
