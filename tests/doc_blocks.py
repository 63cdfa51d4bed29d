"""The fenced blocks of README.md and docs/*.md, and what each one is (issue 27, point 5).

A block is one of:

- ``fragment``: an HTML comment ``<!-- fragment -->`` or ``<!-- fragment: why -->`` on the
  line before its fence (a signature, a shape, a part of a larger program, a command that
  installs or needs what a test cannot have);
- ``elsewhere``: the comment before its fence is a marker that a test module of ``tests/``
  names (that module runs the block: ``<!-- embedding-worker -->``,
  ``<!-- postgresql-path: ... -->``);
- ``output``: the output of the runnable block before it on the page (the line before the
  fence reads ``Output:`` or is ``<!-- output -->``), compared when that block runs;
- ``help``: a ``notify ... --help`` text of docs/cli.md (``Usage: notify``), which
  tests/cli/test_cli_reference.py checks against click;
- ``python``: a ```` ```python ```` block, run in a fresh interpreter; with
  ``<!-- postgresql -->`` before it, against a throwaway database named by ``NOTIFY_DSN``
  (tests/pg/docs/test_doc_blocks_pg.py);
- ``continued``: a ```` ```python ```` block after ``<!-- continued -->``, run after the
  python blocks before it on the page (their names stay defined);
- ``console``: a block whose lines start with ``$ `` (commands) followed by their output;
- ``sh``: a ```` ```sh ```` block of commands without prompts (the README's);
- ``data``: a ```` ```json ```` or ```` ```yaml ```` block, which must parse.

Anything else is ``unmarked``, which tests/docs/test_doc_blocks.py refuses.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(
    r"^(?P<indent> *)(?P<fence>```+)(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)(?P=fence)[ \t]*$",
    re.DOTALL | re.MULTILINE,
)
COMMENT = re.compile(r"^\s*<!--\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    info: str
    body: str
    before: str  # the last non-blank line before the fence
    kind: str
    code: str = ""  # for python blocks: what runs (a continued block after its chain)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def marker(self) -> str | None:
        found = COMMENT.match(self.before)
        return found.group(1) if found else None


def test_sources() -> str:
    return "\n".join(
        p.read_text(encoding="utf-8") for p in sorted((ROOT / "tests").rglob("test_*.py"))
    )


def classify(page: Path, info: str, body: str, before: str, sources: str) -> str:
    comment = COMMENT.match(before)
    marker = comment.group(1) if comment else None
    language = info.split()[0] if info.split() else ""
    if marker is not None:
        if marker == "fragment" or marker.startswith("fragment:"):
            return "fragment"
        if marker == "output":
            return "output"
        if marker == "postgresql" and language == "python":
            return "python-pg"
        if marker == "continued" and language == "python":
            return "continued"
        name = marker.split(":", 1)[0].strip()
        if f"<!-- {name}" in sources:
            return "elsewhere"
    if before.rstrip().endswith("Output:"):
        return "output"
    if page.name == "cli.md" and body.startswith("Usage: notify"):
        return "help"
    if language == "python":
        return "python"
    if language in ("json", "yaml"):
        return "data"
    lines = [line for line in body.splitlines() if line.strip()]
    if lines and lines[0].startswith("$ "):
        return "console"
    if language == "sh":
        return "sh"
    return "unmarked"


def blocks() -> list[Block]:
    sources = test_sources()
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            head = text[: match.start()].splitlines()
            before = next((line for line in reversed(head) if line.strip()), "")
            indent = match.group("indent")
            body = "\n".join(
                line[len(indent) :] if line.startswith(indent) else line
                for line in match.group("body").splitlines()
            )
            body += "\n"
            info = match.group("info").strip()
            kind = classify(page, info, body, before, sources)
            code = ""
            if kind in ("python", "python-pg"):
                code = body
            elif kind == "continued":
                chain = [b for b in found if b.page == page and b.code]
                assert chain, f"{page.name}:{len(head) + 1}: continues no python block"
                code = chain[-1].code + "\n" + body
                kind = "python-pg" if chain[-1].kind == "python-pg" else "python"
            found.append(Block(page, len(head) + 1, info, body, before, kind, code))
    return found


def outputs() -> dict[Block, Block]:
    """Each runnable block and the output block that follows it on its page."""
    paired: dict[Block, Block] = {}
    last: Block | None = None
    for block in blocks():
        if block.kind == "output":
            assert last is not None and last.page == block.page, f"{block.where}: output of what?"
            paired[last] = block
        elif block.kind in RUNNABLE:
            last = block
    return paired


RUNNABLE = ("python", "python-pg", "console", "sh", "elsewhere")


def fake_clone(work: Path) -> Path:
    """A directory that looks like the clone the pages speak from: ``.venv`` (this
    interpreter's environment), ``examples`` and ``docs`` linked in."""
    work.mkdir(parents=True, exist_ok=True)
    (work / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    for name in ("examples", "docs"):
        (work / name).symlink_to(ROOT / name, target_is_directory=True)
    return work


def environment(**extra: str) -> dict[str, str]:
    path = f"{Path(sys.prefix) / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    keep = {k: v for k, v in os.environ.items() if k != "NOTIFY_DSN"}
    return keep | {"PATH": path} | extra


def run_python(block: Block, work: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", block.code],
        cwd=work,
        env=environment(**env),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


#: A bound for a hang, not for speed.
TIMEOUT = 300
