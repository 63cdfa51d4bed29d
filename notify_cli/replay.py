"""``notify replay`` and ``notify explain``: the event log through the pipeline."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import IO
from urllib.parse import quote

import click
from rich.console import Console
from rich.table import Table

from notify_cli import fastjson
from notify_cli.batch import batch_gc
from notify_cli.install import install_hint
from notify_cli.options import (
    EXIT_BAD_INPUT,
    STDIN,
    BadInput,
    Utf8Text,
    label,
    lines_of,
    open_out,
    read_policy,
    write_file,
    writing,
)
from notify_cli.progress import input_size, progress_lines
from notify_cli.report import check_report, write_report
from notify_core.events.log import EventError
from notify_core.hints.decide import Policy
from notify_core.inbox.pipeline import MailLine
from notify_core.replay.lines import dumps_line, item_to_json
from notify_core.replay.run import Replay, Summary, compare
from notify_core.values.errors import NotifyError
from notify_core.values.instants import format_instant

_stderr = Console(stderr=True)


def _report(path: str, error: EventError) -> None:
    pointer = f" at {error.pointer}" if error.pointer else ""
    click.echo(f"{path}:{error.line}: bad event{pointer}: {error.message} ({error.code})", err=True)


def _source(
    path: str | None, dsn: str | None, schema: str, name: str | None = None
) -> tuple[str, Iterable[str | bytes], int | None]:
    """Return a label for messages, the lines of the log (a file, stdin or ``event_log``)
    and its size in bytes where it is known (a regular file: the progress line's total).

    ``name`` is the path the user gave, when ``path`` is a copy of it (`_twice`).
    """
    if dsn is None:
        assert path is not None
        size = None if path == STDIN else input_size(path)
        return label(name or path), lines_of(path), size
    return f"postgresql {schema}.event_log", _pg_lines(dsn, schema), None


@contextmanager
def _twice(path: str | None) -> Iterator[str | None]:
    """Yield a path that can be read twice: standard input is copied to a temporary file."""
    if path != STDIN:
        yield path
        return
    with tempfile.NamedTemporaryFile(prefix="notify-stdin-", suffix=".jsonl") as copy:
        with writing(copy.name):
            shutil.copyfileobj(sys.stdin.buffer, copy)
            copy.flush()
        yield copy.name


def _pg_lines(dsn: str, schema: str) -> Iterator[str]:
    """Yield ``event_log`` rows in seq order as log lines (the same replay as a file)."""
    try:
        import psycopg

        from notify_pg.stores.events import read_event_log
    except ImportError:
        raise BadInput(f"--from-pg needs the PostgreSQL extra: {install_hint('pg')}") from None
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            for event in read_event_log(conn, schema):
                yield dumps_line(event)
    except (psycopg.Error, NotifyError) as exc:  # the adapter translates most psycopg errors
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BadInput(f"cannot read {schema}.event_log: {reason}") from None


def _check_mail_dir(mail_dir: str) -> None:
    """Create ``--mail-dir`` when missing; refuse one that is no writable directory."""
    try:
        os.makedirs(mail_dir, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"--mail-dir {mail_dir}: cannot create: {exc.strerror or exc}") from None
    if not os.path.isdir(mail_dir) or not os.access(mail_dir, os.W_OK | os.X_OK):
        raise BadInput(f"--mail-dir {mail_dir}: not a writable directory")


def _file_part(text: str) -> str:
    # Ids are the log's: a "/" or a leading dot must not leave the directory.
    return quote(text, safe="@+-_=,") if text else "_"


def _mail_writer(mail_dir: str, replay: Replay) -> Callable[[MailLine], None]:
    """Return what writes a send line's mail as ``<at>-<recipient>-<site>.eml`` (RFC 5322)."""
    from notify_core.inbox.mailing import line_mail

    try:
        from notify_pg.mail.smtp import mail_message
    except ImportError:
        raise BadInput(f"--mail-dir needs the PostgreSQL extra: {install_hint('pg')}") from None

    wiki = replay.inbox.wiki

    def write(line: MailLine) -> None:
        found = line_mail(line, wiki)
        at = format_instant(line.at)
        message = mail_message(
            found.mail,
            sender=f"notifications@{found.site.host}",
            to=found.address or f"{line.recipient}@invalid",
            date=line.at,
        )
        name = f"{at}-{_file_part(line.recipient)}-{_file_part(line.site)}.eml"
        path = os.path.join(mail_dir, name)
        with writing(path), open(path, "wb") as handle:
            handle.write(message.as_bytes())

    return write


def _replay(
    source: tuple[str, Iterable[str | bytes], int | None],
    policy: Policy,
    include_skips: bool,
    out: IO[str] | None,
    out_name: str = "stdout",
    report: bool = True,
    mail_dir: str | None = None,
) -> tuple[Summary, bool]:
    path, lines, size = source
    replay = Replay(policy=policy, include_skips=include_skips, reader=fastjson.reader())
    bad = False
    mail = _mail_writer(mail_dir, replay) if mail_dir is not None else None
    # Reading errors become BadInput where they happen (lines_of); an OSError here is a write.
    with batch_gc(), writing(out_name):
        # Lines go out as orjson's bytes: `item_to_json`'s objects, as `dumps_item` encodes.
        write = fastjson.line_writer(out) if out is not None else None
        encode, line = fastjson.encode, fastjson.LINE
        for item in replay.run(progress_lines(path, lines, size, _stderr, sys.stderr.isatty())):
            if isinstance(item, EventError):
                if report:
                    _report(path, item)
                bad = True
                continue
            if mail is not None and type(item) is MailLine and item.decision == "send":
                mail(item)  # the wiki is as it was at the drain: the replay is lazy
            if write is not None:
                write(encode(item_to_json(item), option=line))
    return replay.summary, bad


def _summary_table(summary: Summary) -> Table:
    data = summary.to_json()
    table = Table(title="replay summary", show_header=True, header_style="bold")
    table.add_column("what")
    table.add_column("value", justify="right")
    for name, count in data["events"].items():  # type: ignore[attr-defined]
        table.add_row(f"events {name}", f"{count:,}")
    for name, count in data["unknown_event_types"].items():  # type: ignore[attr-defined]
        table.add_row(f"ignored unknown type {name}", f"{count:,}")
    for name, count in data["unknown_references"].items():  # type: ignore[attr-defined]
        table.add_row(f"unknown references {name}", f"{count:,}")
    for kind, routes in data["routes_by_kind"].items():  # type: ignore[attr-defined]
        for via, count in routes.items():
            table.add_row(f"routes {kind} {via}", f"{count:,}")
    for name, count in data["decisions"].items():  # type: ignore[attr-defined]
        table.add_row(f"decisions {name}", f"{count:,}")
    for reason, count in data["skips_by_reason"].items():  # type: ignore[attr-defined]
        table.add_row(f"skips {reason}", f"{count:,}")
    for category, decisions in data["entries_by_category"].items():  # type: ignore[attr-defined]
        for decision, count in decisions.items():
            table.add_row(f"entries {category} {decision}", f"{count:,}")
    for reason, count in data["entry_skips_by_reason"].items():  # type: ignore[attr-defined]
        table.add_row(f"entry skips {reason}", f"{count:,}")
    for template, count in data["mails_by_template"].items():  # type: ignore[attr-defined]
        table.add_row(f"mails {template}", f"{count:,}")
    for reason, count in data["mail_skips_by_reason"].items():  # type: ignore[attr-defined]
        table.add_row(f"mail skips {reason}", f"{count:,}")
    if data["entries_by_category"] and not data["mail_configured"]:
        table.add_row("mail configured", "no: no email is sent")
    table.add_row("zone data (tzdata)", str(data["tzdata"]))
    # The hints' rows only where the log had chat: a wiki's pushes are none, not 0/0/0/0.
    if "hints" in summary.pipelines():
        table.add_row("quiet share of sends", f"{data['quiet_share']:.1%}")
        volume = data["push_volume_per_recipient"]
        assert isinstance(volume, dict)
        table.add_row(
            "pushes per recipient p50/p90/p99/max",
            f"{volume['p50']}/{volume['p90']}/{volume['p99']}/{volume['max']}",
        )
    if summary.bad_lines:
        table.add_row("bad lines", f"{summary.bad_lines:,}")
    return table


def _compare_table(diff: dict[str, object]) -> Table:
    table = Table(title="policy A -> policy B", header_style="bold")
    for column in ("what", "A", "B", "change"):
        table.add_column(column, justify="left" if column == "what" else "right")
    by_kind = diff["sends_by_kind"]
    assert isinstance(by_kind, dict)
    for kind, row in by_kind.items():
        table.add_row(f"sends {kind}", str(row["a"]), str(row["b"]), f"{row['change']:+d}")
    pushes = diff["pushes"]
    assert isinstance(pushes, dict)
    table.add_row("pushes", str(pushes["a"]), str(pushes["b"]), f"{pushes['change']:+d}")
    people = diff["recipients_changed"]
    assert isinstance(people, list)
    for row in people[:10]:
        table.add_row(
            f"pushes to {row['recipient']}", str(row["a"]), str(row["b"]), f"{row['change']:+d}"
        )
    return table


@click.command()
@click.argument("log", required=False)
@click.option(
    "--from-pg", "dsn", metavar="DSN", type=Utf8Text(), help="Read the event log from PostgreSQL."
)
@click.option(
    "--schema", default="notify", show_default=True, type=Utf8Text(), help="Schema of --from-pg."
)
@click.option("--policy", "policy_file", metavar="FILE", help="TOML policy (defaults when absent).")
@click.option("--out", "out_file", metavar="FILE", help="Write hints here instead of stdout.")
@click.option("--include-skips", is_flag=True, help="Also write skip decisions.")
@click.option("--summary-json", metavar="FILE", help="Write the summary as JSON to FILE.")
@click.option(
    "--compare", "compare_file", metavar="POLICY_B", help="Replay twice and report the difference."
)
@click.option(
    "--report",
    "report_file",
    metavar="FILE",
    help="Also write an HTML report of the replay (with --compare: of both policies).",
)
@click.option(
    "--mail-dir",
    metavar="DIR",
    help="Also write each mail sent as DIR/<at>-<recipient>-<site>.eml (created when missing).",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "dask"]),
    default="local",
    show_default=True,
    help="dask: one recipient partition per task on a Dask cluster, merged (same output).",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    type=Utf8Text(),
    help="With --engine dask: the Dask scheduler (default: a local cluster).",
)
@click.option(
    "--partitions",
    type=int,
    metavar="N",
    help="With --engine dask: how many partitions (default: 2 local, else the worker threads).",
)
def replay(
    log: str | None,
    dsn: str | None,
    schema: str,
    policy_file: str | None,
    out_file: str | None,
    include_skips: bool,
    summary_json: str | None,
    compare_file: str | None,
    mail_dir: str | None,
    report_file: str | None = None,
    engine: str = "local",
    scheduler: str | None = None,
    partitions: int | None = None,
) -> None:
    """Replay the event log LOG (- for stdin) and write one JSON line per hint decision.

    The same log and options give byte-identical output. A summary table goes to stderr.
    Bad lines are reported with file, line and reason, the replay goes on, and the exit code
    is 2. References to objects the log never created are counted in the summary (and with
    --include-skips written as skips, reason unknown_reference). With --compare, the log is
    replayed under --policy (A) and POLICY_B (B) and the difference is written as JSON (to
    --out or stdout) and as a table on stderr. With --from-pg DSN the log is the table
    event_log of --schema, read in seq order. With --mail-dir DIR each mail a drain sends
    (a mail line) is also written as an RFC 5322 file DIR/<at>-<recipient>-<site>.eml.
    With --report FILE a self-contained HTML report with charts is written too.
    With --engine dask the recipient partitions run as Dask tasks (a local cluster of
    --partitions processes unless --scheduler ADDRESS) and merge into the same output.
    """
    if (log is None) == (dsn is None):
        raise BadInput("give either LOG or --from-pg DSN")
    policy = read_policy(policy_file)
    if engine == "dask":
        from notify_cli.dask_engine import check_options

        check_options(log, dsn, compare_file, mail_dir, scheduler)
    elif scheduler is not None or partitions is not None:
        raise BadInput("--scheduler and --partitions go with --engine dask")
    if report_file is not None:
        check_report(report_file)
    if mail_dir is not None:
        if compare_file is not None:
            raise BadInput("--mail-dir writes the mails of one replay: not with --compare")
        _check_mail_dir(mail_dir)
    if compare_file is not None:
        policy_b = read_policy(compare_file)
        with _twice(log) as again:
            summary_a, bad_a = _replay(
                _source(again, dsn, schema, log), policy, include_skips, None
            )
            # The same lines again: their bad ones were reported by the first pass.
            summary_b, bad_b = _replay(
                _source(again, dsn, schema, log), policy_b, include_skips, None, report=False
            )
        diff = compare(summary_a, summary_b)
        text = json.dumps(diff, ensure_ascii=False, indent=2) + "\n"
        if out_file is not None:
            write_file(out_file, text)
        else:
            click.echo(text, nl=False)
        _stderr.print(_compare_table(diff))
        if report_file is not None:
            pairs = [("A", summary_a), ("B", summary_b)]
            write_report(
                report_file, pairs, log or f"{schema}.event_log", [policy_file, compare_file]
            )
        if bad_a or bad_b:
            sys.exit(EXIT_BAD_INPUT)
        return
    if engine == "dask":
        from notify_cli.dask_engine import run_dask_replay

        assert log is not None
        summary, bad = run_dask_replay(
            log, policy, include_skips, out_file, scheduler, partitions, _report
        )
    elif out_file is None:
        summary, bad = _replay(
            _source(log, dsn, schema), policy, include_skips, sys.stdout, mail_dir=mail_dir
        )
    else:
        with open_out(out_file) as out:
            summary, bad = _replay(
                _source(log, dsn, schema), policy, include_skips, out, out_file, mail_dir=mail_dir
            )
    # Still with the batch thresholds: under the default ones, the allocations of the table
    # started full collections over the world the replay built (a third of a second on the
    # 200,000-event log; docs/speed.md).
    with batch_gc():
        _stderr.print(_summary_table(summary))
        if summary_json is not None:
            write_file(summary_json, json.dumps(summary.to_json(), indent=2) + "\n")
        if report_file is not None:
            write_report(
                report_file, [("policy", summary)], log or f"{schema}.event_log", [policy_file]
            )
    if bad:
        sys.exit(EXIT_BAD_INPUT)


