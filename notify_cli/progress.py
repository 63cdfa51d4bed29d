"""The progress line of a long replay on stderr (a terminal only: data stays on stdout).

Where the input's size is known (a regular file, also standard input copied for
``--compare``) the line shows how far the replay is, the lines so far with an estimate of
the total, and the time left; else (a pipe, the database) a counter of lines and the time
spent. The estimate counts the characters of the lines read against the file's bytes: exact
for ASCII logs (JSON escapes most text), a little short for others.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

__all__ = ["STEP", "input_size", "progress_lines"]

#: Lines between two updates of the progress line (an update costs far more than a line).
STEP = 10_000


def input_size(path: str | None) -> int | None:
    """The size in bytes of a log read from a regular file; ``None`` for anything else."""
    if path is None:
        return None
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_size if os.path.isfile(path) else None


def progress_lines(
    label: str, lines: Iterable[str | bytes], size: int | None, console: Console, show: bool
) -> Iterator[str | bytes]:
    """Yield the lines, showing the progress line on ``console`` when ``show`` (stderr is a
    terminal) and the total where ``size`` is known."""
    if not show:
        yield from lines
        return
    columns: list[ProgressColumn | str]
    if size:
        columns = [
            TextColumn("replaying"),
            BarColumn(bar_width=None),
            TaskProgressColumn(),
            TextColumn("{task.fields[lines]}"),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
        ]
    else:
        columns = [
            TextColumn("replaying"),
            BarColumn(bar_width=None),
            TextColumn("{task.fields[lines]}"),
            TimeElapsedColumn(),
        ]
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(label, total=size or None, lines="0 lines")
        read = 0  # characters (bytes for a line that is not UTF-8) of the lines so far
        count = 0
        for count, line in enumerate(lines, start=1):
            read += len(line)
            if count % STEP == 0:
                progress.update(task, completed=read, lines=lines_text(count, read, size))
            yield line
        progress.update(task, completed=size or read, lines=lines_text(count, size or 0, size))


def lines_text(count: int, read: int, size: int | None) -> str:
    """``120,000 lines of ~266,000`` (the total estimated from the bytes read), or the count
    alone when the size is unknown."""
    if not size or not read:
        return f"{count:,} lines"
    estimate = max(count, round(count * size / read))
    return f"{count:,} lines of ~{estimate:,}"
