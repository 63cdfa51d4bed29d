-- B1a: run anchors and system messages never count in a flush count (D8). The pipeline
-- counts those of a thread between a read position and the thread's newest message
-- (uncounted_between); this index finds them by thread and position.
CREATE INDEX event_log_uncounted_idx
    ON {schema}.event_log ((payload->>'thread'), ((payload->>'thread_seq')::bigint))
    WHERE type = 'message.created' AND payload->>'kind' IN ('run', 'system');
