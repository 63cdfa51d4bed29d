"""``notify db migrate`` (docs/postgresql.md#schema-and-migrations: migrations applied by the CLI;
docs/cli.md#exit-codes: exit 2 and one line on stderr for bad input, no traceback)."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
from click.testing import CliRunner

from notify_cli.main import cli
from notify_pg import migrations


def test_migrate_applies_then_changes_nothing(new_database: Callable[[str | None], str]) -> None:
    dsn = new_database(None)
    runner = CliRunner()
    first = runner.invoke(cli, ["db", "migrate", "--dsn", dsn, "--schema", "notify_app"])
    assert first.exit_code == 0, first.output
    assert first.stdout.splitlines() == [f"notify_app: applied {m.name}" for m in migrations()]
    again = runner.invoke(cli, ["db", "migrate", "--dsn", dsn, "--schema", "notify_app"])
    assert again.exit_code == 0 and again.stdout == ""
    assert "up to date" in again.stderr
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM notify_app.schema_migrations").fetchone()
    assert row == (len(migrations()),)


def test_reference_host_option(new_database: Callable[[str | None], str]) -> None:
    dsn = new_database(None)
    result = CliRunner().invoke(cli, ["db", "migrate", "--dsn", dsn, "--reference-host", "host"])
    assert result.exit_code == 0, result.output
    assert "host: applied 0001_reference_host" in result.stdout


def test_bad_dsn_exits_2_without_traceback() -> None:
    for dsn in ["not a dsn at all", "postgresql://127.0.0.1:1/x?connect_timeout=2"]:
        result = CliRunner().invoke(cli, ["db", "migrate", "--dsn", dsn])
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output
        [line] = result.stderr.splitlines()
        assert line.startswith("notify: db migrate: ")


def test_changed_migration_exits_2(new_database: Callable[[str | None], str]) -> None:
    dsn = new_database(None)
    runner = CliRunner()
    assert runner.invoke(cli, ["db", "migrate", "--dsn", dsn]).exit_code == 0
    with psycopg.connect(dsn) as conn:
        conn.execute("UPDATE notify.schema_migrations SET checksum = 'x' WHERE version = 1")
    result = runner.invoke(cli, ["db", "migrate", "--dsn", dsn])
    assert result.exit_code == 2
    assert "migration_changed" in result.stderr and "Traceback" not in result.output


def test_dsn_is_required() -> None:
    result = CliRunner(env={"NOTIFY_DSN": None}).invoke(cli, ["db", "migrate"])
    assert result.exit_code == 2 and "--dsn" in result.stderr
