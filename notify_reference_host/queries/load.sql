-- The bookkeeping of `notify db load` (notify_reference_host.load).

-- name: loaded_digests
-- Which of these events (by digest) are loaded already.
SELECT digest FROM {schema}.loaded_events WHERE digest = ANY(%(digests)s::text[])

-- name: loaded_event_seqs
-- Which of these events (by digest) are loaded already, with their seq in notify's event log.
SELECT digest, event_seq FROM {schema}.loaded_events WHERE digest = ANY(%(digests)s::text[])

-- name: mark_loaded
-- Remember one loaded event (in the transaction that writes it).
INSERT INTO {schema}.loaded_events (digest, log_seq, event_seq)
VALUES (%(digest)s, %(log_seq)s, %(event_seq)s)

-- name: loaded_entry_names
-- The inbox entries in the order the fan-out inserted them ({schema}: notify's schema), to
-- name them as a replay does when a load resumes.
SELECT user_id, group_key, id FROM {schema}.inbox_entries ORDER BY id
