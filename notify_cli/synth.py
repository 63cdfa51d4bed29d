"""``notify synth``: write a large synthetic event log (formats.md section 2) for load tests."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import IO

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from notify_cli import fastjson
from notify_cli.options import EXIT_BAD_INPUT, open_out, writing
from notify_cli.synth_logs import SynthConfig, synth_events
from notify_cli.synth_records import with_records
from notify_core.replay.lines import dumps_line

_stderr = Console(stderr=True)
#: Lines written at once: one write call per batch, and the progress moves per batch.
_BATCH = 4096


def write_log(events: Iterable[dict[str, object]], out: IO[str]) -> int:
    """Write events as JSON Lines; return how many were written."""
    count = 0
    for lines in _batches(events):
        out.write("\n".join(lines) + "\n")
        count += len(lines)
    return count


def _batches(events: Iterable[dict[str, object]]) -> Iterator[list[str]]:
    batch: list[str] = []
    for event in events:
        batch.append(dumps_line(event, fastjson.dumps))
        if len(batch) == _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _write_with_progress(events: Iterable[dict[str, object]], out: IO[str], total: int) -> int:
    """`write_log`, with a progress bar on stderr when it is a terminal (data stays on stdout)."""
    if not sys.stderr.isatty():
        return write_log(events, out)
    count = 0
    with Progress(
        TextColumn("synth"),
        BarColumn(bar_width=None),
        TextColumn("{task.completed:,}/{task.total:,} events"),
        TimeElapsedColumn(),
        console=_stderr,
        transient=True,
    ) as progress:
        task = progress.add_task("synth", total=total)
        for lines in _batches(events):
            out.write("\n".join(lines) + "\n")
            count += len(lines)
            progress.update(task, completed=count)
    return count


@click.command()
@click.option(
    "--events",
    default=100_000,
    show_default=True,
    help="Events in all (>= 0).",
)
@click.option(
    "--users",
    default=10_000,
    show_default=True,
    help="People, >= 2 (1 in 200 agents).",
)
@click.option("--seed", default=0, show_default=True, help="The same seed gives the same log.")
@click.option(
    "--max-fanout",
    default=500,
    show_default=True,
    help="Readers of the largest channel (>= 1).",
)
@click.option(
    "--records",
    is_flag=True,
    help="Also give people preference records: push and mail caps, push off, plain mails,"
    " suspensions, resumptions and deletions (about 1 event in 200).",
)
@click.option("--out", "out_file", metavar="FILE", help="Write the log here instead of stdout.")
def synth(
    events: int, users: int, seed: int, max_fanout: int, records: bool, out_file: str | None
) -> None:
    """Write a synthetic event log of a large instance, deterministic for a seed.

    First the world (people, spaces, channels whose reader counts range from 1 to
    --max-fanout, devices, push registrations, some quiet hours, settings and preferences),
    then activity: mostly messages, with mentions, DMs, agent runs, reads, presence,
    preference changes, grants and revocations. Replay it with `notify replay FILE`.
    Progress shows on stderr when it is a terminal; a last line on stderr tells how many
    events were written where, in how many seconds.
    """
    bad = [
        f"notify: {option}: must be at least {least}, not {value}"
        for option, value, least in (
            ("--events", events, 0),
            ("--users", users, 2),
            ("--max-fanout", max_fanout, 1),
        )
        if value < least
    ]
    if bad:  # every bad option named at once, not only the first
        click.echo("\n".join(bad), err=True)
        sys.exit(EXIT_BAD_INPUT)
    config = SynthConfig(events=events, users=users, seed=seed, max_fanout=max_fanout)
    started = time.perf_counter()
    made = synth_events(config)
    if records:
        made = with_records(made, seed=seed, total=events)
    if out_file is None:
        with writing("stdout"):
            count = _write_with_progress(made, sys.stdout, events)
            sys.stdout.flush()
    else:
        with open_out(out_file) as handle:
            count = _write_with_progress(made, handle, events)
    seconds = time.perf_counter() - started
    where = out_file if out_file is not None else "stdout"
    click.echo(f"synth: wrote {count:,} events to {where} in {seconds:.1f} s", err=True)
