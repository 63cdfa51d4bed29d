"""Replay: golden scenarios of seed 001 (S1-S5, D6-D9, B2) and properties of the pipeline."""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from notify_cli import fastjson
from notify_cli.main import cli
from notify_core.events.log import EventError
from notify_core.hints.decide import Policy
from notify_core.replay.lines import dumps_hint, dumps_item
from notify_core.replay.run import Replay, policy_from_mapping

sys.path.insert(0, str(Path(__file__).parents[2] / "replay"))
from build import Log

HERE = Path(__file__).parents[2] / "replay"
ROOT_EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SPEC_LOG = ROOT_EXAMPLES / "spec-example.jsonl"
GOLDENS = sorted(p for p in HERE.glob("*.jsonl") if not p.name.endswith(".expected.jsonl"))


def replay_file(log: Path, include_skips: bool = True) -> list[dict[str, object]]:
    policy = policy_from_mapping(__import__("tomllib").loads(log.with_suffix(".toml").read_text()))
    replay = Replay(policy=policy, include_skips=include_skips)
    lines = log.read_text().splitlines()
    out = []
    for item in replay.run(lines):
        assert not isinstance(item, EventError), item
        out.append(json.loads(dumps_hint(item)))
    return out


def sends(hints: list[dict[str, object]], who: str) -> list[dict[str, object]]:
    return [h for h in hints if h["recipient"] == who and h["decision"] == "send"]


@pytest.mark.parametrize("log", GOLDENS, ids=[p.stem for p in GOLDENS])
def test_golden_output_is_byte_identical(log: Path) -> None:
    result = CliRunner().invoke(
        cli, ["replay", str(log), "--policy", str(log.with_suffix(".toml")), "--include-skips"]
    )
    assert result.exit_code == 0, result.output
    expected = log.with_name(log.stem + ".expected.jsonl").read_text()
    assert result.stdout == expected


def test_spec_example_mention_collect_flush() -> None:
    """formats.md example: a mention opens the window, m-2 is collected, the flush counts 2."""
    replay = Replay(policy=Policy(coalesce_window=timedelta(seconds=60)))
    hints = [json.loads(dumps_hint(h)) for h in replay.run(SPEC_LOG.read_text().splitlines())]  # type: ignore[arg-type]
    assert [(h["recipient"], h["trigger"], h["kind"], h["decision"]) for h in hints] == [
        ("u-ana", "event", "mention", "send"),
        ("u-ana", "event", "message", "collect"),
        ("u-ana", "flush", "message", "send"),
    ]
    assert hints[0]["routes"] == [{"device": "d-ana-phone", "via": "push"}]
    assert hints[0]["opens_window_until"] == "2026-10-23T09:01:00Z"
    assert hints[2]["at"] == "2026-10-23T09:01:00Z" and hints[2]["count"] == 2
    assert replay.store.rows[("u-ben", "thread", "t-42")].level == "all"  # S5


class TestWindows:
    """D6, D8: ten messages in one window give at most two hints."""

    def test_d6_ten_messages_give_two_hints_the_second_with_the_count(self) -> None:
        alex = sends(replay_file(HERE / "ten_messages.jsonl"), "alex")
        hints = [h for h in alex if h["kind"] == "message"]
        assert [(h["trigger"], h.get("count")) for h in hints] == [("event", None), ("flush", 10)]

    def test_d8_read_before_the_end_flush_counts_read(self) -> None:
        hints = replay_file(HERE / "ten_messages_read_before_end.jsonl")
        flushes = [h for h in hints if h["trigger"] == "flush"]
        assert [(f["recipient"], f["decision"], f.get("reason")) for f in flushes] == [
            ("alex", "skip", "read")
        ]

    def test_d6_a_mention_inside_the_window_goes_at_once_and_leaves_it(self) -> None:
        alex = [
            h
            for h in replay_file(HERE / "ten_messages_mention_inside.jsonl")
            if h["recipient"] == "alex"
        ]
        mention = next(h for h in alex if h["kind"] == "mention")
        assert mention["decision"] == "send" and "opens_window_until" not in mention
        flush = next(h for h in alex if h["trigger"] == "flush")
        assert flush["at"] == "2026-10-23T09:02:00Z"  # the first window's end, unchanged


