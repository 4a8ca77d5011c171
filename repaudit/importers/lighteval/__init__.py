"""lighteval: its results and details files read, mapped to factors, and replayed.

``adapter`` (the harness's :class:`~repaudit.importers.adapter.Adapter`), ``schema`` (typed files), ``results``
(results + details → a comparable run, its factors), ``replay`` (the RunConfig that re-runs a task).
"""
