"""Shared pieces of the commands: reading input files and reporting bad input."""

from __future__ import annotations

from pathlib import Path

import click

#: Exit code for bad input: an unreadable file, a bad line (formats.md, common rules).
EXIT_BAD_INPUT = 2


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
