"""``notify table check|run``: decision tables (formats.md section 1)."""

from __future__ import annotations

import sys

import click

from notify_cli.options import EXIT_BAD_INPUT, label, read_text
from notify_core.replay.tables import (
    Case,
    CaseError,
    dumps_case,
    parse_cases,
    run_case,
    split_lines,
)


def _where(path: str, error: CaseError) -> str:
    pointer = f" at {error.pointer}" if error.pointer else ""
    return f"{label(path)}:{error.line}: bad case{pointer}: {error.message}"


@click.group()
def table() -> None:
    """Run decision tables: JSON Lines of {"id", "function", "input", "expect"}."""


@table.command()
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
def check(files: tuple[str, ...]) -> None:
    """Run every case of FILE... and report the ones that fail.

    Prints one line per failing case with a compact diff, then `N passed, N failed`.
    Exits 1 when a case failed and 2 when a file or line could not be read.
    """
    passed = failed = 0
    bad = False
    for path in files:
        try:
            text = read_text(path)
        except click.ClickException as exc:
            click.echo(f"notify: {exc.format_message()}", err=True)
            bad = True
            continue
        for item in parse_cases(text):
            if isinstance(item, CaseError):
                click.echo(_where(path, item), err=True)
                bad = True
                continue
            outcome = run_case(item)
            if outcome.passed:
                passed += 1
            else:
                failed += 1
                click.echo(
                    f"{label(path)}:{item.line}: {item.id}: " + "; ".join(outcome.differences)
                )
    click.echo(f"{passed} passed, {failed} failed")
    if bad:
        sys.exit(EXIT_BAD_INPUT)
    if failed:
        sys.exit(1)


@table.command()
@click.argument("file")
def run(file: str) -> None:
    """Print the cases of FILE with `expect` replaced by what the library answers.

    Blank and comment lines are kept, so the output can replace the file. A bad line is kept
    as it is, reported on stderr, and makes the exit code 2.
    """
    text = read_text(file)
    lines = split_lines(text)
    answers: dict[int, Case] = {}
    bad = False
    for item in parse_cases(text):
        if isinstance(item, CaseError):
            click.echo(_where(file, item), err=True)
            bad = True
        else:
            answers[item.line] = item
    for number, line in enumerate(lines, start=1):
        case = answers.get(number)
        click.echo(line if case is None else dumps_case(case, run_case(case).actual))
    if bad:
        sys.exit(EXIT_BAD_INPUT)
