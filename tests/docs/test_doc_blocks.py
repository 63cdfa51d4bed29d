"""Every command and code block of README.md and docs/*.md runs as written under a test, its
shown output compared, or is marked as a fragment (issue 27, point 5). tests/doc_blocks.py
says what each kind of block is; the blocks that need PostgreSQL run in
tests/pg/docs/test_doc_blocks_pg.py."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.doc_blocks import (
    ROOT,
    TIMEOUT,
    Block,
    blocks,
    environment,
    fake_clone,
    outputs,
    run_python,
)

BLOCKS = blocks()
OUTPUTS = outputs()


def distinct(kind: str) -> list[Block]:
    """The blocks of a kind, each text once (docs/start.md repeats the README's), less the
    texts a test elsewhere runs."""
    elsewhere = {block.body for block in BLOCKS if block.kind == "elsewhere"}
    seen: dict[str, Block] = {}
    for block in BLOCKS:
        if block.kind == kind and (kind == "elsewhere" or block.body not in elsewhere):
            seen.setdefault(block.body, block)
    return list(seen.values())


def by_where(kind: str) -> dict[str, Block]:
    return {block.where: block for block in distinct(kind)}


def test_every_block_runs_or_is_marked_as_a_fragment() -> None:
    covered = {block.body for block in BLOCKS if block.kind != "unmarked"}
    unmarked = [
        f"{block.where}: {block.body.splitlines()[0] if block.body.strip() else ''}"
        for block in BLOCKS
        if block.kind == "unmarked" and block.body not in covered
    ]
    assert unmarked == [], "run these blocks in a test, or mark them <!-- fragment: why -->"


def shows_output(block: Block) -> str | None:
    """Why a block that no test runs shows what a command prints, ``None`` when it does not:
    a line under a ``$ `` command, replay or table lines (JSON with a ``trigger``), or a
    marker that says it shows what something prints."""
    lines = [line for line in block.body.splitlines() if line.strip()]
    if block.kind == "fragment":
        pairs = itertools.pairwise(lines)
        if any(a.startswith("$ ") and not b.startswith("$ ") for a, b in pairs):
            return "a line under a $ command"
        if re.search(r"\b(prints|printed|output)\b", block.marker or ""):
            return f"its marker: {block.marker}"
    if block.kind in ("fragment", "data"):
        for line in lines:
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict) and "trigger" in value:
                return "a replay line"
    return None


def test_every_shown_output_is_its_commands_output() -> None:
    """What a page shows as a command's output is that command's output in a test: under its
    ``$ `` command in a console block, or in an output block after the block that runs
    (issue 40 point 3); never a data block or fragment a reader takes for one."""
    shown = [f"{block.where}: {why}" for block in BLOCKS if (why := shows_output(block))]
    assert shown == [], "show these under their command in a console block (or Output:)"
    assert all(block in OUTPUTS.values() for block in BLOCKS if block.kind == "output")


def test_shown_output_rules_see_what_they_refuse() -> None:
    """The rules above refuse what docs/inbox.md once showed (a line its command never
    printed, in a data block) and a fragment with lines under a command."""
    page = ROOT / "docs" / "inbox.md"
    line = '{"seq":12,"trigger":"inbox","recipient":"ana","decision":"new"}\n'
    assert shows_output(Block(page, 1, "json", line, "```", "data")) == "a replay line"
    console = "$ notify table check t.jsonl\n11 passed, 0 failed\n"
    fragment = Block(page, 1, "", console, "<!-- fragment: why -->", "fragment")
    assert shows_output(fragment) == "a line under a $ command"
    assert shows_output(Block(page, 1, "json", '{"seq": 1}\n', "```", "data")) is None


def test_the_classification_sees_each_kind() -> None:
    kinds = {block.kind for block in BLOCKS}
    assert {"python", "python-pg", "console", "sh", "output", "help", "fragment"} <= kinds
    assert all(block.kind != "python" or block.code for block in BLOCKS)


@pytest.mark.parametrize("where", sorted(by_where("python")))
def test_python_block_runs_as_written(where: str, tmp_path: Path) -> None:
    block = by_where("python")[where]
    done = run_python(block, fake_clone(tmp_path / "clone"))
    assert done.returncode == 0, done.stderr[-3000:]
    if block in OUTPUTS:
        assert done.stdout == OUTPUTS[block].body


def console_steps(block: Block) -> list[tuple[str, list[str]]]:
    """The commands of a console block (``$ `` lines) with the output lines shown under each."""
    steps: list[tuple[str, list[str]]] = []
    for line in block.body.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
    return steps


EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
    "optional-dependencies"
]
#: The docs install an extra from the clone they are read in (notify is on no index).
PIP_INSTALL = re.compile(r"pip install -e '\.\[([\w,]+)\]'$")


#: A console command's expected exit code other than 0, as the page writes it: ``# exit 1``.
EXIT = re.compile(r"#\s*exit (\d+)\s*$")


@pytest.mark.parametrize("where", sorted(by_where("console")))
def test_console_block_runs_as_written(where: str, tmp_path: Path) -> None:
    """Each ``$ `` command runs in a clone, in order; the lines shown under it are its whole
    stdout, and it exits 0 (or the code its ``# exit N`` comment says)."""
    block = by_where("console")[where]
    work = fake_clone(tmp_path / "clone")
    shown = OUTPUTS[block].body.splitlines() if block in OUTPUTS else []
    for command, output in console_steps(block):
        install = PIP_INSTALL.match(command)
        if install:  # the extras it names exist, and the dev extras (this run) hold them
            assert set(install.group(1).split(",")) <= set(EXTRAS), command
            continue
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=work,
            env=environment(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        code = EXIT.search(command)
        expected = int(code.group(1)) if code else 0
        assert done.returncode == expected, f"{command}: {done.stderr[-3000:]}"
        assert "Traceback" not in done.stderr, command
        if output:
            assert done.stdout.splitlines() == output, command
    assert not shown


@pytest.mark.parametrize("where", sorted(by_where("sh")))
def test_sh_block_runs_as_written(where: str, tmp_path: Path) -> None:
    """The README's commands, with ``.venv/bin/notify`` of a clone: ``set -eu`` only, so a
    pipe into ``head`` ends as it does in a reader's shell. Each block runs twice in the same
    clone (issue 40 point 1): a second run finds the first one's files and does the same."""
    block = by_where("sh")[where]
    work = fake_clone(tmp_path / "clone")
    for run in (1, 2):
        done = subprocess.run(
            ["bash", "-c", f"set -eu\n{block.body}"],
            cwd=work,
            env=environment(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        assert done.returncode == 0, (run, done.stderr[-3000:])
        assert "Traceback" not in done.stderr
        if block in OUTPUTS:
            assert done.stdout == OUTPUTS[block].body, run


@pytest.mark.parametrize("where", sorted(by_where("data")))
def test_data_block_parses(where: str) -> None:
    block = by_where("data")[where]
    if block.info.split()[0] == "yaml":
        assert yaml.safe_load(block.body) is not None
        return
    decoder, text, at, values = json.JSONDecoder(), block.body, 0, 0
    while text[at:].strip():  # one or more JSON values, each on one line or several
        at += len(text[at:]) - len(text[at:].lstrip())
        _, at = decoder.raw_decode(text, at)
        values += 1
    assert values >= 1


def test_help_blocks_are_those_the_reference_test_checks() -> None:
    reference = (ROOT / "tests" / "cli" / "test_cli_reference.py").read_text(encoding="utf-8")
    assert "cli.md" in reference
    assert all(block.page.name == "cli.md" for block in distinct("help"))