class TestRuns:
    """S2, S3: agent messages during a run and the end of a run."""

    def test_s3_completed_gives_one_run_done_and_one_message_at_the_third_message(self) -> None:
        hints = replay_file(HERE / "run_completed.jsonl")
        run_end = [h for h in hints if h.get("seq") == 27 and h["decision"] == "send"]
        assert [(h["recipient"], h["kind"], h["message"]) for h in run_end] == [
            ("alex", "run_done", "a3"),
            ("sam", "message", "a3"),
        ]
        for seq in (24, 25, 26):  # the three agent messages during the run
            assert not [h for h in hints if h.get("seq") == seq]
        after = [h for h in hints if h.get("message") == "a4" and h["decision"] == "send"]
        assert {h["recipient"] for h in after} == {"alex", "sam"}  # after the end: normal hints

    @pytest.mark.parametrize(
        ("name", "alex_kind"),
        [
            ("run_failed", "run_failed"),
            ("run_cancelled", "message"),
            ("run_input_needed", "input_needed"),
        ],
    )
    def test_s3_end_variants(self, name: str, alex_kind: str) -> None:
        hints = replay_file(HERE / f"{name}.jsonl")
        alex = [h for h in sends(hints, "alex")]
        assert [(h["kind"], h["message"]) for h in alex] == [(alex_kind, "a3")]
        sam_at_end = [h for h in sends(hints, "sam") if h.get("message") == "a3"]
        assert len(sam_at_end) == (0 if name == "run_input_needed" else 1)

    def test_s2_agent_mention_during_a_run_goes_at_once(self) -> None:
        hints = replay_file(HERE / "agent_mention_during_run.jsonl")
        sam = sends(hints, "sam")
        assert [(h["kind"], h["message"]) for h in sam] == [
            ("message", "m1"),
            ("mention", "a2"),
            ("message", "a3"),
        ]


def test_s1_d2_mention_without_read_right_leaves_no_trace() -> None:
    log = HERE / "mention_without_read_right.jsonl"
    hints = replay_file(log)
    assert not [h for h in hints if h["recipient"] == "alex"]
    assert "alex" not in log.with_name(log.stem + ".expected.jsonl").read_text()


def test_s1_dm_hints_to_every_participant_but_the_author() -> None:
    hints = replay_file(HERE / "dm_hints.jsonl")
    assert [(h["recipient"], h["kind"], h["message"]) for h in hints] == [
        ("alex", "dm", "d1"),
        ("sam", "dm", "d3"),
    ]


def test_s5_automatic_following_inserts_only_when_absent_and_not_in_main() -> None:
    replay = Replay(policy=policy_from_mapping({"coalesce_window_s": 60}))
    list(replay.run((HERE / "automatic_following.jsonl").read_text().splitlines()))
    rows = {k: v.level.value for k, v in replay.store.rows.items() if k[1] == "thread"}
    assert rows == {
        ("robin", "thread", "t"): "mute",
        ("alex", "thread", "t"): "all",
        ("sam", "thread", "t"): "all",
    }


def test_d9_revocation_between_event_and_delayed_release() -> None:
    hints = replay_file(HERE / "revocation_before_release.jsonl")
    release = [h for h in hints if h["trigger"] == "release"]
    assert [(r["recipient"], r["decision"], r.get("reason")) for r in release] == [
        ("sam", "skip", "not_allowed")
    ]


