"""The replay's stderr: the summary table's rows of the pipelines the log used, and the
progress line on a terminal with a total and the time left where the input's size is known
(issue 40 point 6). stdout stays the replay's lines."""

from __future__ import annotations

import io
from pathlib import Path

from click.testing import CliRunner
from rich.console import Console

from notify_cli.main import cli
from notify_cli.progress import STEP, input_size, lines_text, progress_lines

ROOT = Path(__file__).resolve().parents[2]
WIKI = ROOT / "examples" / "wiki-week.jsonl"
TEAM = ROOT / "examples" / "team-week.jsonl"
PUSH_ROWS = ("quiet share of sends", "pushes per recipient p50/p90/p99/max")


def summary_of(*logs: Path) -> str:
    text = "".join(log.read_text() for log in logs)
    result = CliRunner().invoke(cli, ["replay", "-"], input=text)
    assert result.exit_code == 0, result.output
    return result.stderr


def test_a_wiki_log_shows_no_push_rows(tmp_path: Path) -> None:
    wiki = summary_of(WIKI)
    assert "entries watched_page new" in wiki and "mails single" in wiki
    assert not [row for row in PUSH_ROWS if row in wiki]
    chat = summary_of(TEAM)
    assert all(row in chat for row in PUSH_ROWS)
    assert "entries " not in chat and "mails " not in chat


def test_a_log_of_both_pipelines_shows_both() -> None:
    """A mixed log: the chat's rows and the wiki's (seqs renumbered, the clock kept)."""
    import json

    objects = [json.loads(line) for line in TEAM.read_text().splitlines() if line.strip()]
    last = objects[-1]["occurred_at"]
    wiki = [json.loads(line) for line in WIKI.read_text().splitlines() if line.strip()]
    # The wiki's week comes after the team's (its clock never goes back).
    assert wiki[0]["occurred_at"] >= last
    for seq, obj in enumerate([*objects, *wiki], start=1):
        obj["seq"] = seq
    text = "".join(json.dumps(obj) + "\n" for obj in [*objects, *wiki])
    result = CliRunner().invoke(cli, ["replay", "-"], input=text)
    assert result.exit_code == 0, result.stderr[-2000:]
    assert all(row in result.stderr for row in PUSH_ROWS)
    assert "entries watched_page new" in result.stderr


def test_progress_with_a_known_size_shows_a_total_and_the_time_left(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    line = '{"seq":1}\n'
    log.write_text(line * (3 * STEP))
    size = input_size(str(log))
    assert size == len(line) * 3 * STEP
    assert input_size(None) is None and input_size(str(tmp_path)) is None
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=140)
    lines = list(log.read_text().splitlines(keepends=True))
    assert list(progress_lines("log", lines, size, console, True)) == lines
    shown = out.getvalue()
    assert "lines of ~30,000" in shown and "left" in shown and "%" in shown
    unknown = io.StringIO()
    console = Console(file=unknown, force_terminal=True, width=140)
    assert list(progress_lines("-", iter(lines), None, console, True)) == lines
    assert "30,000 lines" in unknown.getvalue() and "left" not in unknown.getvalue()
    # Not a terminal: nothing shown.
    quiet = io.StringIO()
    assert list(progress_lines("log", lines, size, Console(file=quiet), False)) == lines
    assert quiet.getvalue() == ""


def test_the_estimate_of_the_total() -> None:
    assert lines_text(10_000, 1_000_000, 4_000_000) == "10,000 lines of ~40,000"
    assert lines_text(10_000, 1_000_000, None) == "10,000 lines"
    assert lines_text(5, 10, 8) == "5 lines of ~5"  # never below the lines read
