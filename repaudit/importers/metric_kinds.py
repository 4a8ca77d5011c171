"""What a metric's number means: its kind, unit, direction (is higher better?) and how per-doc values
aggregate into the reported score.

Rule (stated in the README): only **proportions** (values in [0, 1] such as acc, exact_match) are shown
in points, ×100. A metric that is already a percentage (BLEU, chrF, ROUGE in truthfulqa_gen, a Japanese
fork's exact_match of 58.40) is shown as reported, also in points. Everything else — perplexity, bits
per byte, errors such as MAE, correlations such as MCC, unknown metrics — is shown in its own unit,
never multiplied. Δ = B − A in the display unit; it is labelled *better* or *worse* by the metric's
direction, or left unlabelled when the direction is unknown.

Where each fact comes from, in order:

1. **direction**: lm-eval 0.4's ``higher_is_better`` block for that task and metric, else the table
   below, else *unknown*;
2. **kind**: the table below by name (filter suffix dropped: ``exact_match,strict-match`` →
   ``exact_match``), then by suffix (``*_acc`` proportion, ``*_diff`` signed points, ``*_max`` of
   BLEU/ROUGE percentages); a "proportion" whose reported value lies outside [0, 1] is read as a
   percentage (the file says so by its value); a name in neither is a *score* in the file's own unit;
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
                       "contains", "pass@1", "pass@10", "pass_at_1", "prompt_level_strict_acc",
                       "prompt_level_loose_acc", "maj@8", "map", "ndcg", "mrr",
                       # inspect_ai's accuracy(): the mean of value_to_float over samples
                       "accuracy",
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
    if name.endswith("_acc"):
        return _P
    if name.endswith("_diff") and name.split("_")[0] in ("bleu", "rouge1", "rouge2", "rougeL", "rougeLsum", "bleurt"):
        # truthfulqa_gen: (similarity to true) − (similarity to false) in the metric's 0–100 scale
        return ("percentage", "% difference", "higher", "corpus", -100.0, 100.0)
    if name.endswith("_max") and name.split("_")[0] in ("bleu", "rouge1", "rouge2", "rougeL", "rougeLsum", "chrf"):
        return _PCT
    if re.fullmatch(r"pass(@|_at_)\d+|map_\d+|(ndcg|recall|precision)(@|_at_)\d+", name):
        return _P
    return None


def metric_kind(metric: str, values: list[float] | None = None, higher_is_better: bool | None = None) -> MetricKind:
    """The kind of ``metric`` as one run reports it.

    Args:
        metric: the key compare uses (``acc``, ``exact_match,strict-match``).
        values: the reported values of this metric in this run (finite ones are looked at): a
            "proportion" reported outside [0, 1] is a percentage.
        higher_is_better: lm-eval's own flag for this task and metric, if the file records it.
    """
    name = base_name(metric)
    entry = TABLE.get(name) or _by_suffix(name)
    if entry is None:
        kind = MetricKind("score", "as reported", "unknown", "corpus", None, None, "unknown")
    else:
        kind = MetricKind(*entry)
    finite = [v for v in values or [] if isinstance(v, (int, float)) and math.isfinite(v)]
    if kind.kind == "proportion" and any(v > 1.0 + 1e-9 or v < -1e-9 for v in finite):
        # a Japanese fork's exact_match of 58.40, squad v2's f1 of 84.25: already a percentage
        kind = replace(kind, kind="percentage", unit="%", low=0.0, high=100.0)
    if higher_is_better is not None:
        kind = replace(kind, direction="higher" if higher_is_better else "lower", source="lm-eval higher_is_better")
    elif kind.direction == "unknown":
        kind = replace(kind, source="unknown")
    return kind


def pair_kinds(ka: MetricKind, kb: MetricKind) -> tuple[MetricKind | None, str | None]:
    """The kind a metric is compared under, or ``(None, why)`` when the two runs report it in units that
    cannot be put on one scale. A proportion and a percentage are both points; directions that
    disagree become unknown (with a reason)."""
    if ka.display_unit != kb.display_unit:
        return None, (f"A reports it as {_described(ka)}, B as {_described(kb)}: "
                      "the values are not on one scale")
    direction, source, why = ka.direction, ka.source, None
    if ka.direction == "unknown":
        direction, source = kb.direction, kb.source
    elif kb.direction not in ("unknown", ka.direction):
        direction, source, why = "unknown", "conflict", (f"A's file says {ka.direction} is better, B's file "
                                                          f"{kb.direction}: direction left unknown")
    # a proportion in one run and a percentage in the other: the pair is in points either way
    kind = ka if ka.kind == kb.kind or ka.kind == "percentage" else kb
    return replace(kind, direction=direction, source=source), why


def _described(k: MetricKind) -> str:
    return {"proportion": "a proportion (0–1)", "percentage": "a percentage (0–100)"}.get(k.kind, f"{k.unit}")


def delta_range(kind: MetricKind) -> tuple[float, float]:
    """Bounds of Δ = B − A in display units: the widest move the metric's range allows."""
    lo = -math.inf if kind.low is None or kind.high is None else (kind.low - kind.high) * kind.scale
    hi = math.inf if kind.low is None or kind.high is None else (kind.high - kind.low) * kind.scale
    return lo, hi


def moved(delta: float, kind: MetricKind) -> str:
    """``better``/``worse`` by the metric's direction; ``up``/``down`` when the direction is unknown."""
    if kind.direction == "unknown":
        return "up" if delta > 0 else "down"
    return "better" if (delta > 0) == (kind.direction == "higher") else "worse"
