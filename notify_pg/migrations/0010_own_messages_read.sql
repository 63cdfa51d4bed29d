-- B3: a person's own message moves their read position in its thread. While an event is
-- handled, the previous read position comes from the log (read_position_before): the last
-- read_state.updated of the person and thread, then their own later messages in the thread.
-- This index finds a person's messages in a thread by log order.
CREATE INDEX event_log_author_message_idx
    ON {schema}.event_log ((payload->>'thread'), (payload->>'author'), seq)
    WHERE type = 'message.created';