def test_s4_security_to_other_devices_and_admin_switch() -> None:
    hints = replay_file(HERE / "security_and_admin.jsonl")
    security = next(h for h in hints if h["kind"] == "security")
    assert [r["device"] for r in security["routes"]] == ["alex-laptop", "alex-phone"]  # type: ignore[index]
    admin = [(h["target"], h["decision"]) for h in hints if h["kind"] == "admin"]
    assert admin == [("g-1", "send"), ("g-2", "skip")]


def test_b2_badge_sync_only_when_lowered_at_most_one_per_interval() -> None:
    hints = replay_file(HERE / "badge_sync.jsonl")
    syncs = [(h["at"], h["count"]) for h in hints if h["trigger"] == "badge_sync"]
    assert syncs == [("2026-10-23T09:00:20Z", 1), ("2026-10-23T09:02:20Z", 0)]


def test_b2_a_read_past_the_last_unread_mention_schedules_a_sync() -> None:
    """B2: Alex reads t3 past Sam's mention while t3 stays unread (level mentions, no DM):
    the badge falls from 2 to 1 and a sync goes at once; the later read of t another."""
    hints = replay_file(HERE / "badge_sync_mention_read.jsonl")
    syncs = [(h["at"], h["count"]) for h in hints if h["trigger"] == "badge_sync"]
    assert syncs == [("2026-10-23T09:03:30Z", 1), ("2026-10-23T09:05:30Z", 0)]


def test_b1a_d8_flush_count_leaves_out_anchor_and_system_message_in_between() -> None:
    """B1a, D8: Sam read m1; then m2, a run anchor, a system message and m3 came. The flush
    counts the two counted messages only, not the four positions past his read."""
    hints = replay_file(HERE / "flush_skips_anchor_and_system.jsonl")
    flushes = [(h["recipient"], h["message"], h["count"]) for h in hints if h["trigger"] == "flush"]
    assert flushes == [("sam", "m3", 2)]


def test_q1_unset_time_zone_puts_the_persons_quiet_rules_in_utc() -> None:
    """Q1: a rule without a zone runs in the person's zone, and in UTC once `user.updated`
    unsets it (formats.md section 4): 10:00-12:00 is quiet at 09:00Z in Berlin, not in UTC."""
    hints = replay_file(HERE / "zone_unset.jsonl")
    quiet = [(h["message"], h["quiet"]) for h in sends(hints, "alex")]
    assert quiet == [("m1", True), ("m2", False)]


class TestOwnMessages:
    """B3: a human's own message moves their read position in its thread to it."""

    def test_b3_own_message_is_read_and_reading_it_schedules_no_sync(self) -> None:
        """B3: the flush after Alex's reply counts only what came after it; reading up to his
        reply lowers nothing (no sync); D9: a delayed push due after his reply is read."""
        hints = replay_file(HERE / "own_messages_read.jsonl")
        flush = [h for h in hints if h["trigger"] == "flush" and h["recipient"] == "alex"]
        assert [h["count"] for h in flush] == [1]
        assert [h for h in hints if h["trigger"] == "badge_sync"] == []
        released = [(h["message"], h.get("reason")) for h in hints if h["trigger"] == "release"]
        assert released == [("m1", "read"), ("m4", None), ("n1", "read")]


