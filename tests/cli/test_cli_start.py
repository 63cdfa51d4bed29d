"""The start and the end of the ``notify`` program: commands load their modules when asked
for, and the program leaves what it built to the operating system (docs/speed.md)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys

import click
import pytest

from notify_cli.main import COMMANDS, cli, main


def test_every_command_of_the_table_is_its_module_command() -> None:
    ctx = click.Context(cli)
    assert cli.list_commands(ctx) == sorted(COMMANDS)
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert isinstance(command, click.Command)
        assert command.name == name
    assert cli.get_command(ctx, "nonsense") is None


def test_replay_loads_neither_postgresql_nor_the_server() -> None:
    code = (
        "import json, sys, click\n"
        "from notify_cli.main import cli\n"
        "cli.get_command(click.Context(cli), 'replay')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('psycopg', 'notify_pg', 'asyncio', 'notify_cli'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = json.loads(out)
    assert not [m for m in loaded if m.startswith(("psycopg", "notify_pg", "asyncio"))]
    assert "notify_cli.replay" in loaded
    assert not {"notify_cli.db", "notify_cli.worker", "notify_cli.serve"} & set(loaded)


def test_unknown_command_is_refused_by_name() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "notify_cli", "replai"], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "No such command 'replai'" in result.stderr


def test_main_runs_the_group_and_freezes_what_it_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["notify", "--help"])
    assert gc.get_freeze_count() == 0
    try:
        with pytest.raises(SystemExit) as ended:
            main()
        assert ended.value.code == 0
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
