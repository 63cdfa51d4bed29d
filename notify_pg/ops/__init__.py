"""Operations of notify_pg: OpenTelemetry metrics, the status query of ``notify db status``
and the audit of deliveries.

- `notify_pg.ops.metrics`: the instruments and the recorder the worker and the app report to;
- `notify_pg.ops.status`: one read of the pipeline's state for operators;
- `notify_pg.ops.deliveries`: which preference record governed a delivery (M6).

It imports `notify_pg.db` and `notify_pg.stores` (the records' repository, for the audit);
status reads every wing's tables by SQL, not by their code.
"""

__all__: list[str] = []
