"""Operations of notify_pg: OpenTelemetry metrics and the status query of ``notify db status``.

- `notify_pg.ops.metrics`: the instruments and the recorder the worker and the app report to;
- `notify_pg.ops.status`: one read of the pipeline's state for operators.

It imports `notify_pg.db` only (status reads every wing's tables by SQL, not by their code).
"""

__all__: list[str] = []
