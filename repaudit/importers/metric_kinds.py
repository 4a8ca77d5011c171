"""What a metric's number means: its kind, unit, direction (is higher better?) and how per-doc values
aggregate into the reported score.

Rule (stated in the README): only **proportions** (values in [0, 1] such as acc, exact_match) are shown
in points, ×100. A metric that is already a percentage (BLEU, chrF, ROUGE in truthfulqa_gen, a Japanese
fork's exact_match of 58.40) is shown as reported, also in points. Everything else — perplexity, bits
per byte, errors such as MAE, correlations such as MCC, unknown metrics — is shown in its own unit,
never multiplied. Δ = B − A in the display unit; it is labelled *better* or *worse* by the metric's
direction, or left unlabelled when the direction is unknown.

Where each fact comes from, in order:

1. **direction**: the file's own flag for that task and metric (lm-eval 0.4's ``higher_is_better`` block,
   lighteval's, Every Eval Ever's ``lower_is_better``), else the table below, else *unknown*;
2. **kind**: the table below by name (filter suffix dropped: ``exact_match,strict-match`` →
   ``exact_match``), then by suffix (``*_acc`` proportion, ``*_diff`` signed points, ``*_max`` of
   BLEU/ROUGE percentages); a name in neither is a *score* in the file's own unit;
   **scale** of a proportion-named metric (0–1 or 0–100) is a property of the task and metric, decided by
   :func:`reported_scale` from the run's evidence — never by guessing from one value below 1; a unit and
   range the file **declares** (Every Eval Ever's ``metric_unit``, ``min_score``, ``max_score``) settle the scale,
   and give a metric the table does not know its unit and range (:func:`declared_kind`);
3. **aggregation**: the per-doc values of lm-eval's samples are means for most metrics, but
   ``perplexity`` aggregates per-doc log-likelihoods as ``exp(-mean)``, ``word_perplexity`` /
   ``byte_perplexity`` per-doc ``[log-likelihood, words|bytes]`` pairs as ``exp(-Σll/Σn)``, and
   ``bits_per_byte`` as ``-Σll/Σbytes/ln 2`` (lm-eval ``api/metrics.py``: ``perplexity``,
   ``weighted_perplexity``, ``bits_per_byte``). Corpus-level metrics (BLEU, chrF, TER, F1 of some
   tasks) have no per-doc decomposition at all.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Literal

Kind = Literal["proportion", "percentage", "unbounded", "error", "correlation", "score"]
Direction = Literal["higher", "lower", "unknown"]
Aggregation = Literal["mean", "perplexity", "weighted_perplexity", "bits_per_byte", "corpus"]


@dataclass(frozen=True)
class MetricKind:
    """Semantics of one metric as one run reports it.

    Attributes:
        kind: proportion (in [0, 1]), percentage (0–100), unbounded (perplexity, bits/byte), error
            (MAE, TER, Brier: lower is better), correlation (in [−1, 1]) or score (unknown: as reported).
        unit: the unit of one reported number (``proportion``, ``%``, ``perplexity``, ``bits/byte``, …).
        direction: ``higher`` or ``lower`` is better, or ``unknown``.
        aggregation: how per-doc values make the reported score (see the module docstring).
        low, high: the range a reported value can take (``None``: unbounded on that side).
        source: where the direction came from (``lm-eval higher_is_better``, ``repaudit table``, ``unknown``).
    """

    kind: Kind
    unit: str
    direction: Direction
    aggregation: Aggregation = "mean"
    low: float | None = None
    high: float | None = None
    source: str = "repaudit table"
    #: proportion-named metrics: what says the value is 0–1 or 0–100 (:func:`reported_scale`)
    scale_basis: str = ""
    #: ``False`` when the 0–1 scale is only assumed from the name (a value ≤ 1 and nothing else in the run)
    scale_certain: bool = True
    #: what the file declares of the metric's unit and range (``metric_config: unit proportion, range 0–1``);
    #: empty where it declares nothing
    declared: str = ""

    @property
    def scale(self) -> float:
        """Factor from the reported unit to the display unit: 100 for a proportion (→ points), else 1."""
        return 100.0 if self.kind == "proportion" else 1.0

    @property
    def display_unit(self) -> str:
        """``pts`` for proportions and percentages, the metric's own unit otherwise."""
        return "pts" if self.kind in ("proportion", "percentage") else self.unit


