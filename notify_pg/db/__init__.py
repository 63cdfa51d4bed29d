"""The database base of notify_pg: what every other wing stands on.

- `notify_pg.db.seam`: the one place SQL runs (named queries from ``notify_pg/queries``);
- `notify_pg.db.migrate`: the numbered migrations of ``notify_pg/migrations``;
- `notify_pg.db.errors`: the error tree and the translation of PostgreSQL's errors;
- `notify_pg.db.ids`: new ids.

It imports no other wing.
"""

__all__: list[str] = []
