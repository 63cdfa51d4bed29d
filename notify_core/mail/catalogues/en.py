"""English strings of notification mails (E6): one catalogue per language, same keys in each.

Keys ``<category>.<variant>`` name what happened (``{actor}``, ``{title}``); ``<category>`` is
the fallback for a variant without its own string; ``.draft`` is a page created unpublished;
``sync.<category>.<variant>`` (fallback ``sync``) an event without an actor, with no
``{actor}``; ``category.<category>`` and ``section.<section>`` the names the preferences screen
shows. Values are ``str.format`` templates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = ["STRINGS"]

#: The English catalogue.
STRINGS: Final[Mapping[str, str]] = {
    "watched_page": "{actor} changed {title}",
    "watched_page.edited": "{actor} edited {title}",
    "watched_page.published": "{actor} published {title}",
    "watched_page.unpublished": "{actor} unpublished {title}",
    "watched_page.scheduled": "{actor} scheduled {title} for publishing",
    "watched_page.moved": "{actor} moved {title}",
    "watched_page.deleted": "{actor} deleted {title}",
    "watched_page_comment": "{actor} commented on {title}",
    "watched_page_comment.new": "{actor} commented on {title}",
    "watched_page_comment.edited": "{actor} edited a comment on {title}",
    "comment_reply": "{actor} replied to your comment on {title}",
    "comment_reply.new": "{actor} replied to your comment on {title}",
    "comment_reply.edited": "{actor} edited a reply to your comment on {title}",
    "mention": "{actor} mentioned you on {title}",
    "mention.new": "{actor} mentioned you on {title}",
    "mention.edited": "{actor} mentioned you on {title}",
    "review_requested": "{actor} asks for your review of {title}",
    "review_requested.new": "{actor} asks for your review of {title}",
    "review_requested.updated": "{actor} updated a submission for your review of {title}",
    "page_created": "{actor} created {title}",
    "page_created.created": "{actor} created {title}",
    "page_deleted": "{actor} deleted {title}",
    "page_deleted.deleted": "{actor} deleted {title}",
    # A page created unpublished names its state (E6: "created as a draft").
    "page_created.created.draft": "{title} was created as a draft by {actor}",
    # An event without an actor (a storage sync, E6): what happened, "via storage sync".
    "sync": "{title} changed via storage sync",
    "sync.watched_page.edited": "{title} was edited via storage sync",
    "sync.watched_page.published": "{title} was published via storage sync",
    "sync.watched_page.unpublished": "{title} was unpublished via storage sync",
    "sync.watched_page.scheduled": "{title} was scheduled for publishing via storage sync",
    "sync.watched_page.moved": "{title} was moved via storage sync",
    "sync.watched_page.deleted": "{title} was deleted via storage sync",
    "sync.page_created.created": "{title} was created via storage sync",
    "sync.page_created.created.draft": "{title} was created as a draft via storage sync",
    "sync.page_deleted.deleted": "{title} was deleted via storage sync",
    # A person with no display name, or no longer known (never their id, E6).
    "someone": "Someone",
    "count": "{count} times",
    "subject.single": "[{site}] {line}",
    "subject.digest": "[{site}] {total} notifications",
    "open": "Open",
    "excerpt": "Comment",
    "more": "and {more} more",
    "open_inbox": "Open your notifications",
    "manage": "Manage notifications",
    "unsubscribe": "Unsubscribe",
    "footer": "You receive this email because of your notification settings on {site}.",
    # The names of the categories and sections, as the preferences screen shows them.
    "category.watched_page": "Changes to pages you watch",
    "category.watched_page_comment": "Comments on pages you watch",
    "category.comment_reply": "Replies to your comments",
    "category.mention": "Mentions of you",
    "category.review_requested": "Reviews asked of you",
    "category.page_created": "New pages",
    "category.page_deleted": "Deleted pages",
    "section.watching": "Watching",
    "section.discussions": "Discussions",
    "section.reviews": "Reviews",
    "section.everything": "Everything",
}
