"""``notify synth``: write a large synthetic event log (formats.md section 2) for load tests."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import IO

import click

from notify_cli import fastjson
from notify_cli.options import BadInput
from notify_core.replay import dumps_line
from notify_core.synth import SynthConfig, synth_events


def write_log(events: Iterable[dict[str, object]], out: IO[str]) -> int:
    """Write events as JSON Lines; return how many were written."""
    count = 0
    write = out.write
    batch: list[str] = []
    for event in events:
        batch.append(dumps_line(event, fastjson.dumps))
        if len(batch) == 4096:
            write("\n".join(batch) + "\n")
            count += len(batch)
            batch.clear()
    if batch:
        write("\n".join(batch) + "\n")
        count += len(batch)
    return count


@click.command()
@click.option("--events", default=100_000, show_default=True, help="Events in all.")
@click.option("--users", default=10_000, show_default=True, help="People (1 in 200 agents).")
@click.option("--seed", default=0, show_default=True, help="The same seed gives the same log.")
@click.option(
    "--max-fanout", default=500, show_default=True, help="Readers of the largest channel."
)
@click.option("--out", "out_file", metavar="FILE", help="Write the log here instead of stdout.")
def synth(events: int, users: int, seed: int, max_fanout: int, out_file: str | None) -> None:
    """Write a synthetic event log of a large instance, deterministic for a seed.

    First the world (people, spaces, channels whose reader counts range from 1 to
    --max-fanout, devices, push registrations, some quiet hours, settings and preferences),
    then activity: mostly messages, with mentions, DMs, agent runs, reads, presence,
    preference changes, grants and revocations. Replay it with `notify replay FILE`.
    """
    try:
        config = SynthConfig(events=events, users=users, seed=seed, max_fanout=max_fanout)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    if out_file is None:
        write_log(synth_events(config), sys.stdout)
        return
    try:
        handle = open(out_file, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise BadInput(f"{out_file}: cannot write: {exc.strerror}") from None
    with handle:
        write_log(synth_events(config), handle)
