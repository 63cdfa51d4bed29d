"""A small builder of wiki event logs (formats.md section 4) for the inbox tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

START = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
ALL_READ = [
    {"permission": "read_pages", "match": "all"},
    {"permission": "read_comments", "match": "all"},
]


class WikiLog:
    """Appends wiki events with increasing seq; the clock moves by ``tick`` seconds each."""

    def __init__(self, mail: bool = True) -> None:
        self.events: list[dict[str, object]] = []
        self.now = START
        self.add("notifications.settings", {"mail_configured": mail, "email_delay_s": 180})
        self.add("site.created", {"site": "s1", "host": "wiki.example.org", "https": True})
        self.add("group.created", {"group": "readers", "rules": ALL_READ})

    def add(self, type_: str, payload: dict[str, object], **envelope: object) -> WikiLog:
        event: dict[str, object] = {
            "seq": len(self.events) + 1,
            "type": type_,
            "occurred_at": self.now.strftime("%Y-%m-%dT%H:%M:%S") + "Z",
        }
        event.update(envelope)
        event["payload"] = payload
        self.events.append(event)
        return self

    def tick(self, seconds: float = 60) -> WikiLog:
        self.now += timedelta(seconds=seconds)
        return self

    def user(self, user: str, groups: tuple[str, ...] = ("readers",), **extra: object) -> WikiLog:
        self.add(
            "user.created",
            {"user": user, "kind": "human", "email": f"{user}@example.org", "verified": True}
            | extra,
        )
        for group in groups:
            self.add("group.member_added", {"group": group, "user": user})
        return self

    def page(self, page: str, path: str, actor: str = "ben", **extra: object) -> WikiLog:
        payload = {"page": page, "site": "s1", "path": path, "locale": "en", "title": page}
        return self.add("page.created", payload | extra, actor=actor)

    def watch(self, page: str, *users: str) -> WikiLog:
        for user in users:
            self.add("page.watched", {"page": page, "user": user})
        return self

    def edit(self, page: str, actor: str = "ben", **extra: object) -> WikiLog:
        return self.tick().add("page.edited", {"page": page} | extra, actor=actor)

    def comment(self, comment: str, page: str, actor: str, **extra: object) -> WikiLog:
        return self.tick().add(
            "comment.created", {"comment": comment, "page": page} | extra, actor=actor
        )

    def lines(self) -> list[str]:
        import json

        return [json.dumps(e, separators=(",", ":")) for e in self.events]