_P = ("proportion", "proportion", "higher", "mean", 0.0, 1.0)
_PCT = ("percentage", "%", "higher", "corpus", 0.0, 100.0)
#: name (filter dropped) -> (kind, unit, direction, aggregation, low, high)
TABLE: dict[str, tuple] = {
    **{m: _P for m in ("acc", "acc_norm", "acc_mutual_info", "acc_bytes", "acc_all", "exact_match", "em", "qem",
                       "pem", "pqem", "quasi_exact_match", "prefix_exact_match", "f1", "mc1", "mc2", "mc3",
                       # HELM: quasi = normalised; prefix = the answer starts the generation
                       "quasi_prefix_exact_match", "contains", "pass@1", "pass@10", "pass_at_1",
                       "prompt_level_strict_acc", "prompt_level_loose_acc", "maj@8", "map", "ndcg", "mrr",
                       # inspect_ai's accuracy(): the mean of value_to_float over samples
                       "accuracy",
                       # lighteval's extractive_match: 0/1 per sample (the extracted answer equals the gold)
                       "extractive_match",
                       # ROUGE F-measures: 0-1 in most tasks, 0-100 in some (the value tells, see metric_kind)
                       "rouge1", "rouge2", "rougeL", "rougeLsum", "rouge_l", "rouge_1", "rouge_2")},
    # IFEval's instruction-level accuracy pools instructions, not docs: no per-doc mean
    **{m: ("proportion", "proportion", "higher", "corpus", 0.0, 1.0)
       for m in ("inst_level_strict_acc", "inst_level_loose_acc", "macro_f1", "micro_f1")},
    # CrowS-Pairs: the share of stereotyped choices; 50 % is ideal, so neither direction is better
    "pct_stereotype": ("proportion", "proportion", "unknown", "mean", 0.0, 1.0),
    "likelihood_difference": ("unbounded", "nats", "lower", "mean", 0.0, None),
    "perplexity": ("unbounded", "perplexity", "lower", "perplexity", 1.0, None),
    "ppl": ("unbounded", "perplexity", "lower", "perplexity", 1.0, None),  # lm-eval 0.3's lambada
    "word_perplexity": ("unbounded", "perplexity", "lower", "weighted_perplexity", 1.0, None),
    "byte_perplexity": ("unbounded", "perplexity", "lower", "weighted_perplexity", 1.0, None),
    "bits_per_byte": ("unbounded", "bits/byte", "lower", "bits_per_byte", 0.0, None),
    **{m: _PCT for m in ("bleu", "chrf", "sacrebleu", "bleu_max", "rouge1_max", "rouge2_max", "rougeL_max",
                         "rougeLsum_max", "eqbench", "percent_parseable")},
    "ter": ("error", "%", "lower", "corpus", 0.0, None),
    "mae": ("error", "absolute error", "lower", "mean", 0.0, None),
    "mse": ("error", "squared error", "lower", "mean", 0.0, None),
    "rmse": ("error", "error", "lower", "corpus", 0.0, None),
    "brier_score": ("error", "Brier score", "lower", "mean", 0.0, 1.0),
    "ece": ("error", "calibration error", "lower", "corpus", 0.0, 1.0),
    **{m: ("correlation", "correlation", "higher", "corpus", -1.0, 1.0)
       for m in ("mcc", "matthews_corrcoef", "pearson", "spearman", "kendall", "pearsonr", "spearmanr")},
}


def base_name(metric: str) -> str:
    """``exact_match,strict-match`` → ``exact_match``; ``acc_stderr`` stays (callers drop stderrs)."""
    return metric.partition(",")[0]


