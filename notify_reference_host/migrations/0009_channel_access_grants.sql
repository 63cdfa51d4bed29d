-- The read-access view of 0005 with its grant test as two `EXISTS`, one per kind of grant:
-- each is an equality on the grants' primary key (user, kind, target), which the planner can
-- answer by an index probe or by one hash of the grants per query. The single `EXISTS` over an
-- `OR` of the two kinds could only be answered by scanning a person's grants again for every
-- (person, channel) it tests. The rights are the same.
CREATE OR REPLACE VIEW {schema}.channel_access AS
SELECT u.id AS user_id, u.active, c.id AS channel_id
FROM {schema}.channels c
LEFT JOIN {schema}.spaces s ON s.id = c.space_id
CROSS JOIN {schema}.users u
WHERE c.archived_at IS NULL AND s.archived_at IS NULL
  AND CASE WHEN c.kind = 'dm' THEN EXISTS (
          SELECT 1 FROM {schema}.dm_participants p
          WHERE p.channel_id = c.id AND p.user_id = u.id)
      ELSE u.owner
        OR EXISTS (
          SELECT 1 FROM {schema}.grants g
          WHERE g.user_id = u.id AND g.target_kind = 'channel' AND g.target_id = c.id)
        OR EXISTS (
          SELECT 1 FROM {schema}.grants g
          WHERE g.user_id = u.id AND g.target_kind = 'space' AND g.target_id = c.space_id)
      END;
