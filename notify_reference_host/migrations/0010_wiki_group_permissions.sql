-- A group's host permissions (N8, N13: `permissions` of group.created / group.updated), held
-- outright by its members on no page, such as manage_storage; manage_system holds them all.
-- IF NOT EXISTS: a record that lost its rows (tests/pg/db/test_migrations.py) may apply it
-- again.
ALTER TABLE {schema}.wiki_groups ADD COLUMN IF NOT EXISTS permissions text[] NOT NULL DEFAULT ARRAY[]::text[];
