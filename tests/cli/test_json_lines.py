"""JSON Lines files are split at ``\\n`` only (``\\r\\n`` too): a JSON string may hold U+2028,
U+2029 or ``\\x85`` as it is, and its line stays one line (formats.md, G4: IDs are opaque)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from notify_cli.main import cli
from notify_core.replay.tables import Case, parse_cases, split_lines

ROOT = Path(__file__).resolve().parents[2]
SPEC_LOG = ROOT / "examples" / "spec-example.jsonl"
ODD = ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]
CASE = {
    "id": "quiet",
    "function": "in_quiet_hours",
    "input": {"now": "2026-10-23T21:30:00Z", "rules": []},
    "expect": {"quiet": False},
}


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", []),
        ("a\n", ["a"]),
        ("a\r\nb\r\n", ["a", "b"]),
        ("a\u2028b\x85c\n\nd", ["a\u2028b\x85c", "", "d"]),
        ("a\n\n", ["a", ""]),
    ],
)
def test_split_lines(text: str, lines: list[str]) -> None:
    assert split_lines(text) == lines


@pytest.mark.parametrize("char", ODD, ids=[f"U+{ord(c):04X}" for c in ODD])
def test_g4_a_case_id_holding_a_line_separator_is_one_good_case(char: str) -> None:
    line = json.dumps({**CASE, "id": f"a{char}b"}, ensure_ascii=False)
    [case] = list(parse_cases(f"# comment\n{line}\n"))
    assert isinstance(case, Case) and case.id == f"a{char}b" and case.line == 2


def test_a_table_with_crlf_checks_and_runs_as_with_lf(tmp_path: Path) -> None:
    compact = {"ensure_ascii": False, "separators": (",", ":")}
    lines = ["# a comment", json.dumps({**CASE, "id": "x\u2028y"}, **compact), ""]  # type: ignore[arg-type]
    lines.append(json.dumps(CASE, **compact))  # type: ignore[arg-type]
    crlf, lf = tmp_path / "crlf.jsonl", tmp_path / "lf.jsonl"
    crlf.write_bytes("\r\n".join(lines).encode() + b"\r\n")
    lf.write_bytes("\n".join(lines).encode() + b"\n")
    runner = CliRunner()
    for path in (crlf, lf):
        checked = runner.invoke(cli, ["table", "check", str(path)])
        assert (checked.exit_code, checked.stdout) == (0, "2 passed, 0 failed\n"), checked.output
        ran = runner.invoke(cli, ["table", "run", str(path)])
        assert ran.exit_code == 0
        assert ran.stdout.split("\n") == [*lines, ""]  # the lines as they were, one each


def test_an_event_log_with_crlf_replays_as_with_lf(tmp_path: Path) -> None:
    lines = SPEC_LOG.read_text(encoding="utf-8").split("\n")
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_bytes("\r\n".join(lines).encode())
    runner = CliRunner()
    want = runner.invoke(cli, ["replay", str(SPEC_LOG), "--include-skips"])
    assert want.exit_code == 0 and want.stdout
    got = runner.invoke(cli, ["replay", str(crlf), "--include-skips"])
    assert (got.exit_code, got.stdout) == (0, want.stdout), got.stderr
    from_stdin = runner.invoke(cli, ["replay", "-", "--include-skips"], input=crlf.read_bytes())
    assert (from_stdin.exit_code, from_stdin.stdout) == (0, want.stdout)


def test_g4_an_event_log_id_holding_a_line_separator_is_one_line(tmp_path: Path) -> None:
    first = json.loads(SPEC_LOG.read_text(encoding="utf-8").split("\n")[0])
    first["payload"]["user"] = "u-\u2028\u2029\x85"
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps(first, ensure_ascii=False) + "\n", encoding="utf-8")
    summary = tmp_path / "summary.json"
    result = CliRunner().invoke(cli, ["replay", str(log), "--summary-json", str(summary)])
    assert result.exit_code == 0, result.output
    assert json.loads(summary.read_text(encoding="utf-8"))["events"] == {"user.created": 1}
