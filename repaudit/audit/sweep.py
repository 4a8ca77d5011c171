"""``repaudit sweep``: vary one factor, hold the rest, and measure its effect against the noise floor.

For every value the configuration is run (finished batches come from the store), and the score
is compared with the base run doc by doc: Δ with a paired bootstrap interval and the flip rate.
The **noise floor** is the spread of the same metric under variation nobody chose: across
few-shot seeds when the base is n-shot (n > 0), otherwise across a repeated, uncached run of the
base (zero where inference is deterministic, e.g. float32 on CPU). A value's effect *exceeds the
floor* when its paired interval excludes 0 and |Δ| is more than twice the floor's standard
deviation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from repaudit.audit.stats import paired_bootstrap
from repaudit.errors import RepauditError
from repaudit.run.records import RunRecord
from repaudit.run.runner import RunConfig

#: factor name -> (RunConfig field, parser of one --values item)
SWEEPABLE: dict[str, tuple[str, Callable[[str], Any]]] = {
    "backend": ("backend", str),
    "batch_size": ("batch_size", int),
    "dtype": ("dtype", str),
    "padding_side": ("padding_side", str),
    # "default" = the tokenizer's own behaviour; true / false = BOS forced on / off
    "add_bos_token": ("add_bos_token", lambda s: None if s.lower() == "default" else s.lower() in ("1", "true", "on",
                                                                                                  "yes")),
    "scoring_strategy": ("scoring_strategy", str),
    "prompt_format": ("prompt_format", str),
    "num_fewshot": ("num_fewshot", int),
    "fewshot_seed": ("fewshot_seed", int),
    # values are seeds of a per-doc permutation of the selected examples ("none" = sampler order)
    "fewshot_order": ("fewshot_order_seed", lambda s: None if s.lower() == "none" else int(s)),
    "max_gen_toks": ("max_gen_toks", int),
    # one stop list per value, sequences separated by "|" ("none" = no stop sequence but EOS)
    "until": ("until", lambda s: [] if s.lower() == "none" else [x.encode().decode("unicode_escape")
                                                                  for x in s.split("|")]),
    "chat_template": ("chat_template", lambda s: s.lower() in ("1", "true", "on", "yes")),
    "system_prompt": ("system_prompt", str),
}


class SweepPoint(BaseModel):
    """One value of the swept factor: score, Δ vs the base with its paired 95 % interval, flip rate."""

    model_config = ConfigDict(extra="forbid")
    value: Any
    score: float
    delta: float
    ci_low: float
    ci_high: float
    flip_rate: float
    n: int
    fingerprint_digest: str
    verdict: str


class SweepResult(BaseModel):
    """A whole sweep, with the noise floor it was judged against."""

    model_config = ConfigDict(extra="forbid")
    task: str
    metric: str
    factor: str
    base_value: Any
    base_score: float
    noise_floor_sd: float
    noise_floor_method: str
    noise_floor_scores: list[float]
    points: list[SweepPoint]


def parse_values(factor: str, text: str) -> list[Any]:
    """Parse ``--values 1,4,16`` for ``factor``.

    Raises:
        RepauditError: unknown factor or a value that does not parse.
    """
    if factor not in SWEEPABLE:
        raise RepauditError(f"unknown factor '{factor}': sweepable factors are {', '.join(SWEEPABLE)}")
    _, parse = SWEEPABLE[factor]
    try:
        return [parse(v.strip()) for v in text.split(",") if v.strip()]
    except ValueError:
        raise RepauditError(f"--values '{text}' do not parse as values of {factor}") from None


def _metric_values(rec: RunRecord, metric: str) -> np.ndarray:
    return np.array([d.metrics[metric] for d in rec.docs])


def sweep(base: RunConfig, factor: str, values: list[Any], executor, noise_seeds: int = 3,
          metric: str | None = None, progress=None) -> SweepResult:
    """Run ``base`` with ``factor`` set to each of ``values`` and judge each against the noise floor.

    ``executor`` is a :class:`repaudit.executor.Executor` (local or Ray) or a function
    ``RunConfig -> RunRecord``. The base runs first (its n-shot decides the noise floor); the
    floor's runs and every value then go to the executor as one batch of configurations.
    ``progress(done, total)`` is called per finished configuration.

    Raises:
        RepauditError: unknown factor, no values, or a metric the task does not report.
    """
    if factor not in SWEEPABLE:
        raise RepauditError(f"unknown factor '{factor}': sweepable factors are {', '.join(SWEEPABLE)}")
    if not values:
        raise RepauditError("--values is empty: give at least one value")
    from repaudit.audit.executor import as_executor

    if not 1 <= noise_seeds <= 100:
        raise RepauditError(f"--noise-seeds must be between 1 and 100, got {noise_seeds}")
    executor = as_executor(executor)
    field = SWEEPABLE[factor][0]
    from repaudit.run.runner import check_config

    for value in values:  # every configuration is checked before the first one runs
        check_config(base.model_copy(update={field: value}))
    total = 1 + max(noise_seeds, 1) + len(values)
    base_rec = executor.map([base])[0]
    if progress:
        progress(1, total)
    metric = metric or next(iter(base_rec.docs[0].metrics))
    if metric not in base_rec.docs[0].metrics:
        raise RepauditError(f"metric '{metric}' is not reported by {base.task}: "
                            f"choose one of {', '.join(base_rec.docs[0].metrics)}")
    xb = _metric_values(base_rec, metric)

    if base_rec.fingerprint.fewshot.num_fewshot > 0:
        floor_cfgs = [base.model_copy(update={"fewshot_seed": base.fewshot_seed + 1 + s}) for s in range(noise_seeds)]
        method = f"spread across {noise_seeds + 1} few-shot seeds"
    else:
        floor_cfgs = [base.model_copy(update={"use_batch_cache": False})]
        method = "spread across a repeated uncached run of the base"
    value_cfgs = [base.model_copy(update={field: value}) for value in values]
    total = 1 + len(floor_cfgs) + len(value_cfgs)
    recs = executor.map(floor_cfgs + value_cfgs, (lambda d, _t: progress(1 + d, total)) if progress else None)
    floor_recs, value_recs = recs[:len(floor_cfgs)], recs[len(floor_cfgs):]
    floor_scores = [float(xb.mean())] + [float(_metric_values(r, metric).mean()) for r in floor_recs]
    floor_sd = float(np.std(floor_scores, ddof=1)) if len(floor_scores) > 1 else 0.0

    points = []
    for value, rec in zip(values, value_recs):
        xv = _metric_values(rec, metric)
        if len(xv) != len(xb) or [d.doc_id for d in rec.docs] != [d.doc_id for d in base_rec.docs]:
            raise RepauditError(f"{factor}={value} evaluated other docs than the base: cannot pair them")
        res = paired_bootstrap(xb, xv, np.array([d.cluster for d in rec.docs]) if rec.docs[0].cluster else None)
        excludes = res.ci_low > 0 or res.ci_high < 0
        verdict = "exceeds noise floor" if excludes and abs(res.delta) > 2 * floor_sd else "within noise floor"
        points.append(SweepPoint(value=value, score=float(xv.mean()), delta=res.delta, ci_low=res.ci_low,
                                 ci_high=res.ci_high, flip_rate=float(np.mean(xv != xb)), n=len(xv),
                                 fingerprint_digest=rec.fingerprint_digest, verdict=verdict))
    return SweepResult(task=base.task, metric=metric, factor=factor, base_value=getattr(base, field),
                       base_score=float(xb.mean()), noise_floor_sd=floor_sd, noise_floor_method=method,
                       noise_floor_scores=floor_scores, points=points)
