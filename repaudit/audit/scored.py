"""generate_until: each filter's scored (filtered) answers of two runs compared doc by doc — the answers the metric
saw, which a filter can change or empty where the raw generations do not."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from repaudit.importers.comparable import TaskOutcome


class ScoredAnswers(BaseModel):
    """generate_until: one filter's scored (filtered) answers on the shared docs of a task, as the metric saw them
    — what changed, and which became empty (the raw generations' empties beside: a filter can empty an answer the
    model did write)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    task: str
    """The task."""
    filter: str
    """The answer filter (``none``, ``strict-match``, ``flexible-extract``)."""
    n_shared: int
    """Shared docs whose scored answer both runs record under this filter."""
    changed: int
    """Of those, docs whose scored answers differ as text."""
    empty_a: int
    """Docs whose scored answer is empty (after stripping whitespace) in A."""
    empty_b: int
    """As ``empty_a``, in B."""
    became_empty: int
    """Docs with a non-empty scored answer in A and an empty one in B."""
    became_nonempty: int
    """Docs with an empty scored answer in A and a non-empty one in B."""
    raw_empty_a: int | None
    """Docs whose raw generation is empty in A; None: raw generations not recorded."""
    raw_empty_b: int | None
    """As ``raw_empty_a``, in B."""


def scored_answers(task: str, ta: TaskOutcome, tb: TaskOutcome, shared: list[int]) -> list[ScoredAnswers]:
    """Each filter's scored answers on the shared docs of a generate_until task (empty where a run records none)."""
    da, db = ta.docs, tb.docs
    if not (da and db and shared):
        return []
    ext_a = {i: da[i].extracted or {} for i in shared}
    ext_b = {i: db[i].extracted or {} for i in shared}
    filters = dict.fromkeys(f for i in shared for f in ext_a[i] if f in ext_b[i])
    out = []
    for flt in filters:
        pairs = [(ext_a[i][flt], ext_b[i][flt], i) for i in shared if flt in ext_a[i] and flt in ext_b[i]]
        ea = {i for x, _, i in pairs if not x.strip()}
        eb = {i for _, y, i in pairs if not y.strip()}
        ids = [i for _, _, i in pairs]
        out.append(ScoredAnswers(
            task=task, filter=flt, n_shared=len(pairs), changed=sum(x != y for x, y, _ in pairs), empty_a=len(ea),
            empty_b=len(eb), became_empty=len(eb - ea), became_nonempty=len(ea - eb),
            raw_empty_a=_empty_generations([da[i].generation for i in ids]),
            raw_empty_b=_empty_generations([db[i].generation for i in ids])))
    return out


def _empty_generations(generations: list[str | None]) -> int | None:
    """How many of ``generations`` are empty (whitespace only); None where one is not recorded."""
    recorded = [g for g in generations if g is not None]
    return sum(not g.strip() for g in recorded) if len(recorded) == len(generations) else None
