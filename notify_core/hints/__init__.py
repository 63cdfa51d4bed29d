"""The push path: from a chat event to the hints of each recipient (docs/rules.md, S to B).

Lives here: the effective level (`levels`), quiet hours (`quiet`), the per-recipient decision
(`decide`, with its values in `decision_values`), an event's candidates (`candidates`) and
fan-out (`fan_out`), the badge (`badge`, `pipeline_badge`), delivery results (`delivery`),
the ports the pipeline reads and writes (`ports`), the pipeline itself (`pipeline`) and its
in-memory twin of every port (`memory`).

May import: `notify_core.values` and `notify_core.events`. A chat message's walk stays inside
this wing until its hint is written (`notify_core.replay.lines`).
"""
