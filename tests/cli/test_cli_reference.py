"""docs/cli.md covers every command of ``notify`` (issue 27, point 6): each command and
subcommand click knows has a ``Usage: notify ...`` block there, and each block's text is the
command's own help (docs/cli_help.py, the mkdocs hook, rewrites and checks them)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from notify_cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs"))

from cli_help import HELP_BLOCK, help_text  # noqa: E402


def command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = []
    ctx = click.Context(group)
    # `list_commands`/`get_command`: the top group loads its commands' modules when asked.
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        paths.append((*prefix, name))
        if isinstance(command, click.Group):
            paths += command_paths(command, (*prefix, name))
    return paths


def test_every_command_has_its_help_in_cli_md() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    documented = {
        tuple(re.sub(r"\[.*", "", m.group(1).splitlines()[0]).split()[2:])
        for m in HELP_BLOCK.finditer(text)
    }
    missing = [" ".join(p) for p in command_paths(cli) if p not in documented]
    assert not missing, f"docs/cli.md has no Usage block for: {missing} (run docs/cli_help.py)"


def test_every_help_block_is_the_commands_help() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for match in HELP_BLOCK.finditer(text):
        block = match.group(1)
        assert block == help_text(block.splitlines()[0]), block.splitlines()[0]
