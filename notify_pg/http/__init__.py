"""HTTP of notify_pg: framework-neutral handlers and the reference app that serves them.

- `notify_pg.http.handlers`: plain functions from a request's values to a `Response`
  (unsubscribe, inbox), for any framework;
- `notify_pg.http.admin`: the same for a person's preferences and the instance's settings;
- `notify_pg.http.app`: the reference WSGI app (its routes over the handlers);
- `notify_pg.http.server`: its ASGI front on uvicorn, the server of ``notify serve`` (bodies
  read before a connection is taken, the websocket, the demo page of ``static/``);
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
    inbox_list,
    inbox_read,
    inbox_read_one,
    inbox_sites,
    inbox_summary,
    inbox_view,
    unsubscribe_get,
    unsubscribe_info,
    unsubscribe_post,
)

__all__ = [
    "MAX_BODY_BYTES",
    "UNSUBSCRIBE_INFO_PATH",
    "UNSUBSCRIBE_PAGE",
    "Response",
    "inbox_dismiss",
    "inbox_list",
    "inbox_read",
    "inbox_read_one",
    "inbox_sites",
    "inbox_summary",
    "inbox_view",
    "preferences_get",
    "preferences_patch",
    "settings_get",
    "settings_patch",
    "unsubscribe_get",
    "unsubscribe_info",
    "unsubscribe_post",
]
