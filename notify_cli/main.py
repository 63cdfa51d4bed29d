"""The ``notify`` command group; each subcommand lives in a module of its own.

The group is also the one place where what escapes a command becomes a one-line message:
bad data the library refused (`InvalidInput`) and a failed read or write (`OSError`) exit 2
with ``notify: REASON`` on stderr. Commands name the file and line where they can; this is the
net under them. Every other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import gc
import importlib
from typing import Any, Final

import click

from notify_cli.options import BadInput, flush_stdout
from notify_core.values.errors import InvalidInput

#: Each command of the group: the module that defines it and the command's name there. A
#: command's module is imported when the command is asked for (`NotifyGroup.get_command`):
#: ``notify replay`` loads neither psycopg nor the server's modules, which cost a tenth of a
#: second and about 5 MiB of its peak memory (docs/speed.md).
COMMANDS: Final = {
    "db": ("notify_cli.db", "db"),
    "explain": ("notify_cli.replay", "explain_command"),
    "records": ("notify_cli.records", "records"),
    "replay": ("notify_cli.replay", "replay"),
    "serve": ("notify_cli.serve", "serve"),
    "synth": ("notify_cli.synth", "synth"),
    "table": ("notify_cli.table", "table"),
    "worker": ("notify_cli.worker", "worker"),
}


class NotifyGroup(click.Group):
    """A click group that turns bad input and failed I/O into one line and exit code 2, and
    loads each command's module when the command is asked for (`COMMANDS`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Return the names of the commands, added ones and `COMMANDS`, sorted."""
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """Return a command by name, importing its module on first use; ``None``: unknown."""
        command = self.commands.get(cmd_name)
        if command is None and cmd_name in COMMANDS:
            module, name = COMMANDS[cmd_name]
            command = getattr(importlib.import_module(module), name)
            assert isinstance(command, click.Command)
            self.commands[cmd_name] = command
        return command

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


def main() -> None:
    """Run ``notify`` as a program (the console script and ``python -m notify_cli``).

    The group itself (`cli`) is what a host or a test calls in its own process. As a program,
    what a command built is left to the operating system when it ends: frozen, the objects
    are skipped by the collector's last pass at exit, which would otherwise walk and free a
    replay's whole world (about 3 % of the 200,000-event replay; docs/speed.md). Files and
    connections are closed by the commands themselves; ``atexit`` handlers still run.
    """
    try:
        cli()
    finally:
        gc.freeze()
