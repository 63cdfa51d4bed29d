-- Who may read which channel now, the read-access predicate of the reference host held once: a
-- direct message's participants; in a space's channel its owners and the people granted the
-- channel or its space; nobody in an archived channel or space. A view, so the planner pulls
-- it into each query that joins it (the plans stay those of the predicate written inline).
CREATE VIEW {schema}.channel_access AS
SELECT u.id AS user_id, u.active, c.id AS channel_id
FROM {schema}.channels c
LEFT JOIN {schema}.spaces s ON s.id = c.space_id
CROSS JOIN {schema}.users u
WHERE c.archived_at IS NULL AND s.archived_at IS NULL
  AND CASE WHEN c.kind = 'dm' THEN EXISTS (
          SELECT 1 FROM {schema}.dm_participants p
          WHERE p.channel_id = c.id AND p.user_id = u.id)
      ELSE u.owner OR EXISTS (
          SELECT 1 FROM {schema}.grants g
          WHERE g.user_id = u.id
            AND ((g.target_kind = 'channel' AND g.target_id = c.id)
              OR (g.target_kind = 'space' AND g.target_id = c.space_id)))
      END;
