-- Queries on preference_records (docs/rules.md#records). No query deletes a row and no query changes
-- anything but status, suspended_at and deleted_at (Invariant 1, 9).

-- name: lock_principal_records
-- Serialize the writes of one principal's records until the end of the transaction.
SELECT pg_advisory_xact_lock(
    hashtextextended('notify.preference_records:' || %(schema)s::text || ':' || %(principal_ref)s::text, 0)
)

-- name: principal_records
-- Every record of one principal in recording order, and the record carrying preference_id whoever holds it.
SELECT preference_id, principal_ref, declared_channels, set_at, status, channel_preferences,
       frequency_limit, quiet_hours, "format", metadata, suspended_at, deleted_at
FROM {schema}.preference_records
WHERE principal_ref = %(principal_ref)s OR preference_id = %(preference_id)s
ORDER BY seq

-- name: read_record
-- The record with one preference id, in any status.
SELECT preference_id, principal_ref, declared_channels, set_at, status, channel_preferences,
       frequency_limit, quiet_hours, "format", metadata, suspended_at, deleted_at
FROM {schema}.preference_records
WHERE preference_id = %(preference_id)s

-- name: current_record
-- The record currently in effect (active or suspended) for one principal, through the partial unique index.
SELECT preference_id, principal_ref, declared_channels, set_at, status, channel_preferences,
       frequency_limit, quiet_hours, "format", metadata, suspended_at, deleted_at
FROM {schema}.preference_records
WHERE principal_ref = %(principal_ref)s AND status <> 'deleted'
ORDER BY seq DESC
LIMIT 1

-- name: insert_record
-- Record a new preference record; returns no row when the preference id is taken (never reused).
INSERT INTO {schema}.preference_records
    (preference_id, principal_ref, declared_channels, set_at, status, channel_preferences,
     frequency_limit, quiet_hours, "format", metadata, suspended_at, deleted_at)
VALUES (%(preference_id)s, %(principal_ref)s, %(declared_channels)s, %(set_at)s, %(status)s,
        %(channel_preferences)s, %(frequency_limit)s, %(quiet_hours)s, %(format)s,
        %(metadata)s, %(suspended_at)s, %(deleted_at)s)
ON CONFLICT (preference_id) DO NOTHING
RETURNING seq

-- name: stamp_record
-- Move one record's status and stamp its instants, only from the status the transition read.
UPDATE {schema}.preference_records
SET status = %(status)s, suspended_at = %(suspended_at)s, deleted_at = %(deleted_at)s
WHERE preference_id = %(preference_id)s AND status = %(old_status)s
