"""``notify db``: the PostgreSQL schema of notify (needs the ``pg`` extra)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NoReturn

import attrs
import click

from notify_cli.install import install_hint
from notify_cli.options import BadInput, dsn_option, lines_of, read_policy, schema_option
from notify_cli.startup import require_schemas
from notify_core.events.log import parse_event
from notify_core.values.instants import format_instant, parse_instant

if TYPE_CHECKING:
    from notify_core.hints.pipeline import Hint


@click.group()
def db() -> None:
    """Manage notify's PostgreSQL schema (needs psycopg: the pg extra)."""


@db.command()
@dsn_option
@schema_option
@click.option(
    "--reference-host",
    "reference_host",
    default=None,
    metavar="NAME",
    help="Also create the reference host's tables in schema NAME (tests and the demo only).",
)
def migrate(dsn: str, schema: str, reference_host: str | None) -> None:
    """Apply notify's missing migrations to DSN; running it again changes nothing.

    Prints the applied migrations, one per line. A migration file changed after it was
    applied, an unreachable database or a bad DSN: a message on stderr and exit code 2.
    """
    try:
        from notify_core.values.errors import NotifyError
        from notify_pg import migrate as apply
        from notify_reference_host import migrate_reference_host
    except ImportError as exc:  # psycopg missing: the pg extra is not installed
        raise BadInput(f"db needs the pg extra ({install_hint('pg')}): {exc}") from None
    if not schema:
        raise BadInput("--schema must not be empty")
    try:
        applied = apply(dsn, schema)
        host_applied = migrate_reference_host(dsn, reference_host) if reference_host else []
    except NotifyError as exc:
        raise BadInput(f"db migrate: {exc}") from None
    for name in applied:
        click.echo(f"{schema}: applied {name}")
    for name in host_applied:
        click.echo(f"{reference_host}: applied {name}")
    if not applied and not host_applied:
        click.echo(f"{schema}: up to date", err=True)


@db.command()
@dsn_option
@schema_option
@click.option(
    "--host-schema",
    default="host",
    show_default=True,
    metavar="NAME",
    help="Schema of the reference host whose setting says whether mail is configured.",
)
def status(dsn: str, schema: str, host_schema: str) -> None:
    """Show the lag of each consumer and the backlog of due work, as JSON on stdout.

    Per consumer: its position, how many events lie after it, when it last moved. Due work:
    open and ended windows, delayed pushes, pending badge syncs and push sends (all, due now,
    leased by a worker), counted at the database's clock. The inbox: the outbox backlog (count,
    age of the oldest event), emails pending (and due now), being sent, sent and failed over
    the last 24 hours, and whether mail is configured (the reference host's setting in
    --host-schema; left out when it has none). Warnings, only when there is one: sites of
    --host-schema served over plain http, where mailbox providers ignore one-click
    unsubscribe ("warnings" in the JSON, and one line on stderr).
    """
    try:
        import json

        from notify_core.values.errors import NotifyError
        from notify_pg.ops.status import pipeline_status
    except ImportError as exc:  # psycopg missing: the pg extra is not installed
        raise BadInput(f"db needs the pg extra ({install_hint('pg')}): {exc}") from None
    try:
        report = pipeline_status(
            dsn,
            schema,
            mail_configured=_mail_configured(host_schema),
            plain_http=_plain_http(host_schema),
        )
    except NotifyError as exc:
        raise BadInput(f"db status: {exc}") from None
    click.echo(json.dumps(report, indent=2))
    for warning in report.get("warnings", ()):
        click.echo(f"warning: {warning['message']}", err=True)


