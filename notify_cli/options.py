"""Shared pieces of the commands: reading input files and reporting bad input."""

from __future__ import annotations

import errno
import math
import os
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from notify_cli.logs import LOG_FORMATS
from notify_cli.secrets import redact, remember
from notify_core.hints.decide import Policy
from notify_core.replay.run import policy_from_mapping
from notify_core.values.errors import NotifyError

if TYPE_CHECKING:  # click >= 8.2 types ParamType generically; older ones cannot subscript it
    _ParamType = click.ParamType[str, Any]
else:
    _ParamType = click.ParamType

#: The path that names standard input (``notify replay -``) and its name in messages.
STDIN = "-"
STDIN_LABEL = "<stdin>"

#: Exit code for bad input: an unreadable file, a bad line (formats.md, common rules).
EXIT_BAD_INPUT = 2
#: The schema notify owns in a database unless told otherwise.
DEFAULT_SCHEMA = "notify"


class BadInput(click.ClickException):
    """A user's input is unreadable: printed as one line on stderr, exit code 2."""

    exit_code = EXIT_BAD_INPUT

    def show(self, file: object = None) -> None:
        """Print the message without a traceback or usage text (and without a password)."""
        click.echo(f"notify: {redact(self.format_message())}", err=True)


class Utf8Text(_ParamType):
    """Option text that must be UTF-8: a DSN or a schema name goes to the database as UTF-8.

    A byte that is not UTF-8 in an argument reaches Python as a lone surrogate
    (PEP 383); it is refused here with the option named, before any library encodes it.
    """

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Return the text, or raise `BadInput` naming the option."""
        try:
            str(value).encode("utf-8")
        except UnicodeEncodeError as exc:
            option = param.opts[0] if param is not None and param.opts else "argument"
            raise BadInput(
                f"{option}: not UTF-8 text (a bad byte at character {exc.start + 1})"
            ) from None
        remember(str(value))  # a DSN or URL with a password: no message may repeat it
        return value


if TYPE_CHECKING:
    _SecondsBase = click.ParamType[float, Any]
else:
    _SecondsBase = click.ParamType


class Seconds(_SecondsBase):
    """A finite number of seconds within [least, most]; anything else names the option."""

    name = "seconds"

    def __init__(self, least: float, most: float) -> None:
        self.least, self.most = least, most

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Return the number, or raise `BadInput` naming the option and the range."""
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not self.least <= number <= self.most:  # also refuses NaN
            option = param.opts[0] if param is not None and param.opts else "seconds"
            raise BadInput(
                f"{option}: must be a number of seconds from {self.least:g} to {self.most:g},"
                f" not {value!r}"
            )
        return number


#: ``--dsn``: where the database is (shared by every command that talks to PostgreSQL).
dsn_option = click.option(
    "--dsn",
    envvar="NOTIFY_DSN",
    required=True,
    metavar="DSN",
    type=Utf8Text(),
    help="libpq connection string or URI of the database (or the NOTIFY_DSN variable).",
)
#: ``--metrics-host``: where a command's ``--metrics-port`` listens (worker and serve).
metrics_host_option = click.option(
    "--metrics-host",
    default="127.0.0.1",
    show_default=True,
    metavar="ADDR",
    type=Utf8Text(),
    help="The address --metrics-port listens on (0.0.0.0: every interface).",
)
#: ``--log-level``: the lowest level a long-running command logs (worker and serve).
log_level_option = click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
    help="Lowest level of the log lines on stderr.",
)
#: ``--log-format``: how a long-running command writes its log lines (worker and serve).
log_format_option = click.option(
    "--log-format",
    type=click.Choice(LOG_FORMATS),
    default="json",
    show_default=True,
    help="Log lines on stderr as JSON objects or as text (time, level, message, key=value).",
)
#: ``--schema``: the schema notify owns in that database.
schema_option = click.option(
    "--schema",
    default=DEFAULT_SCHEMA,
    show_default=True,
    metavar="NAME",
    type=Utf8Text(),
    help="The schema notify owns in that database.",
)


def label(path: str) -> str:
    """Return how messages name a path (`STDIN_LABEL` for standard input)."""
    return STDIN_LABEL if path == STDIN else path


@contextmanager
def writing(name: str) -> Iterator[None]:
    """Turn a failed write in the block (a full disk, ``/dev/full``) into `BadInput`.

    A closed pipe is left to click, which ends the command quietly as ``head`` expects.
    """
    try:
        yield
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            raise
        raise BadInput(f"{name}: cannot write: {exc.strerror or exc}") from None


@contextmanager
def open_out(path: str) -> Iterator[IO[str]]:
    """Open ``path`` for writing text; any failure, closing included, is `BadInput`."""
    with writing(path), open(path, "w", encoding="utf-8") as handle:
        yield handle


def write_file(path: str, text: str) -> None:
    """Write a whole text file, or raise `BadInput` naming it."""
    with open_out(path) as handle:
        handle.write(text)


def flush_stdout() -> None:
    """Flush standard output now, so a failed write is reported (not lost at exit).

    Raises:
        BadInput: the write failed; standard output is then pointed at the null device,
            so Python's own flush at exit has nothing left to complain about.
    """
    try:
        with writing("stdout"):
            sys.stdout.flush()
    except BadInput:
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, sys.stdout.fileno())
            os.close(null)
        except (OSError, ValueError):  # no file descriptor (a test runner's stream)
            pass
        raise


def read_text(path: str) -> str:
    """Read a UTF-8 text file or raise `BadInput` naming the file (and line) and the reason."""
    try:
        data = sys.stdin.buffer.read() if path == STDIN else Path(path).read_bytes()
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory, not a file") from None
    except OSError as exc:
        raise BadInput(f"{label(path)}: cannot read: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise BadInput(f"{label(path)}:{line}: not UTF-8 text ({exc.reason})") from None


#: The largest key file a command reads (a PEM key is a few KiB; /dev/zero is endless).
KEY_FILE_LIMIT = 64 * 1024


def read_bounded(path: str, option: str, limit: int = KEY_FILE_LIMIT) -> bytes:
    """Read a small file whole, at most ``limit`` bytes (a device or a wrong file named by an
    option must not exhaust memory).

    Raises:
        BadInput: unreadable, or larger than ``limit``, with the option and file named.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise BadInput(f"{option} {path}: cannot read it ({exc.strerror})") from None
    if len(data) > limit:
        raise BadInput(f"{option} {path}: larger than {limit // 1024} KiB, not a key file")
    return data


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


def lines_of(path: str) -> Iterator[str | bytes]:
    """Yield the lines of a UTF-8 text file lazily (memory stays bounded for large logs).

    ``-`` reads standard input. A line that is not UTF-8 comes as its bytes, for the event
    reader to report as a bad line of its own (with its number) while the others go on.

    Raises:
        BadInput: the file cannot be opened or read.
    """
    try:
        handle = sys.stdin.buffer if path == STDIN else open(path, "rb")  # noqa: SIM115
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory, not a file") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror}") from None
    try:
        for raw in handle:
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError:
                yield raw
    except OSError as exc:
        raise BadInput(f"{label(path)}: cannot read: {exc.strerror}") from None
    finally:
        if path != STDIN:
            handle.close()