@click.command(name="explain")
@click.argument("log")
@click.option("--seq", type=int, required=True, help="The event to explain.")
@click.option("--recipient", required=True, help="The person whose decision to explain.")
@click.option("--policy", "policy_file", metavar="FILE", help="TOML policy (defaults when absent).")
@click.option("--json", "as_json", is_flag=True, help="Print the steps as JSON.")
def explain_command(
    log: str, seq: int, recipient: str, policy_file: str | None, as_json: bool
) -> None:
    """Explain the decision of event SEQ for RECIPIENT, step by step (D1-D7, D11).

    The log (- for stdin) is replayed up to the event, so the facts are those the decision
    saw. Bad lines on the way are reported as replay reports them and make the exit code 2,
    after the explanation.
    """
    policy = read_policy(policy_file)
    replay = Replay(policy=policy, reader=fastjson.reader())
    name = label(log)
    bad = False
    for number, text in enumerate(lines_of(log), start=1):
        try:
            event = replay.reader.read(text, number)
        except EventError as error:
            _report(name, error)
            bad = True
            continue
        if event is None:
            continue
        if event.seq == seq:
            explanation = replay.pipeline.explain(event, recipient)
            if explanation is None:
                raise BadInput(
                    f"{name}:{number}: {recipient} is no candidate of event {seq} ({event.type})"
                )
            _print_explanation(event.type, event.seq, recipient, explanation, as_json)
            if bad:  # the same rule as replay: a bad line read on the way makes it 2
                sys.exit(EXIT_BAD_INPUT)
            return
        if event.seq > seq:
            break
        try:
            for _ in replay.feed_event(event, number):
                pass
        except EventError as error:
            _report(name, error)
            bad = True
    raise BadInput(f"{name}: no event with seq {seq}")


def _plain(value: object) -> object:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "isoformat"):
        return format_instant(value)  # type: ignore[arg-type]
    return value


def _print_explanation(
    kind: str, seq: int, recipient: str, explanation: object, as_json: bool
) -> None:
    from notify_core.hints.decide import Explanation
    from notify_core.replay.lines import decision_to_json

    assert isinstance(explanation, Explanation)
    steps = [
        {"rule": s.rule, "title": s.title, "ended": s.ended, "read": _plain(dict(s.read))}
        for s in explanation.steps
    ]
    decision = decision_to_json(explanation.decision)
    if as_json:
        obj = {
            "seq": seq,
            "type": kind,
            "recipient": recipient,
            "steps": steps,
            "decision": decision,
        }
        click.echo(json.dumps(obj, ensure_ascii=False, indent=2))
        return
    click.echo(f"event {seq} ({kind}), recipient {recipient}")
    for step in steps:
        mark = "ends here" if step["ended"] else "passes"
        facts = step["read"]
        assert isinstance(facts, dict)
        read = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in facts.items())
        click.echo(f"  {step['rule']} {step['title']}: {mark}  [{read}]")
    click.echo("decision: " + json.dumps(decision, ensure_ascii=False))
