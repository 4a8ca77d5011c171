"""Two runs -> a Comparison: differing factors, score deltas with paired intervals, flipped docs, verdicts.

Verdict per task and metric:

* *not comparable* — no shared docs, or shared docs whose content (doc_hash), choices or target differs;
* *significant* — the 95 % interval of Δ excludes 0;
* *within noise* — it does not.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Literal

import numpy as np
from deepdiff import DeepDiff
from pydantic import BaseModel, ConfigDict

from repaudit.audit.mechanisms import DiagnosticRow, Mechanism, explain
from repaudit.audit.stats import mcnemar_exact, paired_bootstrap, top2_margin, unpaired_interval
from repaudit.boundary import finite
from repaudit.errors import RepauditError
from repaudit.importers.comparable import ComparableRun, TaskOutcome
from repaudit.importers.detect import load_run
from repaudit.importers.factors import UNKNOWN, FactorGroup

__all__ = ["Comparison", "compare", "diff_factors", "load_run"]

Status = Literal["same", "differs", "unknown"]
Verdict = Literal["within noise", "significant", "not comparable"]


class FactorRow(BaseModel):
    """One factor field: A's and B's value and whether they are the same, differ, or are unknown."""

    model_config = ConfigDict(extra="forbid")
    task: str
    group: str
    field: str
    a: Any
    b: Any
    status: Status


class ScoreRow(BaseModel):
    """One task and metric. ``method`` is ``paired_bootstrap``, ``paired_cluster_bootstrap`` or
    ``unpaired_stderr``; McNemar and flip counts are set for binary per-doc metrics only."""

    model_config = ConfigDict(extra="forbid")
    task: str
    metric: str
    a: float
    b: float
    delta: float
    se: float | None
    ci_low: float | None
    ci_high: float | None
    method: str
    n_shared: int
    n_clusters: int | None = None
    mcnemar_p: float | None = None
    right_to_wrong: int | None = None
    wrong_to_right: int | None = None
    near_tie_flips: int | None = None
    verdict: Verdict
    note: str = ""


class FlippedDoc(BaseModel):
    """A doc whose correctness on ``metric`` differs between A and B."""

    model_config = ConfigDict(extra="forbid")
    task: str
    metric: str
    doc_id: int
    direction: Literal["right_to_wrong", "wrong_to_right"]
    target: str | None
    a_prediction: Any
    b_prediction: Any
    a_margin: float | None
    b_margin: float | None
    near_tie: bool


class DocAgreement(BaseModel):
    """How the shared docs of a task line up: identical content, targets, prompt texts, predictions and
    (where both runs record them) few-shot example ids."""

    model_config = ConfigDict(extra="forbid")
    task: str
    n_a: int
    n_b: int
    n_shared: int
    doc_hash_equal: int | None
    target_equal: int | None
    prompt_hash_equal: int | None
    prediction_equal: int | None
    fewshot_equal: int | None = None
    choices_equal: int | None = None


class Comparison(BaseModel):
    """The complete result of ``repaudit compare`` (also its ``--format json``)."""

    model_config = ConfigDict(extra="forbid")
    a: dict[str, str]
    b: dict[str, str]
    tie_eps: float
    factors: list[FactorRow]
    docs: list[DocAgreement]
    scores: list[ScoreRow]
    flips: list[FlippedDoc]
    notes: list[str]
    diagnostics: list[DiagnosticRow] = []
    mechanisms: list[Mechanism] = []
    warnings: list[str] = []

    def differing(self) -> list[FactorRow]:
        return [f for f in self.factors if f.status == "differs"]


def _same(va: Any, vb: Any) -> bool:
    """Structural equality; numbers compare as numbers (1 == 1.0) to 12 significant digits."""
    try:
        return not DeepDiff(va, vb, ignore_numeric_type_changes=True, significant_digits=12)
    except (OverflowError, ValueError, TypeError, RecursionError):
        return va == vb


def diff_factors(task: str, fa: dict, fb: dict) -> list[FactorRow]:
    """Factor rows for one task, in :class:`FactorGroup` order.

    Each field is compared structurally (nested values such as ``batch_sizes_used`` or stop
    lists; 1 and 1.0 are equal). A field one run does not record, or records as :data:`UNKNOWN`,
    is *unknown*.
    """
    rows = []
    for group in FactorGroup:
        ga, gb = fa.get(group.value, {}), fb.get(group.value, {})
        for name in list(dict.fromkeys([*ga, *gb])):
            va, vb = ga.get(name, UNKNOWN), gb.get(name, UNKNOWN)
            if va == UNKNOWN or vb == UNKNOWN:
                status: Status = "unknown"
            else:
                status = "same" if _same(va, vb) else "differs"
            rows.append(FactorRow(task=task, group=group.value, field=name, a=va, b=vb, status=status))
    return rows


def _doc_agreement(task: str, ta: TaskOutcome, tb: TaskOutcome, shared: list[int]) -> DocAgreement:
    def count(attr: str) -> int | None:
        pairs = [(getattr(ta.docs[i], attr), getattr(tb.docs[i], attr)) for i in shared]
        pairs = [(x, y) for x, y in pairs if x is not None and y is not None]
        return sum(x == y for x, y in pairs) if pairs else None

    return DocAgreement(task=task, n_a=len(ta.docs), n_b=len(tb.docs), n_shared=len(shared),
                        doc_hash_equal=count("doc_hash"), target_equal=count("target"),
                        prompt_hash_equal=count("prompt_hash"), prediction_equal=count("prediction"),
                        fewshot_equal=count("fewshot_ids"), choices_equal=count("choices_hash"))


def _not_comparable_reason(ag: DocAgreement) -> str | None:
    if ag.n_shared == 0:
        return "no doc ids in common"
    if ag.doc_hash_equal is not None and ag.doc_hash_equal < ag.n_shared:
        return f"doc content (doc_hash) differs on {ag.n_shared - ag.doc_hash_equal} of {ag.n_shared} shared docs"
    if ag.choices_equal is not None and ag.choices_equal < ag.n_shared:
        return (f"the scored continuations (choices) differ on {ag.n_shared - ag.choices_equal} of {ag.n_shared} "
                "shared docs: the same doc id names different docs")
    if ag.target_equal is not None and ag.target_equal < ag.n_shared:
        return f"targets differ on {ag.n_shared - ag.target_equal} of {ag.n_shared} shared docs"
    return None


def _row(task: str, metric: str, va: float, vb: float, method: str, verdict: Verdict, note: str, n: int = 0,
         **kw) -> ScoreRow:
    return ScoreRow(task=task, metric=metric, a=va, b=vb, delta=vb - va, method=method, n_shared=n,
                    verdict=verdict, note=note, **{"se": None, "ci_low": None, "ci_high": None, **kw})


def pair_tasks(a: ComparableRun, b: ComparableRun, task_map: dict[str, str] | None = None
               ) -> tuple[ComparableRun, str | None]:
    """``b`` with tasks renamed to ``a``'s names: by ``task_map`` (B's name → A's name), or, when the
    two runs share no task name and each holds one task, by content.

    Harnesses name one benchmark differently (lm-eval ``arc_easy``, a lighteval custom task
    ``arc_easy_local``). Without ``task_map`` a rename happens only if both runs have per-doc
    outcomes and every shared doc id carries the same content (``doc_hash`` or the scored
    continuations, whichever both record): two tasks with the same docs are the same benchmark.

    Raises:
        RepauditError: a ``task_map`` name that is not a task of its run.
    """
    if task_map:
        for tb, ta in task_map.items():
            if tb not in b.tasks or ta not in a.tasks:
                raise RepauditError(f"--pair-tasks {tb}={ta}: '{tb}' must be a task of B ({', '.join(b.tasks)}) "
                                    f"and '{ta}' one of A ({', '.join(a.tasks)})")
        pairs = dict(task_map)
        why = "as --pair-tasks says"
    else:
        if set(a.tasks) & set(b.tasks) or len(a.tasks) != 1 or len(b.tasks) != 1:
            return b, None
        (ta,), (tb,) = a.tasks, b.tasks
        if not _same_docs(a.tasks[ta], b.tasks[tb]):
            return b, None
        pairs = {tb: ta}
        why = "their shared docs have the same content"
    tasks = {pairs.get(k, k): dataclasses.replace(t, task=pairs.get(k, k)) for k, t in b.tasks.items()}
    renamed = ComparableRun(path=b.path, source=b.source, factors={pairs.get(k, k): v for k, v in b.factors.items()},
                            notes=list(b.notes), tasks=tasks)
    note = "; ".join(f"B's task '{tb}' is compared as A's '{ta}'" for tb, ta in pairs.items())
    return renamed, f"{note} ({why})"


def _same_docs(ta: TaskOutcome, tb: TaskOutcome) -> bool:
    if not ta.docs or not tb.docs:
        return False
    shared = set(ta.docs) & set(tb.docs)
    for attr in ("doc_hash", "choices_hash"):
        pairs = [(getattr(ta.docs[i], attr), getattr(tb.docs[i], attr)) for i in shared]
        if shared and all(x is not None and y is not None for x, y in pairs):
            return all(x == y for x, y in pairs)
    return False


def compare(a: ComparableRun, b: ComparableRun, tie_eps: float = 0.01, n_boot: int = 10_000,
            alpha: float = 0.05, task_map: dict[str, str] | None = None) -> Comparison:
    """Compare two runs on every task they share (B's tasks renamed first by :func:`pair_tasks`).

    Raises:
        RepauditError: the runs have no task in common, a bad ``task_map``, or ``n_boot``/``tie_eps``/``alpha``
            out of range.
    """
    if not 100 <= n_boot <= 1_000_000:
        raise RepauditError(f"--n-boot must be between 100 and 1000000, got {n_boot}")
    if not (math.isfinite(tie_eps) and tie_eps >= 0):
        raise RepauditError(f"--tie-eps must be a non-negative number of nats, got {tie_eps}")
    if not 0 < alpha < 1:
        raise RepauditError(f"alpha must be in (0, 1), got {alpha}")
    b, paired_note = pair_tasks(a, b, task_map)
    shared_tasks = [t for t in a.tasks if t in b.tasks]
    if not shared_tasks:
        raise RepauditError(f"'{a.path}' ({', '.join(list(a.tasks)[:5])}) and '{b.path}' "
                            f"({', '.join(list(b.tasks)[:5])}) have no task in common (the same benchmark under "
                            "two names: --pair-tasks B_TASK=A_TASK)")
    factors, agreements, scores, flips = [], [], [], []
    diagnostics, mechanisms, warnings = [], [], []
    notes = list(a.notes) + list(b.notes) + ([paired_note] if paired_note else [])
    for task in shared_tasks:
        factors += diff_factors(task, a.factors[task], b.factors[task])
        ta, tb = a.tasks[task], b.tasks[task]
        paired = ta.docs is not None and tb.docs is not None
        reason, shared = None, []
        if paired:
            shared = sorted(set(ta.docs) & set(tb.docs))
            ag = _doc_agreement(task, ta, tb, shared)
            agreements.append(ag)
            reason = _not_comparable_reason(ag)
        else:
            missing = [r.path for r, t in ((a, ta), (b, tb)) if t.docs is None]
            notes.append(f"{task}: no per-doc samples for {', '.join(missing)}; scores are compared unpaired from "
                         "the reported stderrs, which ignores that both runs saw the same docs and so gives a "
                         "wider interval (weaker test) than the paired one")
        common = [m for m in ta.reported if m in tb.reported]
        if not common:
            notes.append(f"{task}: no metric is reported by both runs (A: {', '.join(ta.reported) or 'none'}; "
                         f"B: {', '.join(tb.reported) or 'none'}), so their scores cannot be compared — different "
                         "harness versions name metrics and filters differently (0.3 'acc' vs 0.4 'acc,none'"
                         "/'exact_match,strict-match')")
        for metric in common:
            scores.append(_score_row(task, metric, ta, tb, shared if paired else None, reason, tie_eps, n_boot,
                                     alpha, flips if metric == next(iter(ta.reported)) else []))
        rows, mech, warn = explain(task, ta, tb, shared if paired and reason is None else None, common,
                                   n_boot=min(n_boot, 2000), alpha=alpha)
        diagnostics += rows
        mechanisms += mech
        warnings += warn
    return Comparison(a={"path": a.path, "source": a.source}, b={"path": b.path, "source": b.source},
                      tie_eps=tie_eps, factors=factors, docs=agreements, scores=scores, flips=flips, notes=notes,
                      diagnostics=diagnostics, mechanisms=mechanisms, warnings=warnings)


def _score_row(task: str, metric: str, ta: TaskOutcome, tb: TaskOutcome, shared: list[int] | None,
               reason: str | None, tie_eps: float, n_boot: int, alpha: float, flips: list) -> ScoreRow:
    """One score row. Docs are listed (``flips``) for the task's primary metric only: its prediction is
    the argmax that per-doc records carry; other metrics get flip counts."""
    (va, sa), (vb, sb) = ta.reported[metric], tb.reported[metric]
    n = len(shared or [])
    if reason is not None:
        return _row(task, metric, va, vb, "none", "not comparable", reason, n)
    if not (finite(va) and finite(vb)):
        return _row(task, metric, va, vb, "none", "not comparable",
                    f"a reported value is not finite (A {va}, B {vb})", n)
    has_docs = bool(shared) and all(metric in ta.docs[i].metrics and metric in tb.docs[i].metrics for i in shared)
    if has_docs:
        bad = [i for i in shared if not (finite(ta.docs[i].metrics[metric]) and finite(tb.docs[i].metrics[metric]))]
        if bad:
            return _row(task, metric, va, vb, "none", "not comparable",
                        f"{len(bad)} docs have a non-finite per-doc {metric} (e.g. doc {bad[0]})", n)
        return _paired_row(task, metric, ta, tb, shared, tie_eps, n_boot, alpha, flips)
    if finite(sa) and finite(sb):
        se, lo, hi = unpaired_interval(va, sa, vb, sb, alpha)
        return _row(task, metric, va, vb, "unpaired_stderr", "significant" if lo > 0 or hi < 0 else "within noise",
                    "unpaired (weaker): no per-doc values for this metric", se=se, ci_low=lo, ci_high=hi)
    return _row(task, metric, va, vb, "none", "not comparable",
                "neither per-doc values nor finite stderrs for this metric")


def _paired_row(task: str, metric: str, ta: TaskOutcome, tb: TaskOutcome, shared: list[int], tie_eps: float,
                n_boot: int, alpha: float, flips: list[FlippedDoc]) -> ScoreRow:
    xa = np.array([ta.docs[i].metrics[metric] for i in shared], dtype=np.float64)
    xb = np.array([tb.docs[i].metrics[metric] for i in shared], dtype=np.float64)
    cl = [ta.docs[i].cluster or tb.docs[i].cluster for i in shared]
    # clusters only when every doc has one: a partial labelling would resample unlike units together
    clusters = np.array(cl) if all(c is not None for c in cl) else None
    res = paired_bootstrap(xa, xb, clusters, n_boot=n_boot, alpha=alpha)
    row = ScoreRow(task=task, metric=metric, a=float(xa.mean()), b=float(xb.mean()), delta=res.delta, se=res.se,
                   ci_low=res.ci_low, ci_high=res.ci_high,
                   method="paired_cluster_bootstrap" if clusters is not None else "paired_bootstrap",
                   n_shared=len(shared), n_clusters=res.n_clusters,
                   verdict="significant" if res.ci_low > 0 or res.ci_high < 0 else "within noise",
                   note="" if clusters is not None or not any(cl) else "only some docs carry a cluster: not clustered")
    if set(np.unique(np.concatenate([xa, xb]))) <= {0.0, 1.0}:
        p, r2w, w2r = mcnemar_exact(xa, xb)
        near = 0
        for i, va, vb in zip(shared, xa, xb):
            if va == vb:
                continue
            da, db = ta.docs[i], tb.docs[i]
            ma, mb = top2_margin(da.loglikelihoods), top2_margin(db.loglikelihoods)
            tie = any(m is not None and m <= tie_eps for m in (ma, mb))
            near += tie
            flips.append(FlippedDoc(task=task, metric=metric, doc_id=i,
                                    direction="right_to_wrong" if va > vb else "wrong_to_right",
                                    target=da.target if da.target is not None else db.target,
                                    a_prediction=da.prediction, b_prediction=db.prediction,
                                    a_margin=ma, b_margin=mb, near_tie=tie))
        row.mcnemar_p, row.right_to_wrong, row.wrong_to_right, row.near_tie_flips = p, r2w, w2r, near
    return row
