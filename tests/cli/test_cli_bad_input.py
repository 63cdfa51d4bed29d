"""Bad input to the command line (issue 27, point 8): each a clear one-line message and exit
code 2, never a traceback, never a password."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from notify_cli.main import cli
from notify_cli.secrets import redact, remember


def one_line_error(args: list[str], env: dict[str, str] | None = None) -> str:
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) >= 1 and lines[-1].startswith("notify: "), result.stderr
    return result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["db", "status", "--dsn", "postgresql://u:PASSWORD@[bad/db"],
        ["db", "migrate", "--dsn", "postgresql://u:PASSWORD@[bad/db"],
        ["db", "load", "examples/spec-example.jsonl", "--dsn", "postgresql://u:PASSWORD@[bad/db"],
        ["db", "status", "--dsn", "host=/nonexistent password=PASSWORD dbname=x"],
        ["replay", "--from-pg", "postgresql://u:PASSWORD@[bad/db"],
    ],
)
def test_a_dsn_password_is_never_printed(args: list[str]) -> None:
    out = one_line_error(args)
    assert "PASSWORD" not in out


def test_a_dsn_password_from_the_environment_is_never_printed() -> None:
    out = one_line_error(["db", "status"], env={"NOTIFY_DSN": "postgresql://u:PASSWORD@[bad/db"})
    assert "PASSWORD" not in out


def test_redact_masks_what_it_was_told_and_what_looks_like_a_password() -> None:
    remember("postgresql://u:s%40cret@h/db")
    assert redact("failed: s@cret and s%40cret") == "failed: *** and ***"
    assert redact("x smtp://a:b@h y password='q r' z") == "x smtp://a:***@h y password=*** z"


def test_end_now_over_millennia_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "ages.jsonl"
    log.write_text(
        "".join(
            json.dumps(
                {"seq": n, "type": "space.created", "occurred_at": at, "payload": {"space": "s"}}
            )
            + "\n"
            for n, at in enumerate(["0100-01-01T00:00:00Z", "9899-12-31T00:00:00Z"], start=1)
        )
    )
    out = one_line_error(["db", "load", str(log), "--dsn", "postgresql:///never", "--end-now"])
    assert "OverflowError" not in out
    assert "event seq 1: 0100-01-01T00:00:00Z moved by" in out
    assert "outside years 1-9999" in out


def test_a_nul_character_in_an_id_is_refused_at_parse(tmp_path: Path) -> None:
    log = tmp_path / "nul.jsonl"
    event = {"seq": 1, "type": "user.created", "occurred_at": "2026-10-23T08:00:00Z"}
    log.write_text(json.dumps({**event, "payload": {"user": "u\u0000x", "kind": "human"}}) + "\n")
    out = one_line_error(["db", "load", str(log), "--dsn", "postgresql:///never"])
    assert f"{log}:1: bad event at /payload/user: a NUL character" in out
    assert out.splitlines()[-1] == f"notify: {log}: 1 bad line; nothing was loaded"


def test_a_dkim_key_is_read_with_a_size_limit() -> None:
    out = one_line_error(
        [
            "worker",
            "--dsn",
            "postgresql:///never",
            "--once",
            "--smtp-url",
            "smtp://h",
            "--mail-from",
            "n@example.org",
            "--dkim-key",
            "/dev/zero",
            "--dkim-selector",
            "s",
        ]
    )
    assert out == "notify: --dkim-key /dev/zero: larger than 64 KiB, not a key file\n"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("smtp://mail.example/inbox", "a path"),
        ("smtp://mail.example#top", "a fragment"),
        ("smtp://u:SECRET%zz@mail.example", "a bad percent escape"),
        ("smtp://u:SECRET%4@mail.example", "a bad percent escape"),
    ],
)
def test_invalid_smtp_urls_are_refused(url: str, why: str) -> None:
    out = one_line_error(
        [
            "worker",
            "--dsn",
            "postgresql:///never",
            "--once",
            "--smtp-url",
            url,
            "--mail-from",
            "n@example.org",
        ]
    )
    assert out.startswith(f"notify: --smtp-url: bad SMTP URL: {why}")
    assert "SECRET" not in out


def test_an_unknown_time_zone_is_named(tmp_path: Path) -> None:
    log = tmp_path / "tz.jsonl"
    base = {"seq": 1, "occurred_at": "2026-10-23T08:00:00Z"}
    log.write_text(
        json.dumps(
            {
                **base,
                "type": "user.created",
                "payload": {"user": "u", "kind": "human", "time_zone": "Mars/Olympus"},
            }
        )
        + "\n"
        + json.dumps(
            {
                **base,
                "seq": 2,
                "type": "quiet_hours.updated",
                "audience": "u",
                "payload": {
                    "rules": [
                        {
                            "id": "r",
                            "weekdays": 1,
                            "start_local": "22:00",
                            "end_local": "07:00",
                            "time_zone": "Mars/Olympus",
                            "enabled": True,
                            "version": 1,
                        }
                    ]
                },
            }
        )
        + "\n"
    )
    result = CliRunner().invoke(cli, ["replay", str(log)])
    assert result.exit_code == 2
    bad = [line for line in result.stderr.splitlines() if "bad event" in line]
    assert bad == [
        f"{log}:1: bad event at /payload/time_zone: payload.time_zone must be a zone of the "
        "IANA database (Q3), not 'Mars/Olympus' (unknown_time_zone)",
        f"{log}:2: bad event at /payload/rules/0/time_zone: unknown time zone: "
        "'Mars/Olympus' (unknown_time_zone)",
    ]


def test_db_up_as_root_names_the_directories_it_opens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from notify_cli.db import _say_permissions

    private = tmp_path / "private"
    private.mkdir()
    private.chmod(0o700)
    _say_permissions(str(private / "pg"))
    err = capsys.readouterr().err
    if os.geteuid() != 0:  # pgserver changes nothing then: nothing to say
        assert err == ""
        return
    assert err.count("\n") == 1 and "chmod go+rx" in err
    named = err.split("(chmod go+rx): ")[1].split("; ")[0].split(", ")
    assert str(private) in named
    private.chmod(0o755)
    _say_permissions(str(private / "pg"))
    err = capsys.readouterr().err
    assert str(private) not in (
        err.split("(chmod go+rx): ")[1].split("; ")[0].split(", ") if err else []
    )
    assert stat.S_IMODE(private.stat().st_mode) == 0o755