@db.command()
@click.argument("log", metavar="LOG")
@dsn_option
@schema_option
@click.option(
    "--host-schema",
    default="host",
    show_default=True,
    metavar="NAME",
    help="Schema of the reference host that takes the log's world changes.",
)
@click.option(
    "--end-now",
    is_flag=True,
    help="Shift every instant of the log by one span so that its last event happens now "
    "(the worker then sends the pushes of the log's last hour instead of expiring them).",
)
@click.option(
    "--consume",
    is_flag=True,
    help="Run the pipeline between events on the log's clock (due work up to each event, "
    "then the event, then the consumer; after the log, what is pending), as a worker that "
    "keeps up: the hints equal those of `notify replay` of the same file.",
)
@click.option("--policy", "policy_file", metavar="FILE", help="TOML policy of --consume.")
@click.option(
    "--partitions",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Recipient partitions of the consumer with --consume (1 keeps the replay's order).",
)
@click.option(
    "--hints",
    "hints_file",
    metavar="FILE",
    help="With --consume, write the hints as `notify replay` writes them to FILE ('-': stdout).",
)
@click.option("--include-skips", is_flag=True, help="Also write skip decisions to --hints.")
def load(
    log: str,
    dsn: str,
    schema: str,
    host_schema: str,
    end_now: bool,
    consume: bool,
    policy_file: str | None,
    partitions: int,
    hints_file: str | None,
    include_skips: bool,
) -> None:
    """Write the event log LOG into the database as a host would.

    Takes every event of formats.md, chat and wiki, also mixed in one log. Each event's world
    change goes into the reference host's tables (--host-schema, created by `notify db
    migrate --reference-host NAME`), a wiki activity is emitted into the inbox's outbox, and
    the event is appended to --schema's event_log, in one transaction: up to 500 chat events
    a transaction (an event refused rolls its batch back, which is then loaded event by
    event, so the events before the bad one stay loaded), a wiki event alone (its inbox
    fan-out runs at once after it, as a worker that keeps up would), one with --consume (the
    consumer runs between events). Loading is idempotent: an event loaded before (the same
    JSON object, before --end-now) is recognised, counted and not written again, so a log
    loaded twice, or again after a failure, is written once. Every line is checked first: a
    bad line (also a NUL character, which PostgreSQL cannot store, and an event dated before
    the last one the database's event log holds: its clock never goes back, formats.md
    section 2) is reported with file, line and member as `notify replay` reports it,
    nothing is written and the exit code is 2; so is a schema or host schema missing or not
    migrated (the line names the command to run). With --end-now, a log of which some events
    are loaded already is moved by the span they were moved by, so that it goes on where
    they stopped. Progress goes to stderr, and
    a closing line says what was loaded, what was loaded already, and which event types the
    reference host does not know (appended to the event log only, as a consumer ignores
    them). `notify replay --from-pg DSN` then gives what `notify replay LOG` gives (with
    --end-now, at the shifted times).
    """
    try:
        import psycopg

        from notify_core.values.errors import NotifyError
        from notify_pg.push.worker import Worker, WorkerConfig
        from notify_reference_host import ReferenceHost
        from notify_reference_host.load import (
            LogLoader,
            SettableClock,
            event_digest,
            shift_to_end_now,
        )
    except ImportError as exc:  # psycopg missing: the pg extra is not installed
        raise BadInput(f"db needs the pg extra ({install_hint('pg')}): {exc}") from None
    if not schema or not host_schema:
        raise BadInput("--schema and --host-schema must not be empty")
    if not consume and (hints_file or policy_file or include_skips or partitions != 1):
        raise BadInput("--hints, --include-skips, --policy and --partitions need --consume")
    policy = read_policy(policy_file)
    objects, numbers = _read_log(log)
    # The digests of the events as the log reads them: --end-now moves them differently on
    # every run, and a log loaded again must still be recognised.
    digests = [event_digest(obj) for obj in objects]
    try:
        span = shift_to_end_now(objects) if end_now else None
    except NotifyError as exc:
        raise BadInput(f"db load --end-now: {log}: {exc}") from None
    hints: list[Hint] = []

    def sink(conn: object, hint: Hint, notification_id: str | None) -> None:
        hints.append(hint)

    def connect() -> psycopg.Connection[Any]:
        return psycopg.connect(
            dsn, autocommit=True, connect_timeout=10, application_name="notify db load"
        )

    # Before the first event: a schema not migrated is one line naming the command to run,
    # not an error on the log's first line.
    require_schemas(dsn, schema, host_schema=host_schema, command="db load")
    number = 0
    resumed = None
    try:
        with connect() as conn:
            if span is not None:
                resumed = LogLoader(conn, schema=schema, host_schema=host_schema).last_loaded(
                    digests
                )
                span = _resume_span(log, objects, span, resumed)
            events = [parse_event(obj) for obj in objects]
            progress = _Progress(len(events))
            worker, clock = None, None
            if consume and events:
                clock = SettableClock(events[0].occurred_at)
                worker = Worker(
                    connect,
                    ReferenceHost(host_schema),
                    schema=schema,
                    policy=policy,
                    config=WorkerConfig(partitions=partitions),
                    clock=clock,
                    sink=sink if hints_file else None,
                )
            loader = LogLoader(
                conn, schema=schema, host_schema=host_schema, worker=worker, clock=clock
            )
            back = loader.going_back(events, digests)
            if back is not None:
                _refuse_going_back(log, numbers[back[0]], back[1], schema)
            try:
                if worker is None:
                    for part in loader.segments(events, LOAD_BATCH):
                        number = numbers[part.start]
                        try:
                            loader.write(
                                events[part.start : part.stop], digests[part.start : part.stop]
                            )
                        except NotifyError:
                            if len(part) == 1:
                                raise
                            # The batch wrote nothing: again one event a transaction, so that
                            # the events before the bad one stay loaded, and the error names
                            # the bad one's line.
                            for index in part:
                                number = numbers[index]
                                loader.write([events[index]], [digests[index]])
                        progress.show(part.stop)
                else:
                    for index, event in enumerate(events):
                        number = numbers[index]
                        loader.feed(event, digests[index])
                        progress.show(index + 1)
                number = 0
                loader.finish()
            finally:
                if worker is not None:
                    worker.close()
            seqs = sorted(loader.seq_map)
    except NotifyError as exc:
        where = f"{log}:{number}: " if number else ""
        if number and exc.code == "already_exists":  # which of the log's ids is taken
            where += _ids_of(objects[numbers.index(number)])
        raise BadInput(f"db load: {where}{exc}") from None
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BadInput(f"db load: cannot reach PostgreSQL: {reason}") from None
    written = _write_hints(hints_file, hints, loader.seq_map, include_skips) if hints_file else 0
    closing = f"{log}: loaded {loader.loaded:,} events into {schema}.event_log"
    if seqs:
        closing += f" (seq {seqs[0]}-{seqs[-1]})"
    closing += f" and the reference host {host_schema}"
    if span is not None:
        closing += f", shifted by {_span_text(span)} to end now"
        if resumed is not None:
            closing = closing.removesuffix(" to end now") + " as its events loaded before"
    if loader.already:
        closing += f"; {loader.already:,} loaded before, skipped"
    if consume:
        closing += f"; the consumer handled them ({len(hints):,} hint decisions"
        closing += f", {written:,} written)" if hints_file else ")"
    if loader.unknown:
        kinds = ", ".join(f"{kind} ({n:,})" for kind, n in sorted(loader.unknown.items()))
        closing += f"; types the reference host does not know, in the event log only: {kinds}"
    click.echo(closing, err=True)


def _resume_span(
    log: str, objects: list[dict[str, Any]], span: timedelta, resumed: tuple[int, datetime] | None
) -> timedelta:
    """The span --end-now moves a log by: to end now, or, when some of its events are loaded
    already, the span they were moved by (``resumed``: the last one's index and instant in
    the database), so that the rest continues their clock instead of going back from it."""
    from notify_core.values.errors import NotifyError
    from notify_reference_host.load import shift_by

    if resumed is None:
        return span
    index, stored = resumed
    earlier = stored - (parse_instant(objects[index]["occurred_at"]) - span)
    try:
        shift_by(objects, earlier - span)
    except NotifyError as exc:
        raise BadInput(f"db load --end-now: {log}: {exc}") from None
    return earlier


def _refuse_going_back(log: str, number: int, last: datetime, schema: str) -> NoReturn:
    """A line whose clock goes back from the event log's: refused before anything is
    written, in the words of `notify replay` (formats.md section 2)."""
    click.echo(
        f"{log}:{number}: bad event at /occurred_at: occurred_at goes back from "
        f"{last.isoformat()} (clock_went_back)",
        err=True,
    )
    raise BadInput(
        f"{log}: 1 bad line: the database's event log ({schema}.event_log) already ends at "
        f"{format_instant(last)}; nothing was loaded"
    )


#: Events `notify db load` writes per transaction without --consume.
LOAD_BATCH: Final = 500


class _Progress:
    """A progress line on stderr at every tenth of the log (at least every 1,000 events)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.step = max(1000, total // 10)
        self.next = self.step

    def show(self, done: int) -> None:
        """Say how far the load is when ``done`` events have passed a step."""
        if done >= self.next:
            click.echo(f"loaded {done:,} of {self.total:,} events", err=True)
            self.next = (done // self.step + 1) * self.step


def _read_log(path: str) -> tuple[list[dict[str, Any]], list[int]]:
    """Every event of the log as a JSON object, with its line number; all lines checked.

    Raises:
        BadInput: one line per bad line on stderr first (file, line, member, reason).
    """
    from notify_core.events.log import EventError, EventLogReader

    reader = EventLogReader()
    objects: list[dict[str, Any]] = []
    numbers: list[int] = []
    bad = 0
    for number, text in enumerate(lines_of(path), start=1):
        try:
            event = reader.read(text, number)
        except EventError as error:
            where = f" at {error.pointer}" if error.pointer else ""
            click.echo(
                f"{path}:{error.line}: bad event{where}: {error.message} ({error.code})",
                err=True,
            )
            bad += 1
            continue
        if event is None:
            continue
        obj: dict[str, Any] = json.loads(text)
        pointer = _nul_pointer(obj)
        if pointer is not None:
            # PostgreSQL stores no NUL in text or jsonb: refused here, with where it is.
            click.echo(
                f"{path}:{number}: bad event at {pointer}: a NUL character cannot be stored "
                "in PostgreSQL (nul_character)",
                err=True,
            )
            bad += 1
            continue
        objects.append(obj)
        numbers.append(number)
    if bad:
        raise BadInput(f"{path}: {bad} bad line{'s' if bad > 1 else ''}; nothing was loaded")
    return objects, numbers


def _ids_of(obj: dict[str, Any]) -> str:
    """The ids an event's payload names (``push.registered registration=r-1 ...: ``)."""
    payload = obj.get("payload")
    ids = [
        f"{name}={value}"
        for name, value in (payload.items() if isinstance(payload, dict) else [])
        if isinstance(value, str) and name not in ("kind", "state", "platform", "provider")
    ]
    return f"{obj.get('type')} {' '.join(ids)}: ".replace("  ", " ")


def _nul_pointer(value: Any, pointer: str = "") -> str | None:
    """The JSON pointer of the first NUL character in a parsed JSON value (key or string)."""
    if isinstance(value, str):
        return (pointer or "/") if "\x00" in value else None
    found: str | None
    if isinstance(value, dict):
        for key, item in value.items():
            key = str(key)
            here = pointer + "/" + key.replace("~", "~0").replace("/", "~1")
            if "\x00" in key:
                return here
            found = _nul_pointer(item, here)
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _nul_pointer(item, f"{pointer}/{index}")
            if found is not None:
                return found
    return None


def _write_hints(path: str, hints: list[Hint], seq_map: dict[int, int], include_skips: bool) -> int:
    """Write hints as `notify replay` does (seqs of the file); return how many."""
    from notify_core.hints.decide import Skip, SkipReason
    from notify_core.hints.pipeline import Trigger
    from notify_core.replay.lines import dumps_hint

    lines = []
    for hint in hints:
        decision = hint.decision
        if isinstance(decision, Skip) and (
            not include_skips
            or (decision.reason is SkipReason.NOT_ALLOWED and hint.trigger is Trigger.EVENT)
        ):
            continue
        if hint.seq is not None:
            hint = attrs.evolve(hint, seq=seq_map.get(hint.seq, hint.seq))
        lines.append(dumps_hint(hint) + "\n")
    text = "".join(lines)
    if path == "-":
        click.echo(text, nl=False)
    else:
        try:
            Path(path).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"{path}: cannot write: {exc.strerror}") from None
    return len(lines)


