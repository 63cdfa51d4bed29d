"""``notify replay --mail-dir``: each mail a drain sends (E4) written as an RFC 5322 file (E6)."""

from __future__ import annotations

import email
import json
from email import policy
from pathlib import Path

from click.testing import CliRunner

from notify_cli.main import cli
from notify_core.mail import verify_unsubscribe_token

HERE = Path(__file__).parents[1] / "inbox"
SECRET = bytes(32)  # notify_core.inbox.mailing.REPLAY_SECRET


def _log(tmp_path: Path) -> Path:
    return HERE / "spec_example.jsonl"  # a copy of the spec's inbox-log-example.jsonl


def test_e4_mail_dir_writes_one_eml_per_mail_line_with_both_bodies_and_every_header(
    tmp_path: Path,
) -> None:
    out = tmp_path / "mails"
    result = CliRunner().invoke(cli, ["replay", str(_log(tmp_path)), "--mail-dir", str(out)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    sends = [line for line in lines if line["trigger"] == "mail" and line["decision"] == "send"]
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(f"{m['at']}-{m['recipient']}-{m['site']}.eml" for m in sends)
    assert len(names) == 3
    mention = out / "2026-11-30T10:08:00Z-ana-s1.eml"
    raw = mention.read_bytes()
    got = email.message_from_bytes(raw, policy=policy.default)
    assert got["To"] == "ana@example.org"
    assert got["From"] == "notifications@wiki.example.org"
    assert got["Date"] == "Mon, 30 Nov 2026 10:08:00 +0000"
    assert got["Auto-Submitted"] == "auto-generated"
    assert got["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    # One unfolded URL, its token for the mail's unsubscribe categories (U1).
    header = next(line for line in raw.split(b"\r\n") if line.startswith(b"List-Unsubscribe:"))
    url = header.split(b"<", 1)[1].rstrip(b">").decode()
    assert url.startswith("https://wiki.example.org/notifications/unsubscribe?t=")
    found = verify_unsubscribe_token(SECRET, url.split("t=", 1)[1], known_categories={"mention"})
    assert found is not None and (found.person, found.categories) == ("ana", ("mention",))
    text, html = got.get_body(("plain",)), got.get_body(("html",))
    assert text is not None and html is not None
    assert "@ana can you check step 3?" in text.get_content()
    assert "Runbook" in html.get_content()
    # The same log writes the same bytes.
    again = tmp_path / "again"
    CliRunner().invoke(cli, ["replay", str(_log(tmp_path)), "--mail-dir", str(again)])
    assert (again / mention.name).read_bytes() == raw


def test_e4_mail_dir_changes_no_output_line(tmp_path: Path) -> None:
    plain = CliRunner().invoke(cli, ["replay", str(_log(tmp_path))])
    with_dir = CliRunner().invoke(
        cli, ["replay", str(_log(tmp_path)), "--mail-dir", str(tmp_path / "m")]
    )
    assert plain.stdout == with_dir.stdout and plain.exit_code == with_dir.exit_code == 0


def test_a_mail_dir_that_is_a_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    taken = tmp_path / "file"
    taken.write_text("x")
    for target in (taken, taken / "below"):
        result = CliRunner().invoke(cli, ["replay", str(_log(tmp_path)), "--mail-dir", str(target)])
        assert result.exit_code == 2, result.output
        assert len(result.stderr.strip().splitlines()) == 1
        assert result.stderr.startswith(f"notify: --mail-dir {target}: ")
        assert "Traceback" not in result.output


def test_mail_dir_with_compare_is_one_line_and_exit_2(tmp_path: Path) -> None:
    policy = tmp_path / "b.toml"
    policy.write_text("coalesce_window_s = 60\n")
    result = CliRunner().invoke(
        cli,
        ["replay", str(_log(tmp_path)), "--compare", str(policy), "--mail-dir", str(tmp_path)],
    )
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "notify: --mail-dir writes the mails of one replay: not with --compare"
    ]