def _by_suffix(name: str) -> tuple | None:
    if name.endswith(("_acc", "_accuracy")):  # HELM: bbq_accuracy
        return _P
    if (m := re.fullmatch(r"(.+)@\d+", name)) and TABLE.get(m.group(1)) == _P:  # HELM: exact_match@5 (best of 5)
        return _P
    if name.endswith("_diff") and name.split("_")[0] in ("bleu", "rouge1", "rouge2", "rougeL", "rougeLsum", "bleurt"):
        # truthfulqa_gen: (similarity to true) − (similarity to false) in the metric's 0–100 scale
        return ("percentage", "% difference", "higher", "corpus", -100.0, 100.0)
    if name.endswith("_max") and name.split("_")[0] in ("bleu", "rouge1", "rouge2", "rougeL", "rougeLsum", "chrf"):
        return _PCT
    if re.fullmatch(r"pass(@|_at_)\d+|map_\d+|(ndcg|recall|precision)(@|_at_)\d+", name):
        return _P
    return None


#: task (fork version suffix dropped) -> metrics lm-eval or its forks report on a 0–100 scale whatever the
#: value: SQuAD v2 through the evaluate library's squad_v2 metric (lm-eval ``squadv2``), the jp-stable fork's
#: JSQuAD and JAQKET (their ``process_results`` multiply EM and F1 by 100)
PERCENT_TASKS: dict[str, frozenset[str]] = {
    "squadv2": frozenset({"exact", "f1", "HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1", "best_exact",
                          "best_f1"}),
    **{t: frozenset({"exact_match", "f1"}) for t in ("jsquad", "jaqket_v1", "jaqket_v2")},
}
_FORK_VERSION = re.compile(r"-\d+\.\d+(?:\.\d+)*-\d+(?:\.\d+)*$")


@dataclass(frozen=True)
class Scale:
    """The scale of a proportion-named metric in one run: ``proportion`` (0–1) or ``percentage`` (0–100),
    whether the run shows it (``certain``) or it is only assumed from the name, and on what ``basis``."""

    kind: Literal["proportion", "percentage"]
    certain: bool
    basis: str


def task_base(task: str) -> str:
    """A task's name without a 0.3 fork's ``-TASKVERSION-PROMPTVERSION`` suffix (``jsquad-1.1-0.2`` → ``jsquad``)."""
    return _FORK_VERSION.sub("", task)


def reported_scale(metric: str, value: float, task: str = "", siblings: dict[str, float] | None = None,
                   per_doc_mean: float | None = None) -> Scale:
    """Is ``value`` (a proportion-named metric of ``task`` in one run) on 0–1 or 0–100?

    Evidence, strongest first: the value itself outside [0, 1]; the run's per-doc values (their mean is
    the value, or a hundredth of it); the task's other proportion-named metrics in the same run (JSQuAD's
    F1 of 66.4 puts its EM on 0–100 too); lm-eval's own definition of the task (:data:`PERCENT_TASKS`).
    With none of them a value in [0, 1] is *assumed* a proportion (``certain=False``), so that a pair
    with a run that shows the other scale is not converted silently (:func:`pair_kinds`).

    Args:
        siblings: other metrics of the same task in the same run, key -> reported value.
        per_doc_mean: mean of the run's per-doc values of this metric over all its docs, if it has them.
    """
    if value > 1.0 + 1e-9 or value < -1e-9:
        return Scale("percentage", True, f"its value {value:g} is outside 0–1")
    if per_doc_mean is not None and math.isfinite(per_doc_mean) and value != 0:
        if math.isclose(per_doc_mean, value, rel_tol=1e-6, abs_tol=1e-9):
            return Scale("proportion", True, "its per-doc values average to it")
        if math.isclose(100 * per_doc_mean, value, rel_tol=1e-6, abs_tol=1e-7):
            return Scale("percentage", True, "its per-doc values average to a hundredth of it")
    for name, v in (siblings or {}).items():
        entry = TABLE.get(base_name(name)) or _by_suffix(base_name(name))
        if entry is not None and entry[0] == "proportion" and isinstance(v, (int, float)) and math.isfinite(v) \
                and v > 1.0 + 1e-9:
            return Scale("percentage", True, f"the task's {name} of {v:g} is on 0–100")
    if base_name(metric) in PERCENT_TASKS.get(task_base(task), ()):
        return Scale("percentage", True, f"lm-eval's {task_base(task)} reports it on 0–100")
    return Scale("proportion", False, "its name (a value in 0–1, nothing in the run says more)")


