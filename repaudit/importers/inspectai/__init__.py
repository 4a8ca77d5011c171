"""inspect_ai: its ``.eval`` and ``.json`` logs read, mapped to factors, and replayed.

``adapter`` (the harness's :class:`~repaudit.importers.adapter.Adapter`), ``schema`` (typed logs), ``log`` (a log →
a comparable run), ``factors`` (its settings in repaudit's factor groups), ``replay`` (a multiple-choice run rebuilt
as a task and RunConfig).
"""
