"""The ``notify`` command group; each subcommand lives in a module of its own.

The group is also the one place where what escapes a command becomes a one-line message:
bad data the library refused (`InvalidInput`) and a failed read or write (`OSError`) exit 2
with ``notify: REASON`` on stderr. Commands name the file and line where they can; this is the
net under them. Every other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
from typing import Any

import click

from notify_cli.db import db
from notify_cli.options import BadInput, flush_stdout
from notify_cli.records import records
from notify_cli.replay import explain_command, replay
from notify_cli.serve import serve
from notify_cli.synth import synth
from notify_cli.table import table
from notify_cli.worker import worker
from notify_core.errors import InvalidInput


class NotifyGroup(click.Group):
    """A click group that turns bad input and failed I/O into one line and exit code 2."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; flush stdout before leaving so that a failed write is reported."""
        try:
            result = super().invoke(ctx)
        except InvalidInput as error:
            raise BadInput(str(error)) from None
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise  # click ends quietly on a closed pipe (`notify replay LOG | head`)
            where = f"{exc.filename}: " if exc.filename else ""
            raise BadInput(f"{where}{exc.strerror or exc}") from None
        except (click.exceptions.Exit, SystemExit) as exit_:
            code = exit_.exit_code if isinstance(exit_, click.exceptions.Exit) else exit_.code
            if code in (0, None):
                flush_stdout()
            else:
                _flush_quietly()
            raise
        except click.ClickException:
            _flush_quietly()
            raise
        flush_stdout()
        return result


def _flush_quietly() -> None:
    """Flush stdout while the command already fails; its own message and code stand."""
    try:
        flush_stdout()
    except BadInput as error:
        error.show()


@click.group(cls=NotifyGroup)
@click.version_option(package_name="notify-engine")
def cli() -> None:
    """notify: who is told what, when and how - replay, decision tables, explain, database."""


cli.add_command(table)
cli.add_command(replay)
cli.add_command(explain_command)
cli.add_command(db)
cli.add_command(worker)
cli.add_command(records)
cli.add_command(serve)
cli.add_command(synth)
