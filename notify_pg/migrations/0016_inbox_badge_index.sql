-- The badge's own index goes: inbox_entries_unread_key (user_id, group_key) WHERE read_at IS NULL
-- serves the badge (inbox_unread_count) and mark-read (inbox_read) with the same plan, a bitmap
-- scan of the person's unread rows with in_app and the hidden sites checked on the row. A
-- fan-out writes one row per watcher: each index less is one insertion less per entry.
DROP INDEX {schema}.inbox_entries_badge_idx;
