-- U3 as amended (issue 38): a forgotten id is refused only until the host creates it again.
-- generation: how often the id was forgotten (a person created again after it signs tokens
-- with "g" = generation, U1); forgotten: true from forget_person until the host creates the
-- id again (person_created): meanwhile the person gets no entry and no mail (inactive, N7,
-- E4) and every token of theirs is invalid; afterwards only a token of the current generation
-- is valid. Rows of 0019 were forgotten once and not created since.
ALTER TABLE {schema}.forgotten_people
    ADD COLUMN generation integer NOT NULL DEFAULT 1,
    ADD COLUMN forgotten boolean NOT NULL DEFAULT true,
    ADD CONSTRAINT forgotten_people_generation_check CHECK (generation >= 1);
