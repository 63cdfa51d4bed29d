-- Host categories (N13): a host declares its own categories beside the seven, through its
-- emit path (`notify_pg.inbox.reads.emit` of a `category.declared`) or `notify db load`.
-- One row per key, the declaration as the event carries it (checked by the core's `declare`
-- before it is written); declaring a key again replaces its row from that moment on.
CREATE TABLE {schema}.inbox_categories (
    key         text COLLATE "C" NOT NULL,
    declaration jsonb NOT NULL,
    declared_at timestamptz NOT NULL,
    CONSTRAINT inbox_categories_pkey PRIMARY KEY (key),
    CONSTRAINT inbox_categories_declaration_check CHECK (jsonb_typeof(declaration) = 'object')
);

-- A host category's entry keeps the members of its latest event (its strings' placeholders,
-- N13), as texts by name; NULL for the built-in categories.
ALTER TABLE {schema}.inbox_entries ADD COLUMN members jsonb;