class TestBadInput:
    """formats.md: a bad line names file and line, the replay goes on, exit 2."""

    def test_bad_lines_are_reported_and_skipped(self, tmp_path: Path) -> None:
        good = SPEC_LOG.read_text().splitlines()
        stale = good[0].replace('"seq":1', '"seq":2')
        clock_back = json.dumps(
            {
                "seq": 100,
                "type": "user.created",
                "occurred_at": "2026-10-22T00:00:00Z",
                "payload": {"user": "x", "kind": "human"},
            }
        )
        lines = [*good[:3], "{oops", stale, good[3], clock_back, *good[4:]]
        log = tmp_path / "bad.jsonl"
        log.write_text("\n".join(lines) + "\n")
        result = CliRunner().invoke(cli, ["replay", str(log)])
        assert result.exit_code == 2
        assert f"{log}:4: bad event: not JSON" in result.stderr
        assert f"{log}:5: bad event at /seq: seq 2 does not follow 3" in result.stderr
        assert f"{log}:7: bad event at /occurred_at" in result.stderr
        assert "Traceback" not in result.output
        assert '"recipient":"u-ana"' in result.stdout  # the rest still replayed

    @pytest.mark.parametrize(
        ("event", "pointer"),
        [
            (
                {
                    "seq": 1,
                    "type": "user.created",
                    "occurred_at": "2026-10-23T08:00:00",
                    "payload": {"user": "u", "kind": "human"},
                },
                "/occurred_at",
            ),
            (
                {
                    "seq": 1,
                    "type": "user.created",
                    "occurred_at": "2026-10-23T08:00:00Z",
                    "payload": {"user": "u", "kind": "robot"},
                },
                "/payload/kind",
            ),
            (
                {
                    "seq": 1,
                    "type": "user.created",
                    "occurred_at": "2026-10-23T08:00:00Z",
                    "payload": {"user": None, "kind": "human"},
                },
                "/payload/user",
            ),
            (
                {
                    "seq": 1,
                    "type": "read_state.updated",
                    "occurred_at": "2026-10-23T08:00:00Z",
                    "payload": {"thread": "t", "last_read_seq": 1},
                },
                "/audience",
            ),
            (
                {
                    "seq": 1,
                    "type": "quiet_hours.updated",
                    "occurred_at": "2026-10-23T08:00:00Z",
                    "audience": "u",
                    "payload": {
                        "rules": [
                            {
                                "weekdays": 1,
                                "start_local": "24:00",
                                "end_local": "07:00",
                                "enabled": True,
                            }
                        ]
                    },
                },
                "/payload/rules/0/start_local",
            ),
        ],
    )
    def test_bad_event_names_the_member(
        self, tmp_path: Path, event: dict[str, object], pointer: str
    ) -> None:
        log = tmp_path / "bad.jsonl"
        log.write_text(json.dumps(event) + "\n")
        result = CliRunner().invoke(cli, ["replay", str(log)])
        assert result.exit_code == 2
        assert f"{log}:1: bad event at {pointer}:" in result.stderr

    def test_unknown_event_types_are_counted_and_ignored(self, tmp_path: Path) -> None:
        log = tmp_path / "x.jsonl"
        log.write_text(
            json.dumps(
                {
                    "seq": 1,
                    "type": "reaction.added",
                    "occurred_at": "2026-10-23T08:00:00Z",
                    "payload": {},
                }
            )
            + "\n"
        )
        summary = tmp_path / "s.json"
        result = CliRunner().invoke(cli, ["replay", str(log), "--summary-json", str(summary)])
        assert result.exit_code == 0
        assert json.loads(summary.read_text())["unknown_event_types"] == {"reaction.added": 1}

    def test_a_type_spelled_like_a_known_one_is_ignored_too(self, tmp_path: Path) -> None:
        # "space_created" is no type of the formats: it creates no space, so the channel
        # names an unknown one; "user_created" without the members of user.created is fine.
        events = [
            {"type": "space_created", "payload": {"space": "s1"}},
            {"type": "user_created", "payload": {}},
            {
                "type": "channel.created",
                "payload": {"channel": "c1", "space": "s1", "kind": "text"},
            },
        ]
        log = tmp_path / "x.jsonl"
        log.write_text(
            "".join(
                json.dumps({"seq": seq, "occurred_at": "2026-10-23T08:00:00Z", **event}) + "\n"
                for seq, event in enumerate(events, start=1)
            )
        )
        summary = tmp_path / "s.json"
        result = CliRunner().invoke(
            cli, ["replay", str(log), "--include-skips", "--summary-json", str(summary)]
        )
        assert result.exit_code == 0, result.output
        counts = json.loads(summary.read_text())
        assert counts["unknown_event_types"] == {"space_created": 1, "user_created": 1}
        assert counts["unknown_references"] == {"space": 1}
        assert [json.loads(line)["reference"] for line in result.stdout.splitlines()] == [
            {"type": "space", "id": "s1"}
        ]

    def test_bad_policy_file(self, tmp_path: Path) -> None:
        policy = tmp_path / "p.toml"
        policy.write_text("coalesce_window = 60\n")
        result = CliRunner().invoke(cli, ["replay", str(SPEC_LOG), "--policy", str(policy)])
        assert result.exit_code == 2
        assert "unknown policy key 'coalesce_window'" in result.stderr