def metric_kind(metric: str, values: list[float] | None = None, higher_is_better: bool | None = None,
                task: str = "", siblings: dict[str, float] | None = None,
                per_doc_mean: float | None = None, declared: tuple | None = None) -> MetricKind:
    """The kind of ``metric`` as one run reports it.

    Args:
        metric: the key compare uses (``acc``, ``exact_match,strict-match``).
        values: the reported value of this metric in this run (the first finite one is looked at): a
            proportion-named metric gets its scale from :func:`reported_scale` with ``task``, ``siblings``
            and ``per_doc_mean``.
        higher_is_better: the file's own flag for this task and metric, if it records one.
        declared: ``(unit, low, high)`` as the file declares them (:func:`declared_kind`), if it does.
    """
    name = base_name(metric)
    entry = TABLE.get(name) or _by_suffix(name)
    if entry is None:
        kind = MetricKind("score", "as reported", "unknown", "corpus", None, None, "unknown")
    else:
        kind = MetricKind(*entry)
    finite = [v for v in values or [] if isinstance(v, (int, float)) and math.isfinite(v)]
    said = declared_kind(kind, declared) if declared is not None else None
    if said is not None and not any(said.low is not None and said.high is not None and not
                                    said.low - 1e-9 <= v <= said.high + 1e-9 for v in finite[:1]):
        kind = said  # a declaration the file's own value contradicts is not used
    if kind.kind == "proportion" and finite and not kind.declared:
        scale = reported_scale(metric, finite[0], task, siblings, per_doc_mean)
        kind = replace(kind, scale_basis=scale.basis, scale_certain=scale.certain)
        if scale.kind == "percentage":
            kind = as_percentage(kind)
    if higher_is_better is not None:
        kind = replace(kind, direction="higher" if higher_is_better else "lower", source="lm-eval higher_is_better")
    elif kind.direction == "unknown":
        kind = replace(kind, source="unknown")
    return kind


#: declared units that name a 0–1 or a 0–100 scale
_UNITS = {"proportion": "proportion", "fraction": "proportion", "ratio": "proportion", "percent": "percentage",
          "percentage": "percentage", "%": "percentage", "pct": "percentage"}


def declared_kind(kind: MetricKind, declared: tuple) -> MetricKind | None:
    """``kind`` (the table's, or an unknown metric's *score*) settled by what the file declares, ``(unit, low,
    high)``; ``None`` where the declaration says nothing usable (no unit, no finite range).

    A unit of proportion (or a range 0–1) is a proportion on 0–1, a unit of percent (or a range 0–100) a
    percentage, certain either way (``scale_certain``); any other declared range makes an unknown metric a *score*
    in the declared unit with that range (a judge's 0–5 harmlessness). A metric the table knows as neither
    proportion nor percentage (perplexity, an error, a correlation) keeps the table's kind.
    """
    unit, low, high = (list(declared) + [None, None, None])[:3]
    unit = unit.strip() if isinstance(unit, str) and unit.strip() else None
    bounded = all(isinstance(x, (int, float)) and math.isfinite(x) for x in (low, high)) and low < high
    scale = _UNITS.get((unit or "").lower()) or (("proportion" if (low, high) == (0, 1) else "percentage"
                                                   if (low, high) == (0, 100) else None) if bounded else None)
    what = ", ".join(x for x in (f"unit {unit}" if unit else "", f"range {low:g}–{high:g}" if bounded else "")
                     if x)
    if not what:
        return None
    basis = f"the file declares its {what}"
    if kind.kind not in ("proportion", "percentage", "score"):
        return replace(kind, declared=basis)
    known = kind.kind != "score"  # the table's aggregation holds; an unknown metric declared on 0–1 is a mean
    base = kind if known else replace(kind, aggregation="mean")
    if scale == "proportion":
        return replace(base, kind="proportion", unit="proportion", low=0.0, high=1.0, scale_basis=basis,
                       scale_certain=True, declared=basis)
    if scale == "percentage":
        return replace(as_percentage(base), scale_basis=basis, scale_certain=True, declared=basis)
    if known:
        return kind  # a proportion-named metric on another range: the run's evidence decides (reported_scale)
    return replace(kind, unit=unit or "as reported", low=low if bounded else None, high=high if bounded else None,
                   declared=basis)


