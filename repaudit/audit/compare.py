"""Two runs -> a Comparison: task sets, differing factors, doc sets, score deltas with paired intervals,
multiplicity-adjusted verdicts, flipped docs and a headline.

Order of work: tasks are paired (:mod:`repaudit.audit.pairing`; what does not pair is listed, never
dropped); per shared task the factors are diffed, the doc sets are decided (:mod:`repaudit.audit.docsets`)
*before* any score is judged, each metric gets a row (:mod:`repaudit.audit.scores`), and the verdicts
come from Holm-adjusted p-values over all rows (task rows and group rows as separate families):

* *not comparable* — different or unknown doc sets, docs whose content differs, units that cannot be
  put on one scale;
* *no verdict* — comparable, but no valid noise estimate (too few docs, a stderr of 0, no stderr);
* *significant* — adjusted p < α; labelled better/worse by the metric's direction;
* *within noise* — it is not.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict

from repaudit.audit.docsets import doc_set, same_docs, shared_doc_ids
from repaudit.audit.factordiff import FactorRow, diff_factors
from repaudit.audit.flips import FlippedDoc
from repaudit.audit.labels import given_twice, run_label, run_labels
from repaudit.audit.mechanisms import DiagnosticRow, Mechanism, explain
from repaudit.audit.pairing import TaskSets, pair_tasks
from repaudit.audit.picks import scoring_of
from repaudit.audit.scored import ScoredAnswers, scored_answers
from repaudit.audit.scores import RowInput, ScoreRow, score_row
from repaudit.audit.stat_settings import StatSettings, for_command
from repaudit.audit.verdicts import judge
from repaudit.errors import RepauditError
from repaudit.importers.comparable import ComparableRun, DocOutcome, TaskOutcome
from repaudit.importers.detect import load_run
from repaudit.importers.metric_kinds import task_base
from repaudit.vocabulary import order

__all__ = ["Comparison", "FactorRow", "FlippedDoc", "ScoreRow", "compare", "diff_factors", "load_run"]

#: the version of compare's JSON report: 2 names every factor field by its vocabulary path and gives each side's
#: value with its provenance (1 had group/field and bare values); 3 names a score row's paired docs ``n_paired``
#: (2 called them ``n_shared``, the name the doc agreement gives the task's shared doc ids: a row that is not paired
#: said 0 beside a task with shared docs)
COMPARE_FORMAT = 3


class DocAgreement(BaseModel):
    """How the shared docs of a task line up. Each ``*_equal`` counts shared docs on which both runs record the
    value and it is equal; None: no shared doc has it recorded by both."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    task: str
    """The task."""
    n_a: int
    """Docs with per-doc results in A."""
    n_b: int
    """Docs with per-doc results in B."""
    n_shared: int
    """Doc ids both runs have."""
    doc_hash_equal: int | None
    """Shared docs with the same content hash (``doc_hash``)."""
    target_equal: int | None
    """Shared docs with the same target."""
    prompt_hash_equal: int | None
    """Shared docs with the same prompt text hash."""
    prediction_equal: int | None
    """Shared docs with the same prediction."""
    fewshot_equal: int | None = None
    """Shared docs with the same few-shot example ids."""
    choices_equal: int | None = None
    """Shared docs with the same scored continuations (``choices_hash``)."""


class TaskSet(BaseModel):
    """Tasks compared, and tasks that only one run has, by their names in the files (groups listed apart)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    shared: list[str]
    """Tasks both runs have (after pairing), in A's order."""
    only_a: list[str]
    """Tasks only A has (groups left out)."""
    only_b: list[str]
    """Tasks only B has (groups left out)."""
    groups_only_a: list[str] = []
    """Groups only A has."""
    groups_only_b: list[str] = []
    """Groups only B has."""


class Move(BaseModel):
    """One of the largest moves named in the headline (significant ones first)."""

    model_config = ConfigDict(use_attribute_docstrings=True)
    task: str
    """The task."""
    metric: str
    """The metric key."""
    delta: float
    """Δ = B − A, in ``unit``."""
    ci_low: float | None
    """Lower bound of Δ's (1 − alpha) interval, in ``unit``; None: no interval."""
    ci_high: float | None
    """Upper bound of Δ's interval, in ``unit``; None: no interval."""
    unit: str
    """``pts`` for proportions and percentages, else the metric's own unit."""
    moved: str | None
    """better, worse, up or down (direction unknown), or ``within noise``."""


