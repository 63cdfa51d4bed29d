-- formats.md section 4: a wiki's activity events carry a top-level origin ("user", "import"
-- or "bulk"; absent: user). Only a non-user origin is stored, so chat events and a user's
-- edits keep NULL and read back without the member.
ALTER TABLE {schema}.event_log ADD COLUMN origin text COLLATE "C";
ALTER TABLE {schema}.event_log ADD CONSTRAINT event_log_origin_check
    CHECK (origin IN ('import', 'bulk'));
