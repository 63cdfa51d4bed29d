"""Shared pieces of the commands: reading input files and reporting bad input."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path

import click

from notify_core.decide import Policy
from notify_core.errors import NotifyError
from notify_core.replay import policy_from_mapping

#: Exit code for bad input: an unreadable file, a bad line (formats.md, common rules).
EXIT_BAD_INPUT = 2
#: The schema notify owns in a database unless told otherwise.
DEFAULT_SCHEMA = "notify"

#: ``--dsn``: where the database is (shared by every command that talks to PostgreSQL).
dsn_option = click.option(
    "--dsn",
    envvar="NOTIFY_DSN",
    required=True,
    metavar="DSN",
    help="libpq connection string or URI of the database (or the NOTIFY_DSN variable).",
)
#: ``--schema``: the schema notify owns in that database.
schema_option = click.option(
    "--schema",
    default=DEFAULT_SCHEMA,
    show_default=True,
    metavar="NAME",
    help="The schema notify owns in that database.",
)


class BadInput(click.ClickException):
    """A user's input is unreadable: printed as one line on stderr, exit code 2."""

    exit_code = EXIT_BAD_INPUT

    def show(self, file: object = None) -> None:
        """Print the message without a traceback or usage text."""
        click.echo(f"notify: {self.format_message()}", err=True)


def read_text(path: str) -> str:
    """Read a UTF-8 text file or raise `BadInput` naming the file and the reason."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory, not a file") from None
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror}") from None


def read_policy(path: str | None) -> Policy:
    """Read a TOML policy file (formats.md section 3); ``None`` gives the defaults.

    Raises:
        BadInput: unreadable file, bad TOML, an unknown key or a bad value, with the file named.
    """
    if path is None:
        return Policy()
    text = read_text(path)
    try:
        values = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: not TOML: {exc}") from None
    try:
        return policy_from_mapping(values)
    except NotifyError as error:
        raise BadInput(f"{path}: {error.message}") from None


def lines_of(path: str) -> Iterator[str]:
    """Yield the lines of a UTF-8 text file lazily (memory stays bounded for large logs).

    Raises:
        BadInput: the file cannot be opened or is not UTF-8 (the line is named).
    """
    try:
        handle = open(path, encoding="utf-8")  # noqa: SIM115 - closed by the with below
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory, not a file") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror}") from None
    with handle:
        number = 0
        try:
            for number, line in enumerate(handle, start=1):  # noqa: B007 - used after the loop
                yield line
        except UnicodeDecodeError as exc:
            raise BadInput(f"{path}:{number + 1}: not UTF-8 text ({exc.reason})") from None
