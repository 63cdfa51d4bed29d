"""The site reads as a start (issue 27, point 6): the guides say how things work and keep no
measurement diaries (measured figures live on docs/speed.md), and no page, no ``--help`` text,
no docstring and no comment of the packages cites a seed note that no reader has (a rule
id of docs/rules.md or a page instead; docs/api.md renders the docstrings)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import click

from notify_cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DIARY = re.compile(r"load average|\b20\d\d-\d\d-\d\d (?:at )?\d\d:\d\d(?!:)")
# "seed 001 note 10", "Seed 004 section 9.3", "seed-002", "seed\n004" (a docstring's line break),
# "seed notes"; never a random seed ("--seed 7", "seed=1", "seed 1 synthetic log"). Also the
# numbers of a seed without its name: "(note 11)", and the preference-record pattern's
# "Operation 30", "Identity 2-4", "Temporal property 5" ... (its invariants are numbered on
# docs/rules.md#records, and `notify records audit` prints its check numbers: both stay).
SEED = re.compile(
    r"(?i:(?<!-)\bseeds?(?:\s+|-)\d{3}\b|\bseed notes?\b)"
    r"|\b(?:[Nn]otes? \d+|(?:Operation|Identity|Instance|State|Non-goal) \d+|Temporal property \d"
    r"|Capability requirement \d|Concurrency \d|AZ-[A-Z]+\d+)\b"
)
PACKAGES = ("notify_core", "notify_pg", "notify_reference_host", "notify_cli")
#: The named SQL of the packages (notify_pg, the demo host): comments only (`--`). The
#: migrations are not read: an applied migration is checksummed (`migration_changed`), so its
#: text stays as it was applied.
QUERIES = sorted(
    path for package in PACKAGES for path in (ROOT / package / "queries").glob("*.sql")
)


def test_measured_figures_and_their_diaries_are_on_the_speed_page_only() -> None:
    found = [
        f"{page.relative_to(ROOT)}:{number}: {line.strip()}"
        for page in PAGES
        if page.name != "speed.md"
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1)
        if DIARY.search(line)
    ]
    assert found == [], "move these measurements to docs/speed.md"


def test_the_speed_page_is_a_results_page() -> None:
    """Issue 35: the latest figures of each benchmark, how to run it and where the time goes,
    in at most 300 lines; the history of the runs is the page's git history."""
    page = ROOT / "docs" / "speed.md"
    lines = page.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"docs/speed.md has {len(lines)} lines"
    text = "\n".join(lines)
    missing = [
        bench.name
        for bench in sorted((ROOT / "bench").glob("bench_*.py"))
        if f"bench/{bench.name}" not in text
    ]
    assert missing == [], "say on docs/speed.md how to run these and what they measured"


def help_texts(command: click.Command, path: str = "notify") -> list[tuple[str, str]]:
    """Every user-facing text of a command and its subcommands: help, short help, options."""
    texts = [(path, command.help or ""), (path, command.short_help or "")]
    for param in command.params:
        texts.append((f"{path} {'/'.join(param.opts)}", getattr(param, "help", None) or ""))
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            texts.extend(help_texts(sub, f"{path} {name}"))
    return texts


def test_no_page_and_no_help_text_cites_a_seed() -> None:
    """docs/decisions.md is exempt: its rulings record the specification's text they were
    made against (its last column), as a log that is only appended to."""
    pages = [
        f"{page.relative_to(ROOT)}:{number}: {line.strip()}"
        for page in PAGES
        if page.name != "decisions.md"
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1)
        if SEED.search(line)
    ]
    helps = [f"{where}: {text}" for where, text in help_texts(cli) if SEED.search(text)]
    assert pages + helps == [], "cite a rule id of docs/rules.md or a page instead"


def source_texts(path: Path) -> list[tuple[int, str]]:
    """The docstrings (module, class, function, and the strings under an attribute that the API
    reference renders too) and the comments of one source file, each with its first line."""
    source = path.read_text(encoding="utf-8")
    texts = [
        (node.lineno, node.value.value)
        for node in ast.walk(ast.parse(source, filename=str(path)))
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ]
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    texts.extend(
        (token.start[0], token.string) for token in tokens if token.type == tokenize.COMMENT
    )
    return texts


def seed_citations(path: Path) -> list[str]:
    """``file:line: line's text`` of each seed citation in the docstrings and comments of a
    file (the line where the citation starts)."""
    found = []
    for first, text in source_texts(path):
        for match in SEED.finditer(text):
            offset = text.count("\n", 0, match.start())
            line = text.splitlines()[offset].strip()
            found.append(f"{path.relative_to(ROOT)}:{first + offset}: {line}")
    return found


def test_no_docstring_and_no_comment_cites_a_seed() -> None:
    """docs/api.md renders the docstrings; comments are read by the next contributor, who has
    the rules and the pages but not the seeds either."""
    found = [
        citation
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for citation in seed_citations(path)
    ]
    found += [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in QUERIES
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if line.lstrip().startswith("--") and SEED.search(line)
    ]
    assert found == [], "cite a rule id of docs/rules.md or a page, or say the why in words"


def test_the_checks_find_what_they_look_for() -> None:
    assert DIARY.search("(2026-11-30 23:20-00:40 ...)") and DIARY.search("load average 4")
    assert not DIARY.search("22:00-07:00") and not DIARY.search("2026-10-24 05:00:00+00:00")
    assert SEED.search("seed 001 note 10") and SEED.search("Seed 004 section 9.3")
    assert not SEED.search("--seed 7") and not SEED.search("seed 1 synthetic log")
    assert SEED.search("(seed-002)") and SEED.search("named after\n    seed 001 and seed\n004")
    assert not SEED.search("seed=1") and not SEED.search("--seed 100")
    assert not SEED.search("seed 10")
    assert SEED.search("(note 11)") and SEED.search("Operation 30") and SEED.search("AZ-M48")
    assert SEED.search("Temporal property 1-3") and SEED.search("seed 000 notes 12 and 13")
    assert not SEED.search("Check 3.1") and not SEED.search("Invariant 4") and not SEED.search("E6")
    assert QUERIES
    assert any("--dsn" in where for where, _ in help_texts(cli))
