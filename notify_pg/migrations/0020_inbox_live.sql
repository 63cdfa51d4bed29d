-- Live inbox updates (seed 004 section 9.3; issue 28): every write that changes what a person's
-- summary answers (the fan-out's inserts and coalescings, reads, dismissals, the purge, a
-- forgotten person) sends NOTIFY with the people it touched, from statement-level triggers on
-- inbox_entries. NOTIFY is transactional: the notifications go at the writing transaction's
-- commit, and never for one rolled back. Triggers, not calls in each writer, so that no write
-- path (the host's own SQL included) can forget it.
--
-- The channel is 'notify_inbox_' || md5(schema) (`notify_pg.inbox.live.live_channel`): one
-- per schema, always under PostgreSQL's 63-byte name limit. The payload is a JSON array of
-- person ids, chunked so that each stays under 7,900 bytes (PostgreSQL refuses 8,000); a
-- person id too long for any chunk sends '*', which tells every listener to refresh everyone.
-- The summary counts unread in-app entries and the latest in-app entry's updated_at, so only
-- in-app rows count, and an UPDATE counts only where one of the columns it reads changed (the
-- mail drain's email_state updates send nothing).
CREATE FUNCTION {schema}.inbox_live_send(p_channel text, p_people text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    person text;
    item text;
    chunk text := '';
BEGIN
    IF p_people IS NULL THEN
        RETURN;
    END IF;
    FOREACH person IN ARRAY p_people LOOP
        item := to_json(person)::text;
        IF octet_length(item) > 7000 THEN
            PERFORM pg_notify(p_channel, '*');
            CONTINUE;
        END IF;
        IF chunk <> '' AND octet_length(chunk) + octet_length(item) + 3 > 7900 THEN
            PERFORM pg_notify(p_channel, '[' || chunk || ']');
            chunk := '';
        END IF;
        chunk := CASE WHEN chunk = '' THEN item ELSE chunk || ',' || item END;
    END LOOP;
    IF chunk <> '' THEN
        PERFORM pg_notify(p_channel, '[' || chunk || ']');
    END IF;
END
$$;

CREATE FUNCTION {schema}.inbox_live_written() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    people text[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(DISTINCT user_id) INTO people FROM new_rows WHERE in_app;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(DISTINCT user_id) INTO people FROM old_rows WHERE in_app;
    ELSE
        SELECT array_agg(DISTINCT p) INTO people
        FROM old_rows o JOIN new_rows n ON n.id = o.id,
             LATERAL (VALUES (o.user_id), (n.user_id)) AS who(p)
        WHERE (o.in_app OR n.in_app)
          AND (o.read_at, o.updated_at, o.in_app, o.site_id, o.user_id)
              IS DISTINCT FROM (n.read_at, n.updated_at, n.in_app, n.site_id, n.user_id);
    END IF;
    PERFORM {schema}.inbox_live_send('notify_inbox_' || md5(TG_TABLE_SCHEMA), people);
    RETURN NULL;
END
$$;

-- One trigger per event: PostgreSQL allows transition tables only on single-event triggers.
CREATE TRIGGER inbox_live_insert AFTER INSERT ON {schema}.inbox_entries
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.inbox_live_written();
CREATE TRIGGER inbox_live_update AFTER UPDATE ON {schema}.inbox_entries
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.inbox_live_written();
CREATE TRIGGER inbox_live_delete AFTER DELETE ON {schema}.inbox_entries
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {schema}.inbox_live_written();