def _span_text(span: timedelta) -> str:
    seconds = int(span.total_seconds())
    days, rest = divmod(abs(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    sign = "-" if seconds < 0 else ""
    return f"{sign}{days}d {hours:02d}:{rest // 60:02d}:{rest % 60:02d}"


#: Where `notify db up` keeps its server unless told otherwise (in the current directory).
DEFAULT_SERVER_DIR = ".notify-pg"


def _pgserver(directory: str, cleanup_mode: str | None) -> Any:
    try:
        import warnings

        with warnings.catch_warnings():
            # platformdirs warns that XDG_RUNTIME_DIR is unset (as on CI); its fallback is fine.
            warnings.simplefilter("ignore")
            from pgserver.postgres_server import get_server
    except ImportError as exc:
        raise BadInput(
            f"db up needs the server extra ({install_hint('server')}, which brings pgserver): {exc}"
        ) from None
    try:
        Path(directory).mkdir(parents=True, exist_ok=True)
        return get_server(Path(directory).resolve() / "data", cleanup_mode=cleanup_mode)
    except Exception as exc:  # pgserver raises plain errors of its subprocesses
        raise BadInput(f"db: the embedded server in {directory} failed: {exc}") from None


@db.command()
@click.option(
    "--dir",
    "directory",
    default=DEFAULT_SERVER_DIR,
    show_default=True,
    metavar="DIR",
    help="Where the server keeps its data (created when missing).",
)
def up(directory: str) -> None:
    """Start a throwaway PostgreSQL server for trying notify out, and print its DSN.

    Needs the server extra (from a clone: pip install -e '.[server]'): the embedded server of
    pgserver, with its data in DIR/data and its socket there (no TCP port). The server runs on
    after the command; started again, it prints the DSN of the running one (and says so on
    stderr). Stop it with `notify db down`. Run as root, pgserver runs the server as its own
    system user `pgserver` and opens every parent directory of DIR to traversal (chmod go+rx;
    it names on stderr the directories it changes): use a DIR under /tmp there. Not for
    production: use a PostgreSQL you run and back up.
    """
    _say_permissions(directory)
    # Said, not silent: a block that reuses a server someone else started must not take it
    # for its own (and delete it with `db down --delete`).
    running = (Path(directory) / "data" / "postmaster.pid").exists()
    server = _pgserver(directory, None)
    click.echo(str(server.get_uri()))
    if running:
        click.echo(
            f"{directory}: a server of `notify db up` was running here already: its DSN "
            "(its data is not new; a --dir of your own starts a new one)",
            err=True,
        )
    else:
        click.echo(f"{directory}: started a new server", err=True)


def _say_permissions(directory: str) -> None:
    """Run as root, say on stderr which directories pgserver opens to traversal (it runs the
    server as its own user ``pgserver`` and adds go+rx to every parent of the data)."""
    import os
    import stat

    if os.name != "posix" or os.geteuid() != 0:
        return
    wanted = stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH
    data = Path(directory).resolve() / "data"
    widened = [
        str(parent)
        for parent in data.parents
        if parent.exists() and parent.stat().st_mode & wanted != wanted
    ]
    if widened:
        click.echo(
            "notify: as root, pgserver runs the server as the system user pgserver and "
            f"opens these directories to others (chmod go+rx): {', '.join(widened)}; "
            "choose a --dir under /tmp to leave them as they are",
            err=True,
        )


@db.command()
@click.option(
    "--dir",
    "directory",
    default=DEFAULT_SERVER_DIR,
    show_default=True,
    metavar="DIR",
    help="The directory given to `notify db up`.",
)
@click.option("--delete", is_flag=True, help="Also delete the server's data (the whole DIR).")
def down(directory: str, delete: bool) -> None:
    """Stop the throwaway server of `notify db up` (and with --delete remove its data)."""
    if not (Path(directory) / "data").is_dir():
        raise BadInput(f"{directory}: no server of `notify db up` here")
    server = _pgserver(directory, "delete" if delete else "stop")
    server.cleanup()
    if delete:
        import shutil

        shutil.rmtree(directory, ignore_errors=True)
    click.echo(f"{directory}: server stopped" + (" and deleted" if delete else ""), err=True)


def _mail_configured(host_schema: str) -> Any:
    """Read whether mail is configured from the reference host (``None`` without its tables)."""
    from notify_core.values.errors import NotifyError
    from notify_reference_host.wiki import ReferenceWiki

    wiki = ReferenceWiki(host_schema)

    def read(conn: Any) -> bool | None:
        try:
            return wiki.inbox_settings(conn).mail_configured
        except NotifyError:  # no reference host in this database: the host knows
            return None

    return read


def _plain_http(host_schema: str) -> Any:
    """Read the reference host's sites served over plain http (``None`` without its tables)."""
    from notify_core.values.errors import NotifyError
    from notify_pg.ops.status import plain_http_sites
    from notify_reference_host.wiki import ReferenceWiki

    wiki = ReferenceWiki(host_schema)

    def read(conn: Any) -> list[str] | None:
        try:
            return plain_http_sites(conn, wiki)
        except NotifyError:  # no reference host in this database: the host knows
            return None

    return read
