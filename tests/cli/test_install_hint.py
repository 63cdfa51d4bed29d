"""The install command of a missing extra's message: the one that works where notify was
installed from (a clone is not on an index, so ``notify-engine[EXTRA]`` fails there)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from notify_cli.install import install_command, install_hint
from notify_cli.main import cli

ROOT = Path(__file__).resolve().parents[2]


def venv(tmp_path: Path, *, pip: bool = True) -> str:
    bin_dir = tmp_path / "clone" / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").touch()
    if pip:
        (bin_dir / "pip").touch()
    return str(bin_dir / "python")


def test_from_a_clone_the_editable_install_of_the_clone(tmp_path: Path) -> None:
    python = venv(tmp_path)
    clone = tmp_path / "clone"
    assert (
        install_command("server", source=clone, direct_url=None, executable=python, cwd=clone)
        == ".venv/bin/pip install -e '.[server]'"
    )
    # From elsewhere, the same command with absolute paths.
    assert install_command(
        "server", source=clone, direct_url=None, executable=python, cwd=tmp_path / "x"
    ) == (f"{clone}/.venv/bin/pip install -e '{clone}[server]'")


def test_an_install_from_a_folder_names_the_folder(tmp_path: Path) -> None:
    python = venv(tmp_path, pip=False)
    record: dict[str, object] = {"url": f"file://{tmp_path}/my%20clone", "dir_info": {}}
    command = install_command("pg", source=None, direct_url=record, executable=python, cwd=tmp_path)
    assert command == "clone/.venv/bin/python -m pip install 'my clone[pg]'"
    record["dir_info"] = {"editable": True}
    command = install_command("pg", source=None, direct_url=record, executable=python, cwd=ROOT)
    assert (
        command == f"{tmp_path}/clone/.venv/bin/python -m pip install -e '{tmp_path}/my clone[pg]'"
    )


@pytest.mark.parametrize(
    "record",
    [None, {"url": "https://example.org/notify_engine-0.1.0-py3-none-any.whl", "archive_info": {}}],
)
def test_from_an_index_or_a_wheel_the_distribution_name(
    tmp_path: Path, record: dict[str, object] | None
) -> None:
    python = venv(tmp_path)
    assert (
        install_command("report", source=None, direct_url=record, executable=python, cwd=ROOT)
        == f"{tmp_path}/clone/.venv/bin/pip install 'notify-engine[report]'"
    )


def test_db_up_without_the_server_extra_gives_the_clone_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tests run from a clone: `db up` without pgserver names `pip install -e` of it."""
    import sys

    monkeypatch.setitem(sys.modules, "pgserver", None)
    monkeypatch.setitem(sys.modules, "pgserver.postgres_server", None)
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(cli, ["db", "up", "--dir", str(tmp_path / "pg")])
    assert result.exit_code == 2
    hint = install_hint("server")
    assert hint.endswith(" install -e '.[server]'"), hint
    assert f"db up needs the server extra ({hint}, which brings pgserver)" in result.stderr
    assert "notify-engine" not in result.stderr
