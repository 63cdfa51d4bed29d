"""HTTP of notify_pg: framework-neutral handlers and the reference app that serves them.

- `notify_pg.http.handlers`: plain functions from a request's values to a `Response`
  (the inbox; `notify_pg.http.unsubscribe`: one-click unsubscribe), for any framework, each
  with its plan form (``inbox_list_plan``, `notify_pg.db.plan`) that an asyncio host runs on
  an async connection; `notify_pg.http.responses`: the `Response` and its helpers;
- `notify_pg.http.admin`: the same for a person's preferences and the instance's settings;
- `notify_pg.http.app`: the reference WSGI app (its routes over the handlers);
- `notify_pg.http.server`: its ASGI front on uvicorn, the server of ``notify serve`` (bodies
  read before a connection is taken, the websocket, the demo page of ``static/``);
- `notify_pg.http.native`: the native routes of that front (one coroutine per route, asyncio
  connections, no thread), with `notify_pg.http.kept`'s kept summaries;
- `notify_pg.http.live`: live updates (LISTEN, and "refresh" to a person's websockets).

It imports the inbox and mail wings, never a worker. The names of the old module
``notify_pg.http`` (the handlers) are re-exported here.
"""

from notify_pg.http.admin import (
    preferences_get,
    preferences_patch,
    settings_get,
    settings_patch,
)
from notify_pg.http.handlers import (
    MAX_BODY_BYTES,
    UNSUBSCRIBE_INFO_PATH,
    UNSUBSCRIBE_PAGE,
    Response,
    inbox_dismiss,
    inbox_dismiss_plan,
    inbox_list,
    inbox_list_plan,
    inbox_read,
    inbox_read_one,
    inbox_read_one_plan,
    inbox_read_plan,
    inbox_sites,
    inbox_sites_plan,
    inbox_summary,
    inbox_summary_plan,
    inbox_view,
    inbox_view_plan,
    unsubscribe_get,
    unsubscribe_info,
    unsubscribe_info_plan,
    unsubscribe_post,
    unsubscribe_post_plan,
)

__all__ = [
    "MAX_BODY_BYTES",
    "UNSUBSCRIBE_INFO_PATH",
    "UNSUBSCRIBE_PAGE",
    "Response",
    "inbox_dismiss",
    "inbox_dismiss_plan",
    "inbox_list",
    "inbox_list_plan",
    "inbox_read",
    "inbox_read_one",
    "inbox_read_one_plan",
    "inbox_read_plan",
    "inbox_sites",
    "inbox_sites_plan",
    "inbox_summary",
    "inbox_summary_plan",
    "inbox_view",
    "inbox_view_plan",
    "preferences_get",
    "preferences_patch",
    "settings_get",
    "settings_patch",
    "unsubscribe_get",
    "unsubscribe_info",
    "unsubscribe_info_plan",
    "unsubscribe_post",
    "unsubscribe_post_plan",
]
