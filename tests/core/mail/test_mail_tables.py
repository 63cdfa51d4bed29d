"""The mail table functions (formats.md section 4) through the real CLI: the shipped example
examples/mail-table.jsonl (E2, U1, U2) and input errors with file, line and pointer."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from notify_cli.main import cli
from notify_core.replay.tables import FUNCTIONS, answer

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "mail-table.jsonl"


def test_e2_u1_u2_shipped_example_passes() -> None:
    result = CliRunner().invoke(cli, ["table", "check", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "11 passed, 0 failed"


def test_the_functions_are_registered() -> None:
    assert {"email_after_for", "unsubscribe_token", "verify_unsubscribe_token"} <= set(FUNCTIONS)


def test_e2_a_wrong_expectation_names_file_line_and_member(tmp_path: Path) -> None:
    case = {
        "id": "daily-without-hour",
        "function": "email_after_for",
        "input": {
            "now": "2026-11-30T10:00:00Z",
            "schedule": "daily",
            "person": "ana",
            "category": "watched_page",
            "email_delay_s": 180,
        },
        "expect": {"email_after": "2026-11-30T10:03:00Z"},
    }
    table = tmp_path / "mail.jsonl"
    table.write_text(json.dumps(case) + "\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["table", "check", str(table)])
    assert result.exit_code == 1
    assert f"{table}:1: daily-without-hour:" in result.output
    assert '"missing_daily_hour"' in result.output
    assert "Traceback" not in result.output


def test_u2_bad_input_shapes_answer_errors_not_exceptions() -> None:
    zero = "00" * 32
    assert answer("verify_unsubscribe_token", {"secret_hex": zero, "token": 7}) == {
        "error": {"code": "invalid_type", "pointer": "/token"}
    }
    assert answer("verify_unsubscribe_token", {"secret_hex": zero}) == {
        "error": {"code": "missing_member", "pointer": "/token"}
    }
    assert answer("unsubscribe_token", {"secret_hex": zero, "person": "a", "categories": "x"}) == {
        "error": {"code": "invalid_type", "pointer": "/categories"}
    }
    assert answer(
        "unsubscribe_token", {"secret_hex": zero, "person": "a", "categories": ["x", 1]}
    ) == {"error": {"code": "invalid_type", "pointer": "/categories/1"}}
    assert answer(
        "email_after_for",
        {
            "now": "2026-11-30T10:00:00Z",
            "schedule": "hourly",
            "person": "a",
            "category": "mention",
            "email_delay_s": 0,
            "time_zone": 5,
        },
    ) == {"error": {"code": "invalid_type", "pointer": "/time_zone"}}
