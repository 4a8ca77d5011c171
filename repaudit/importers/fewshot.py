"""Every doc's few-shot example ids as a run recorded them (``--fewshot-from``), from any file repaudit reads.

The result goes into :attr:`repaudit.run.config.RunConfig.fewshot_by_doc`, so that the run stage never reads
another harness's files itself.
"""

from __future__ import annotations

from pathlib import Path

from repaudit.errors import RepauditError


def fewshot_ids_from(path: Path) -> dict[int, list[int]]:
    """Every doc's few-shot example ids (in order) as a run recorded them: a repaudit run file, or a lighteval
    results file whose details list each doc's examples (their ids are rows of the few-shot split).

    Raises:
        RepauditError: a file that records no per-doc examples, or holds several tasks.
    """
    from repaudit.importers.detect import load_source

    loaded = load_source(Path(path))
    if loaded.adapter.name == "repaudit":  # the record keeps every doc's ids, 0-shot docs included
        return {d.doc_id: list(d.fewshot_ids) for d in loaded.parsed.docs}
    run = loaded.run
    if len(run.tasks) != 1:
        raise RepauditError(f"--fewshot-from '{path}' holds {len(run.tasks)} tasks: give a run of one task")
    (t,) = run.tasks.values()
    recorded = {i: d.fewshot_ids for i, d in (t.docs or {}).items() if d.fewshot_ids is not None}
    if not t.docs or len(recorded) < len(t.docs):
        raise RepauditError(f"--fewshot-from '{path}' records no per-doc few-shot examples")
    return {i: list(ids) for i, ids in recorded.items()}
