-- A fan-out claim is tied to the session that took it (notify_pg.inbox.claims): claimed_pid is
-- the server process of that session. Another worker takes the event back at once when that
-- process is no longer in pg_stat_activity (the worker was killed, its session ended, the
-- server restarted), not only after the claim timeout. Claims of before this migration have
-- none and are taken back after the timeout, as before.
ALTER TABLE {schema}.inbox_outbox ADD COLUMN claimed_pid integer;
