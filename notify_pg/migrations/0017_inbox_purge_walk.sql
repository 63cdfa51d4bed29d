-- The purge's own index goes: inbox_purge_entries walks the people instead, one index descent
-- each on inbox_entries_list_idx (user_id, updated_at DESC, id DESC), whose tail per person
-- holds that person's entries past retention. A fan-out writes one row per watcher and each
-- coalescing moves updated_at: each index less is one insertion less per entry written and per
-- entry coalesced; the purge, once a day, costs a walk over the people with entries.
DROP INDEX {schema}.inbox_entries_updated_idx;
