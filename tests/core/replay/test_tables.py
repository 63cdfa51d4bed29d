"""Decision tables: every case under tests/tables runs directly and through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from notify_cli.main import cli
from notify_core.replay.tables import FUNCTIONS, Case, CaseError, diff, parse_cases, run_case

TABLES = sorted((Path(__file__).parents[2] / "tables").glob("*.jsonl"))
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def cases() -> list[tuple[str, Case]]:
    found = []
    for path in TABLES:
        for item in parse_cases(path.read_text(encoding="utf-8")):
            assert not isinstance(item, CaseError), f"{path.name}:{item.line}: {item}"
            found.append((f"{path.stem}:{item.id}", item))
    return found


CASES = cases()


def no_null(value: object) -> bool:
    if value is None:
        return False
    if isinstance(value, dict):
        return all(no_null(v) for v in value.values())
    if isinstance(value, list):
        return all(no_null(v) for v in value)
    return True


@pytest.mark.parametrize(("name", "case"), CASES, ids=[name for name, _ in CASES])
def test_table_case(name: str, case: Case) -> None:
    outcome = run_case(case)
    assert outcome.passed, "; ".join(outcome.differences)
    assert no_null(outcome.actual), "G5: no null in any JSON the library writes"


def test_every_function_has_cases() -> None:
    covered = {case.function for _, case in CASES}
    assert covered >= set(FUNCTIONS) - {"records_lifecycle"}


def test_cli_table_check_runs_all_tables() -> None:
    result = CliRunner().invoke(cli, ["table", "check", *map(str, TABLES)])
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith(f"{len(CASES)} passed, 0 failed")


def test_cli_table_check_shipped_example() -> None:
    result = CliRunner().invoke(cli, ["table", "check", str(EXAMPLES / "decision-table.jsonl")])
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith(" passed, 0 failed")


def test_cli_failing_case_prints_a_compact_diff_and_exits_1(tmp_path: Path) -> None:
    table = tmp_path / "t.jsonl"
    case = {
        "id": "wrong",
        "function": "kind_code",
        "input": {"kind": "dm"},
        "expect": {"code": 4},
    }
    table.write_text("# comment\n\n" + json.dumps(case) + "\n")
    result = CliRunner().invoke(cli, ["table", "check", str(table)])
    assert result.exit_code == 1
    assert f"{table}:3: wrong: /code: expected 4, got 3" in result.output
    assert result.output.strip().endswith("0 passed, 1 failed")


def test_cli_bad_lines_name_file_and_line_and_exit_2(tmp_path: Path) -> None:
    table = tmp_path / "bad.jsonl"
    good = {"id": "ok", "function": "kind_code", "input": {"kind": "dm"}, "expect": {"code": 3}}
    table.write_text(
        "{not json\n"
        + json.dumps(good)
        + "\n"
        + json.dumps({"id": "x", "function": "nope", "input": {}, "expect": {}})
        + "\n[1]\n"
        + json.dumps(good)
        + "\n"
    )
    result = CliRunner().invoke(cli, ["table", "check", str(table), str(tmp_path / "missing")])
    assert result.exit_code == 2
    err = result.stderr
    assert f"{table}:1: bad case: not JSON" in err
    assert f"{table}:3: bad case at /function: unknown function 'nope'" in err
    assert f"{table}:4: bad case: a case must be a JSON object" in err
    assert f"{table}:5: bad case: case id 'ok' appears twice" in err
    assert "missing: no such file" in err
    assert "Traceback" not in result.output + err
    assert "1 passed, 0 failed" in result.output  # the good case still ran


def test_cli_table_run_fills_expect_and_keeps_comments(tmp_path: Path) -> None:
    table = tmp_path / "t.jsonl"
    case = {"id": "fill", "function": "kind_from_code", "input": {"code": 7}, "expect": {}}
    table.write_text("# keep me\n" + json.dumps(case) + "\n")
    result = CliRunner().invoke(cli, ["table", "run", str(table)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "# keep me"
    assert json.loads(lines[1])["expect"] == {"kind": "security"}
    (tmp_path / "filled.jsonl").write_text(result.output)
    check = CliRunner().invoke(cli, ["table", "check", str(tmp_path / "filled.jsonl")])
    assert check.exit_code == 0


def test_cli_table_run_unreadable_file_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["table", "run", str(tmp_path)])
    assert result.exit_code == 2
    assert "is a directory" in result.stderr


def test_diff_compares_instants_numbers_and_lenient_error_pointer() -> None:
    berlin, utc = "2026-10-24T07:00:00+02:00", "2026-10-24T05:00:00Z"
    assert list(diff({"until": berlin}, {"until": utc})) == []
    assert list(diff({"delay_s": 4.0000001}, {"delay_s": 4.0})) == []
    error_a = {"error": {"code": "x", "pointer": "/a"}}
    assert list(diff({"error": {"code": "x"}}, error_a)) == []
    error_b = {"error": {"code": "x", "pointer": "/b"}}
    assert list(diff(error_b, error_a)) == ['/error/pointer: expected "/b", got "/a"']
    assert list(diff({"quiet": True}, {"quiet": 1})) == ["/quiet: expected true, got 1"]


def test_cli_table_check_shipped_inbox_example() -> None:
    result = CliRunner().invoke(cli, ["table", "check", str(EXAMPLES / "inbox-table.jsonl")])
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith("8 passed, 0 failed")
