"""Keep the ``--help`` texts in docs/cli.md in step with the ``notify`` command.

As a mkdocs hook (mkdocs.yml ``hooks``) it compares every code block of cli.md that starts
with ``Usage: notify ...`` with the command's real help and logs a warning when they differ,
which fails ``mkdocs build --strict``. Run as a script, ``python docs/cli_help.py``, it
rewrites those blocks in place from the installed command.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from notify_cli.main import cli

PAGE = "cli.md"
HELP_BLOCK = re.compile(r"```\n(Usage: notify[^\n]*\n.*?)\n```", re.DOTALL)
log = logging.getLogger("mkdocs.hooks.cli_help")


def help_text(usage_line: str) -> str:
    """Return the help of the command named by a ``Usage: notify ... [OPTIONS] ...`` line."""
    words = usage_line.split()[2:]
    command = words[: words.index("[OPTIONS]")]
    # 78 columns: what click prints when stdout is not a terminal (80 minus its margin).
    result = CliRunner().invoke(cli, [*command, "--help"], prog_name="notify", terminal_width=78)
    return result.output.rstrip("\n")


def stale_blocks(markdown: str) -> list[str]:
    """Return the usage lines of the help blocks that differ from the command's help."""
    return [
        m.group(1).splitlines()[0]
        for m in HELP_BLOCK.finditer(markdown)
        if m.group(1) != help_text(m.group(1).splitlines()[0])
    ]


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Warn (a failure under ``--strict``) when a help block of cli.md is out of date."""
    if page.file.src_uri == PAGE:
        for usage in stale_blocks(markdown):
            log.warning(
                "%s: the help block '%s' differs from the command; run python docs/cli_help.py",
                PAGE,
                usage,
            )
    return markdown


def main() -> None:
    """Rewrite the help blocks of docs/cli.md from the installed command."""
    path = Path(__file__).with_name(PAGE)
    text = path.read_text(encoding="utf-8")
    new = HELP_BLOCK.sub(lambda m: "```\n" + help_text(m.group(1).splitlines()[0]) + "\n```", text)
    path.write_text(new, encoding="utf-8")
    print(f"{path}: {'updated' if new != text else 'up to date'}", file=sys.stderr)


if __name__ == "__main__":
    main()
