-- Queries of the migration runner (notify_pg.migrate); {schema} is the schema being migrated.

-- name: create_schema
-- Create the schema when it does not exist yet.
CREATE SCHEMA IF NOT EXISTS {schema}

-- name: create_migrations_table
-- Create the table of applied migrations with their checksums.
CREATE TABLE IF NOT EXISTS {schema}.schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)

-- name: lock_migrations
-- Serialize migration runs on one schema until the end of the transaction.
SELECT pg_advisory_xact_lock(hashtextextended('notify.migrate:' || %(schema)s, 0))

-- name: applied_migrations
-- The applied migrations in order.
SELECT version, name, checksum FROM {schema}.schema_migrations ORDER BY version

-- name: record_migration
-- Remember one applied migration and its checksum.
INSERT INTO {schema}.schema_migrations (version, name, checksum)
VALUES (%(version)s, %(name)s, %(checksum)s)

-- name: schema_exists
-- Whether the schema exists (the readiness check, before any of its tables is read).
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = %(schema)s)

-- name: schema_tables
-- The names of the schema's tables (plain and partitioned), for the readiness check.
SELECT c.relname
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p')
