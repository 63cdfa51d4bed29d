"""The install command a missing extra's message gives: the one that works where notify is.

notify is not published on a package index: a clone is installed with ``pip install -e .``
(README), and ``pip install 'notify-engine[EXTRA]'`` would fail there. So the command is
worked out from how the running notify was installed:

- from a source tree (an editable install, or the clone on ``PYTHONPATH``: the package's
  parent folder holds notify's ``pyproject.toml``): ``pip install -e 'CLONE[EXTRA]'``;
- from a local folder without ``-e`` (its ``direct_url.json``, PEP 610, names a folder):
  ``pip install 'FOLDER[EXTRA]'``, with ``-e`` when the record says editable;
- otherwise (an index, a wheel): the distribution's name, ``pip install 'notify-engine[EXTRA]'``.

The pip is that of the running interpreter (``.venv/bin/pip`` next to it), and paths under
the current folder are written relative to it, so from the clone with the README's venv the
command reads ``.venv/bin/pip install -e '.[server]'``.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tomllib
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

__all__ = ["DISTRIBUTION", "install_command", "install_hint"]

#: The distribution's name in pyproject.toml (what an index would publish).
DISTRIBUTION = "notify-engine"


def install_hint(extra: str) -> str:
    """The command that installs ``extra`` into the running notify, where it was installed."""
    return install_command(
        extra,
        source=_source_tree(),
        direct_url=_direct_url(),
        executable=sys.executable,
        cwd=Path.cwd(),
    )


def install_command(
    extra: str,
    *,
    source: Path | None,
    direct_url: dict[str, object] | None,
    executable: str,
    cwd: Path,
) -> str:
    """The install command from the facts `install_hint` gathers (pure, for tests).

    Args:
        extra: the extra's name, e.g. ``server``, or several joined by commas.
        source: the source tree the running code comes from, if it does.
        direct_url: the distribution's ``direct_url.json`` (PEP 610), if it has one.
        executable: the running interpreter.
        cwd: the current folder (paths under it are written relative to it).
    """
    pip = _pip(Path(executable), cwd)
    if source is not None:
        return f"{pip} install -e {shlex.quote(f'{_shown(source, cwd)}[{extra}]')}"
    folder = _folder(direct_url)
    if folder is not None:
        info = direct_url.get("dir_info") if direct_url else None
        editable = isinstance(info, dict) and info.get("editable") is True
        spec = shlex.quote(f"{_shown(folder, cwd)}[{extra}]")
        return f"{pip} install {'-e ' if editable else ''}{spec}"
    return f"{pip} install {shlex.quote(f'{DISTRIBUTION}[{extra}]')}"


def _pip(executable: Path, cwd: Path) -> str:
    pip = executable.with_name("pip")
    if not pip.exists():
        return f"{shlex.quote(_shown(executable, cwd))} -m pip"
    return shlex.quote(_shown(pip, cwd))


def _shown(path: Path, cwd: Path) -> str:
    """A path as the user types it: relative when under the current folder."""
    # abspath, not resolve: a venv's bin/python is often a link out of the venv.
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(Path(os.path.abspath(cwd)))
    except ValueError:
        return str(absolute)
    return str(relative) if relative.parts else "."


def _folder(direct_url: dict[str, object] | None) -> Path | None:
    if not direct_url or "dir_info" not in direct_url:
        return None
    url = direct_url.get("url")
    if not isinstance(url, str) or not url.startswith("file://"):
        return None
    return Path(unquote(urlparse(url).path))


def _source_tree() -> Path | None:
    """The clone the running notify_cli comes from, ``None`` when it is an installed copy."""
    root = Path(__file__).resolve().parents[1]
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = project.get("project", {}).get("name")
    return root if name == DISTRIBUTION else None


def _direct_url() -> dict[str, object] | None:
    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not text:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None