def test_compare_reports_pushes_saved(tmp_path: Path) -> None:
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text("coalesce_window_s = 0\n")
    b.write_text("coalesce_window_s = 60\n")
    log = HERE / "ten_messages.jsonl"
    result = CliRunner().invoke(cli, ["replay", str(log), "--policy", str(a), "--compare", str(b)])
    assert result.exit_code == 0, result.output
    diff = json.loads(result.stdout)
    assert diff["pushes"]["a"] > diff["pushes"]["b"]
    assert diff["pushes_saved"] == diff["pushes"]["a"] - diff["pushes"]["b"]


def test_d11_explain_command(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["explain", str(SPEC_LOG), "--seq", "12", "--recipient", "u-ana", "--json"]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert [s["rule"] for s in out["steps"]] == ["D1", "D2", "D3", "D4", "D5", "D6", "D7"]
    assert out["decision"]["decision"] == "send"
    missing = CliRunner().invoke(
        cli, ["explain", str(SPEC_LOG), "--seq", "99", "--recipient", "u-ana"]
    )
    assert missing.exit_code == 2 and "no event with seq 99" in missing.stderr


# --- properties over random logs ------------------------------------------------------------

PEOPLE = ("alex", "sam", "owner", "robin")


@st.composite
def random_logs(draw: st.DrawFn) -> tuple[Log, dict[int, set[str]]]:
    """A small team, then random activity; returns the log and who could read t per seq."""
    log = Log().team()
    readers = {"alex", "sam", "owner"}
    can_read: dict[int, set[str]] = {}
    thread_seq = 0
    clock = 0.0
    for _ in range(draw(st.integers(5, 40))):
        clock += draw(st.sampled_from([1, 5, 20, 61, 200]))
        log.at(clock)
        op = draw(
            st.sampled_from(["msg", "msg", "msg", "read", "pref", "revoke", "grant", "presence"])
        )
        who = draw(st.sampled_from(PEOPLE))
        if op == "msg":
            thread_seq += 1
            mentions = draw(st.lists(st.sampled_from(PEOPLE), max_size=2))
            log.msg(f"m{thread_seq}", who, seq=thread_seq, mention_ids=mentions)
            can_read[len(log.events)] = set(readers)
        elif op == "read":
            log.read(who, "t", draw(st.integers(0, thread_seq)))
        elif op == "pref":
            log.pref(
                who,
                draw(st.sampled_from(["thread", "channel", "space"])),
                {"thread": "t", "channel": "c", "space": "s"}[
                    draw(st.sampled_from(["thread", "channel", "space"]))
                ],
                draw(st.sampled_from(["all", "mentions", "mute"])),
            )
        elif op in ("revoke", "grant") and who not in ("owner",):
            log.add(
                f"access.{'revoked' if op == 'revoke' else 'granted'}",
                {"user": who, "target": {"kind": "space", "id": "s"}},
            )
            readers = readers - {who} if op == "revoke" else readers | {who}
        elif op == "presence":
            log.add(
                "presence.changed",
                {
                    "device": f"{who}-phone",
                    "connected": draw(st.booleans()),
                    "focus": ["t"],
                    "idle": draw(st.booleans()),
                },
            )
    return log, can_read


def run_log(log: Log, include_skips: bool = True) -> tuple[str, list[dict[str, object]]]:
    lines = [json.dumps(e) for e in log.events]
    replay = Replay(
        policy=policy_from_mapping(
            {"coalesce_window_s": 60, "mobile_delay_when_desktop_active_s": 30}
        ),
        include_skips=include_skips,
    )
    text = "".join(dumps_item(h) + "\n" for h in replay.run(lines))  # type: ignore[arg-type]
    # Lines of unknown references (a presence of a device never registered) are no hints.
    hints = [json.loads(line) for line in text.splitlines()]
    return text, [h for h in hints if h.get("reason") != "unknown_reference"]


@settings(max_examples=60)
@given(random_logs())
def test_replay_is_deterministic(data: tuple[Log, dict[int, set[str]]]) -> None:
    log, _ = data
    assert run_log(log)[0] == run_log(log)[0]


@settings(max_examples=60)
@given(random_logs())
def test_no_recipient_gets_two_hints_for_one_event(data: tuple[Log, dict[int, set[str]]]) -> None:
    _, hints = run_log(data[0])
    per_event = Counter((h["seq"], h["recipient"]) for h in hints if h["trigger"] == "event")
    assert all(count == 1 for count in per_event.values())


@settings(max_examples=60)
@given(random_logs())
def test_no_hint_goes_to_someone_not_allowed_at_decision_time(
    data: tuple[Log, dict[int, set[str]]],
) -> None:
    log, can_read = data
    _, hints = run_log(log)
    for h in hints:
        if h["trigger"] == "event" and h["decision"] != "skip":
            assert h["recipient"] in can_read[h["seq"]]  # type: ignore[index]


@settings(max_examples=60)
@given(random_logs())
def test_every_collected_window_is_flushed_or_read(data: tuple[Log, dict[int, set[str]]]) -> None:
    _, hints = run_log(data[0])
    open_collects: dict[tuple[object, object], int] = defaultdict(int)
    for h in hints:
        key = (h["recipient"], h.get("thread"))
        if h["decision"] == "collect":
            open_collects[key] += 1
        elif h["trigger"] == "flush":
            open_collects.pop(key, None)
    assert not open_collects


@pytest.mark.parametrize("log", [*GOLDENS, ROOT_EXAMPLES / "team-week.jsonl"], ids=lambda p: p.stem)
def test_orjson_and_the_stdlib_give_the_same_bytes(log: Path) -> None:
    """The CLI's faster JSON (notify_cli.fastjson) changes nothing in the output."""
    lines = log.read_text(encoding="utf-8").splitlines()
    slow = [dumps_hint(h) for h in Replay(include_skips=True).run(lines)]  # type: ignore[arg-type]
    replay = Replay(include_skips=True, reader=fastjson.reader())
    fast = [dumps_hint(h, fastjson.dumps) for h in replay.run(lines)]  # type: ignore[arg-type]
    assert fast == slow and slow


def test_s3_a_run_without_anchor_points_at_its_thread_only() -> None:
    log = Log().team().pref("sam", "thread", "t", "all")
    log.at(10).msg("old", "lotse", seq=1, origin="agent")  # before any run: not the run's
    log.at(20).run("r9", "running").run("r9", "completed")
    _, hints = run_log(log)
    done = [h for h in hints if h["kind"] == "run_done"]
    assert [(h["recipient"], "message" in h) for h in done] == [("alex", False)]
    assert not [h for h in hints if h.get("seq") == len(log.events) and h["kind"] == "message"]


def test_lone_surrogates_are_bad_lines_on_the_stdlib_path_too(tmp_path: Path) -> None:
    line = '{"seq":1,"type":"user.created","occurred_at":"2026-10-23T08:00:00Z",'
    line += '"payload":{"user":"\\ud800","kind":"human"}}'
    out = list(Replay().run([line]))
    assert len(out) == 1 and isinstance(out[0], EventError) and out[0].code == "invalid_json"