def as_percentage(kind: MetricKind) -> MetricKind:
    """A proportion-named metric reported on 0–100 (a Japanese fork's exact_match of 58.40)."""
    return replace(kind, kind="percentage", unit="%", low=0.0, high=100.0)


def pair_kinds(ka: MetricKind, kb: MetricKind, same_task: bool = False
               ) -> tuple[MetricKind | None, str | None, MetricKind, MetricKind]:
    """The kind a metric is compared under, or ``(None, why, …)`` when the two runs report it in units that
    cannot be put on one scale; also each side's kind as read (a side's scale may be settled by the other).

    Proportions and percentages are both points. When one run *shows* the scale of a proportion-named
    metric and the other only has a value in [0, 1] (:func:`reported_scale`), the scale is the task's:
    with ``same_task`` (the same task of the same harness) the other run is read on it, with a note;
    otherwise the pair is not comparable — never one side converted on a guess. Directions that disagree
    become unknown (with a reason).
    """
    notes = []
    scaled = {"proportion", "percentage"}
    if ka.kind in scaled and kb.kind in scaled and ka.kind != kb.kind and not (ka.scale_certain and kb.scale_certain):
        sure, unsure, s_name, u_name = (ka, kb, "A", "B") if ka.scale_certain else (kb, ka, "B", "A")
        if not same_task:
            return None, (f"{s_name} reports it on {_range(sure)} ({sure.scale_basis}); {u_name}'s value lies in "
                          f"0–1 and its run does not say whether that is a proportion or a percentage: the values "
                          "are not put on one scale"), ka, kb
        settled = replace(unsure, kind=sure.kind, unit=sure.unit, low=sure.low, high=sure.high,
                          scale_basis=f"{s_name}'s run of the same task: {sure.scale_basis}", scale_certain=True)
        notes.append(f"{u_name}'s value is read on {_range(sure)}, the scale {s_name}'s run of the same task shows "
                     f"({sure.scale_basis})")
        ka, kb = (ka, settled) if s_name == "A" else (settled, kb)
    if ka.display_unit != kb.display_unit:
        return None, (f"A reports it as {_described(ka)}, B as {_described(kb)}: "
                      "the values are not on one scale"), ka, kb
    direction, source, why = ka.direction, ka.source, None
    if ka.direction == "unknown":
        direction, source = kb.direction, kb.source
    elif kb.direction not in ("unknown", ka.direction):
        direction, source, why = "unknown", "conflict", (f"A's file says {ka.direction} is better, B's file "
                                                          f"{kb.direction}: direction left unknown")
    # a proportion in one run and a percentage in the other: the pair is in points either way
    kind = ka if ka.kind == kb.kind or ka.kind == "percentage" else kb
    why = "; ".join(x for x in (*notes, why) if x) or None
    return replace(kind, direction=direction, source=source), why, ka, kb


def _range(k: MetricKind) -> str:
    return "0–100" if k.kind == "percentage" else "0–1"


def _described(k: MetricKind) -> str:
    return {"proportion": "a proportion (0–1)", "percentage": "a percentage (0–100)"}.get(k.kind, f"{k.unit}")


def delta_range(kind: MetricKind) -> tuple[float, float]:
    """Bounds of Δ = B − A in display units: the widest move the metric's range allows."""
    lo = -math.inf if kind.low is None or kind.high is None else (kind.low - kind.high) * kind.scale
    hi = math.inf if kind.low is None or kind.high is None else (kind.high - kind.low) * kind.scale
    return lo, hi


def moved(delta: float, direction: str) -> str:
    """``better``/``worse`` by the metric's ``direction`` (``higher``, ``lower``); ``up``/``down`` when it is
    ``unknown``."""
    if direction == "unknown":
        return "up" if delta > 0 else "down"
    return "better" if (delta > 0) == (direction == "higher") else "worse"