class Summary(BaseModel):
    """The headline: task rows by verdict (group rows counted apart), the largest moves, the differing factors."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    rows: int
    """Task score rows (groups left out)."""
    better: int
    """Significant task rows that moved the better way."""
    worse: int
    """Significant task rows that moved the worse way."""
    moved_unknown_direction: int
    """Significant task rows of a metric whose direction is unknown."""
    within_noise: int
    """Task rows within noise."""
    not_comparable: int
    """Task rows that are not comparable."""
    no_verdict: int
    """Task rows with no verdict."""
    group_rows: int
    """Group score rows."""
    group_significant: int
    """Significant group rows."""
    adjust: str
    """The multiplicity adjustment: holm, bh or none."""
    alpha: float
    """The significance level."""
    largest: list[Move]
    """Up to 3 tested task rows (significant or within noise) with the largest |Δ|, significant ones first; a row
    whose Δ is within numerical noise (:func:`numerically_still`) is not a move and is never listed."""
    numerically_still: int = 0
    """Tested task rows whose Δ is within numerical noise: |Δ| at most :data:`NUMERICAL` of the larger score (float
    rounding, a kernel's order of summation), so not a move."""
    differing: list[str]
    """Groups (:data:`repaudit.vocabulary.GROUPS`) with a path that differs, in report order."""
    unknown_fields: int
    """Distinct paths unknown in at least one task."""
    same_fields: int
    """Distinct paths the same in at least one task."""
    na_fields: int = 0
    """Distinct paths that apply to one run only in at least one task (n/a on the other: never a difference)."""


class Comparison(BaseModel):
    """The complete result of ``repaudit compare`` (also its ``--format json``). Scores and intervals
    are in each row's ``unit`` (``pts`` for proportions and percentages)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    format_version: int = COMPARE_FORMAT
    """The version of this report's layout (2: factor fields by vocabulary path, each value with its provenance)."""
    a: dict[str, str]
    """Run A's label: ``path``, ``name`` (as reports show it), ``file``, ``source`` (the harness and version) and
    ``model``."""
    b: dict[str, str]
    """Run B's label, as ``a``."""
    tie_eps: float
    """A run's margin by the flipped metric (nats: the smallest change of one choice's log-likelihood that changes
    the metric's answer; acc: the gap between its top two choices) at or below which a flip counts as churn."""
    alpha: float = 0.05
    """Significance level; intervals are (1 − alpha)."""
    adjust: str = "holm"
    """Multiplicity adjustment of the p-values: holm, bh or none."""
    stat_settings: StatSettings | None = None
    """How the intervals and tests were made (``tie_eps``, ``alpha`` and ``adjust`` above are its fields, kept for
    readers of format 3); None: written by a repaudit that did not record it."""
    summary: Summary | None = None
    """The headline; None only before :func:`summarise` fills it."""
    tasks: TaskSet | None = None
    """The task sets; None: not recorded (compare always fills it)."""
    factors: list[FactorRow]
    """Every factor field of every shared task."""
    docs: list[DocAgreement]
    """Doc agreement per shared task where both runs have per-doc results."""
    scored: list[ScoredAnswers] = []
    """generate_until tasks with per-doc results in both runs: each filter's scored answers compared doc by doc."""
    scores: list[ScoreRow]
    """One row per shared task and metric both runs report."""
    flips: list[FlippedDoc]
    """Every doc whose 0/1 metric flipped between A and B."""
    notes: list[str]
    """Notes from reading and pairing the runs (renames applied, tasks without a shared metric)."""
    diagnostics: list[DiagnosticRow] = []
    """Every run diagnostic, side by side per task."""
    mechanisms: list[Mechanism] = []
    """Diagnostics named as likely mechanisms of a gap, with the score on the docs they leave unaffected."""
    warnings: list[str] = []
    """Warnings that make a run's scores doubtful (per-doc rows off their own aggregate; few-shot leaks)."""

    def differing(self) -> list[FactorRow]:
        return [f for f in self.factors if f.status == "differs"]


def _doc_agreement(task: str, da: dict[int, DocOutcome], db: dict[int, DocOutcome], shared: list[int]
                   ) -> DocAgreement:
    def count(attr: str) -> int | None:
        pairs = [(getattr(da[i], attr), getattr(db[i], attr)) for i in shared]
        pairs = [(x, y) for x, y in pairs if x is not None and y is not None]
        return sum(x == y for x, y in pairs) if pairs else None

    return DocAgreement(task=task, n_a=len(da), n_b=len(db), n_shared=len(shared),
                        doc_hash_equal=count("doc_hash"), target_equal=count("target"),
                        prompt_hash_equal=count("prompt_hash"), prediction_equal=count("prediction"),
                        fewshot_equal=count("fewshot_ids"), choices_equal=count("choices_hash"))


def _not_comparable_reason(ag: DocAgreement) -> str | None:
    if ag.n_shared == 0:
        return f"no doc ids in common (A {ag.n_a} docs, B {ag.n_b} docs)"
    if ag.doc_hash_equal is not None and ag.doc_hash_equal < ag.n_shared:
        return f"doc content (doc_hash) differs on {ag.n_shared - ag.doc_hash_equal} of {ag.n_shared} shared docs"
    # the scored continuations stand in for the content only where no doc_hash is recorded: with equal
    # doc hashes, other continuations are the prompt format's doing (" A" vs the answer text), a factor
    if ag.doc_hash_equal is None and ag.choices_equal is not None and ag.choices_equal < ag.n_shared:
        return (f"the scored continuations (choices) differ on {ag.n_shared - ag.choices_equal} of {ag.n_shared} "
                "shared docs: the same doc id names different docs")
    if ag.target_equal is not None and ag.target_equal < ag.n_shared:
        return f"targets differ on {ag.n_shared - ag.target_equal} of {ag.n_shared} shared docs"
    return None


def compare(a: ComparableRun, b: ComparableRun, stat: StatSettings | None = None, *,
            task_map: dict[str, str] | None = None, names: tuple[str | None, str | None] = (None, None),
            **changes: Any) -> Comparison:
    """Compare two runs on every task they share (tasks paired first by :func:`pair_tasks`).

    Args:
        stat: how intervals and tests are made (compare's defaults where None: 10,000 resamples, Holm, α 0.05);
            ``changes`` override its fields (``n_boot=200``), as :func:`~repaudit.audit.stat_settings.for_command`.
        task_map: ``--pair-tasks`` patterns, ``{B pattern: A pattern}``.
        names: the runs' labels in every report (``--name-a``/``--name-b``); ``None``: :func:`run_labels`.

    Raises:
        RepauditError: the runs have no task in common, or a pattern that pairs nothing.
        UsageError: a statistics setting out of range.
    """
    stat = for_command("compare", stat, **changes)
    label_a, label_b = run_labels(a, b, names)
    sets = pair_tasks(a, b, task_map)
    a, b = sets.a, sets.b
    shared_tasks = sets.shared()
    if not shared_tasks:
        raise RepauditError(f"'{a.path}' ({_few(sets.only_a)}) and '{b.path}' ({_few(sets.only_b)}) have no task in "
                            "common (the same benchmark under two names: --pair-tasks B_TASK=A_TASK, '*' allowed)")
    factors, scored = [], []
    agreements, scores, flips = list[DocAgreement](), list[ScoreRow](), list[FlippedDoc]()
    diagnostics, mechanisms, warnings = [], [], [*a.warnings, *b.warnings]  # a reader's own doubts first
    if given_twice([a.path, b.path]) is not None:  # allowed (a check of compare itself), never silent
        warnings.insert(0, f"A and B are the same file ('{a.path}'): every Δ is 0 and every doc agrees by "
                           "construction; this compares nothing")
    notes = list(a.notes) + list(b.notes) + sets.notes
    one_harness = a.source.split(" ")[0] == b.source.split(" ")[0]
    for task in shared_tasks:
        factors += diff_factors(task, a.factors[task], b.factors[task])
        ta, tb = a.tasks[task], b.tasks[task]
        same_task = one_harness and task_base(ta.source_name or task) == task_base(tb.source_name or task)
        shared, reason, basis = _doc_sets(task, ta, tb, a.factors[task], b.factors[task], agreements)
        scored += scored_answers(task, ta, tb, shared or [])
        common = [m for m in ta.reported if m in tb.reported]
        if not common and (ta.reported or tb.reported):
            notes.append(_no_shared_metric(task, ta, tb, a.source, b.source))
        # each run's metrics pick their own answers (acc_norm by its normalisation), for the flipped docs' columns
        scoring = scoring_of(a.source, a.factors[task]), scoring_of(b.source, b.factors[task])
        for metric in common:
            _score_metric(RowInput(task, metric, ta, tb, shared, reason, same_task, *scoring), basis, stat,
                          scores, flips)
        rows, mech, warn = explain(task, ta, tb, shared if shared and reason is None else None, common,
                                   stat.model_copy(update={"n_boot": min(stat.bootstrap()[0], 2000)}))
        diagnostics += rows
        mechanisms += mech
        warnings += warn
    judge(scores, stat)
    _scale_mechanisms(mechanisms, scores)
    taskset = _task_set(sets, shared_tasks)
    cmp = Comparison(a=run_label(a, label_a), b=run_label(b, label_b), tie_eps=stat.tie_eps, alpha=stat.alpha,
                     adjust=stat.adjust, stat_settings=stat, tasks=taskset, factors=factors, docs=agreements,
                     scored=scored, scores=scores, flips=flips, notes=notes, diagnostics=diagnostics,
                     mechanisms=mechanisms, warnings=warnings)
    cmp.summary = summarise(cmp)
    return cmp


def _score_metric(inp: RowInput, basis: str, stat: StatSettings, scores: list, flips: list) -> None:
    """One metric's score row into ``scores`` and its flipped docs into ``flips`` (every 0/1 metric lists its own:
    acc_norm may be the row that moved, not acc)."""
    out = score_row(inp, stat)
    row = out.row
    if basis and row.method.startswith("unpaired"):
        row.note = f"{row.note}; {basis}" if row.note else basis
    scores.append(row)
    flips += out.flips


def _few(names: list[str], k: int = 5) -> str:
    return ", ".join(names[:k]) + (f", … ({len(names)} tasks)" if len(names) > k else "") if names else "no task"


def _doc_sets(task, ta, tb, fa, fb, agreements) -> tuple[list[int] | None, str | None, str]:
    """Shared doc ids (``None`` when a side has no per-doc results), why the doc sets are not comparable
    (``None`` if they are), and on what evidence they are judged the same."""
    if ta.docs and tb.docs:
        shared = shared_doc_ids(ta.docs, tb.docs)
        ag = _doc_agreement(task, ta.docs, tb.docs, shared)
        agreements.append(ag)
        return shared, _not_comparable_reason(ag), ""
    if ta.is_group or tb.is_group:
        return None, None, "a group: its docs are its subtasks'"
    ok, why = same_docs(doc_set(ta, fa), doc_set(tb, fb))
    return None, None if ok else why, why if ok else ""


def _no_shared_metric(task: str, ta: TaskOutcome, tb: TaskOutcome, src_a: str, src_b: str) -> str:
    line = (f"{task}: no metric is reported by both runs (A: {', '.join(ta.reported) or 'none'}; "
            f"B: {', '.join(tb.reported) or 'none'}), so this task has no score row")
    va, vb = (s.split(" ")[1][:3] if " " in s else s for s in (src_a, src_b))
    if src_a.startswith("lm-eval") and src_b.startswith("lm-eval") and va != vb:
        line += f" (lm-eval {va} and {vb} name metrics differently: 0.3 'acc' is 0.4 'acc,none')"
    return line


def _task_set(sets: TaskSets, shared: list[str]) -> TaskSet:
    def groups(run: ComparableRun, names: list[str]) -> set[str]:
        by_name = {t.source_name or k: t for k, t in run.tasks.items()}
        return {n for n in names if n in by_name and by_name[n].is_group}

    ga, gb = groups(sets.a, sets.only_a), groups(sets.b, sets.only_b)
    return TaskSet(shared=shared, only_a=[t for t in sets.only_a if t not in ga],
                   only_b=[t for t in sets.only_b if t not in gb], groups_only_a=sorted(ga), groups_only_b=sorted(gb))


def _scale_mechanisms(mechanisms: list[Mechanism], scores: list[ScoreRow]) -> None:
    """Mechanism scores in the display unit of their metric's row (points for proportions). Where the docs affected
    in neither run are every doc the row is paired on, the mechanism's Δ is the row's, and it takes the row's interval
    too: one Δ on one set of docs is shown with one interval, never two from two methods."""
    rows = {(r.task, r.metric): r for r in scores}
    for m in mechanisms:
        row = rows.get((m.task, m.metric))
        unit, scale = (row.unit, 100.0 if row.kind == "proportion" else 1.0) if row is not None else ("pts", 100.0)
        m.unit = unit
        for f in ("a_unaffected", "b_unaffected", "delta_unaffected", "ci_low", "ci_high"):
            if getattr(m, f) is not None:
                setattr(m, f, getattr(m, f) * scale)
        if (row is not None and m.delta_unaffected is not None and row.n_paired == m.n_unaffected
                and row.method.startswith("paired") and row.ci_low is not None and row.ci_high is not None):
            m.ci_low, m.ci_high = row.ci_low, row.ci_high
            m.interval_method, m.same_docs_as_row = row.method, True


#: a Δ at most this share of the larger score is numerical noise, not a move (a perplexity of 11.5 that moves by
#: 0.00002: float rounding, another order of summation)
NUMERICAL = 1e-4


def numerically_still(r: ScoreRow) -> bool:
    """``r``'s Δ is within numerical noise: |Δ| ≤ :data:`NUMERICAL` × max(|A|, |B|) (so a Δ of 0 always) — unless
    docs flipped one way more than the other on a 0/1 metric: a count of docs is never rounding."""
    if r.right_to_wrong is not None and r.right_to_wrong != r.wrong_to_right:
        return False
    scale = max((abs(v) for v in (r.a, r.b) if v is not None and math.isfinite(v)), default=0.0)
    return r.delta is not None and abs(r.delta) <= NUMERICAL * scale


def summarise(c: Comparison, top: int = 3) -> Summary:
    """The headline numbers of a comparison (task rows; group rows counted apart)."""
    rows = [r for r in c.scores if not r.is_group]
    groups = [r for r in c.scores if r.is_group]
    sig = [r for r in rows if r.verdict == "significant"]
    tested = [r for r in rows if r.verdict in ("significant", "within noise")]
    moves = [r for r in tested if not numerically_still(r)]
    largest = sorted(moves, key=lambda r: (r.verdict != "significant", -abs(r.delta)))[:top]
    differing = list(dict.fromkeys(f.group for f in sorted(c.factors, key=lambda f: order(f.path))
                                   if f.status == "differs"))
    return Summary(rows=len(rows), better=sum(r.moved == "better" for r in sig),
                   worse=sum(r.moved == "worse" for r in sig),
                   moved_unknown_direction=sum(r.moved in ("up", "down") for r in sig),
                   within_noise=sum(r.verdict == "within noise" for r in rows),
                   not_comparable=sum(r.verdict == "not comparable" for r in rows),
                   no_verdict=sum(r.verdict == "no verdict" for r in rows), group_rows=len(groups),
                   group_significant=sum(r.verdict == "significant" for r in groups), adjust=c.adjust, alpha=c.alpha,
                   largest=[Move(task=r.task, metric=r.metric, delta=r.delta, ci_low=r.ci_low, ci_high=r.ci_high,
                                 unit=r.unit, moved=r.moved or "within noise") for r in largest],
                   numerically_still=len(tested) - len(moves),
                   differing=differing,
                   unknown_fields=len({f.path for f in c.factors if f.status == "unknown"}),
                   same_fields=len({f.path for f in c.factors if f.status == "same"}),
                   na_fields=len({f.path for f in c.factors if f.status == "n/a"
                                  and (f.a.source == "not_applicable") != (f.b.source == "not_applicable")}))
