"""Replaying a log offline and checking decision tables: the top floor of the core.

Lives here: the replay of a whole log (`run`: `Replay`, its `Summary`), the output lines of
every pipeline (`lines`), partitions and the partitioned replay (`partitions`,
`partitioned`), the decision tables of every wing (`tables`) and the report's data
(`report`).

May import: every other wing of the core; nothing in the core imports this wing.
"""
