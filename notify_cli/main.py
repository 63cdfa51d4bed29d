"""The ``notify`` command group; each subcommand lives in a module of its own."""

from __future__ import annotations

import click

from notify_cli.db import db
from notify_cli.records import records
from notify_cli.replay import explain_command, replay
from notify_cli.synth import synth
from notify_cli.table import table
from notify_cli.worker import worker


@click.group()
@click.version_option(package_name="notify-engine")
def cli() -> None:
    """notify: who is told what, when and how - replay, decision tables, explain, database."""


cli.add_command(table)
cli.add_command(replay)
cli.add_command(explain_command)
cli.add_command(db)
cli.add_command(worker)
cli.add_command(records)
cli.add_command(synth)
