"""lm-evaluation-harness (0.3 to 0.4.x): its results and samples files read, mapped to factors, and replayed.

``adapter`` (the harness's :class:`~repaudit.importers.adapter.Adapter`), ``schema`` (typed files), ``results``
(results + samples → a comparable run), ``factors`` (what each task records, in repaudit's factor groups),
``tasks`` (task configurations from its files), ``replay`` (the RunConfig that re-runs a task).
"""
