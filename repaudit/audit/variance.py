"""How noisy is a benchmark? ``repaudit variance``: seed, order and format spreads, and the smallest
difference a comparison on it can detect.

The grid, for each prompt format F (``--formats``): the base run at few-shot seeds s, s+1, …,
s+S−1 (the *seed spread*: other examples), and at seed s the examples in M other seeded orders
(:func:`repaudit.tasks.fewshot.permute`; the *order spread*: same examples). Every configuration
runs through the executor and the batch store, so a repeat costs no forward pass.

Per format and metric (values in metric units, [0, 1] for accuracies):

* ``score`` — the mean of the S seed runs' scores; ``boot_low``/``boot_high`` — the (1 − α) percentile
  bootstrap interval over docs of the first seed's run (whole clusters resampled where docs have one,
  e.g. MMLU subjects; Efron & Tibshirani 1993, Miller 2024 §3);
* ``seed_sd`` — sample standard deviation (ddof 1) of the S seed scores, with their min and max;
  ``order_sd`` — the same over the M + 1 orders of the first seed's examples (the sampler's order
  and the M permutations); Madaan et al. 2024 ("Quantifying Variance in Evaluation Benchmarks",
  arXiv 2406.10229) call the first the seed variance;
* continuous counterparts, per doc from the recorded log-likelihoods: ``p_gold`` (probability mass
  on the gold choice, softmax over the choices' log-likelihoods; counterpart of acc) and
  ``logp_gold_norm`` (log of the gold choice's softmax share after dividing each log-likelihood by
  its length in characters, as acc_norm does; counterpart of acc_norm);
* ``snr`` — signal-to-noise: (score − chance) / seed_sd, where chance is the metric's expected value
  under a uniform guess (1/k per doc; log(1/k) for ``logp_gold_norm``); how far above chance the
  benchmark places the model, in units of its seed noise;
* ``mde`` — the smallest true difference a two-sided paired test at α (0.05 by default) detects with 80 %
  power on these n docs: (z₀.₉₇₅ + z₀.₈) · s_d / √n (Miller 2024, "Adding Error Bars to Evals",
  arXiv 2411.00640, §5 power analysis), with s_d² the variance of per-doc differences between two
  configurations that differ only by noise: the mean, over pairs of the format's runs (seeds and
  orders) whose prompts differ, of var(x_i − x_j) — for 0/1 metrics about the observed paired
  disagreement rate. Two different models usually disagree more than two few-shot draws of one
  model, so this is the best case; ``mde_unpaired`` is the other end, two independent samples
  (s_d² = 2·var(x)). ``docs_for_1pt`` is the n at which
  the MDE is one point (0.01); ``seeds_for_1pt`` the number of seeds S each of two systems must
  average for the seed noise of their difference, √(2/S)·seed_sd, to allow detecting one point at
  the same α and power: 2 · ((z₀.₉₇₅ + z₀.₈) · seed_sd / 0.01)²;
* ``split`` — the seed runs' per-doc values (docs × seeds) split into prediction noise (the same doc across
  seeds) and data noise (which docs were drawn), with the score's standard error at twice the seeds or twice
  the docs (:mod:`repaudit.audit.noise`; Wang 2025, arXiv 2512.21326).

``bench/mde_simulation.py`` checks the MDE by simulation (planted effects of that size, detection
rate ≈ 80 %).
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy import stats as sps

from repaudit.audit.noise import NoiseSplit, split_noise
from repaudit.audit.stat_settings import StatSettings, for_command
from repaudit.audit.stats import paired_bootstrap
from repaudit.errors import RepauditError
from repaudit.run.records import DocResult, RunRecord
from repaudit.run.runner import RunConfig

#: continuous counterpart -> the discrete metric it shadows
CONTINUOUS = {"p_gold": "acc", "logp_gold_norm": "acc_norm"}
ONE_POINT = 0.01


class VarianceRun(BaseModel):
    """One configuration of the grid: its format, few-shot seed and order seed, and its scores."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    format: str
    """The prompt format."""
    fewshot_seed: int
    """The few-shot sampler's seed."""
    order_seed: int | None
    """The seed of the permutation of the examples; None: the sampler's order."""
    scores: dict[str, float]
    """Metric (continuous counterparts included) → mean over docs, in metric units."""
    stderr: dict[str, float]
    """Metric → sd(ddof 1)/√n over docs, in metric units; NaN for a single doc."""
    fingerprint_digest: str
    """The run's fingerprint digest."""


class MetricNoise(BaseModel):
    """The noise of one metric under one prompt format (see the module docstring for each number); values in
    metric units ([0, 1] for accuracies; ``logp_gold_norm`` in nats)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    format: str
    """The prompt format."""
    metric: str
    """The metric, or a continuous counterpart (``p_gold``, ``logp_gold_norm``)."""
    counterpart: str | None
    """The discrete metric a continuous one shadows (acc, acc_norm); None for a discrete metric."""
    score: float
    """Mean of the seed runs' scores."""
    boot_low: float
    """Lower bound of the (1 − alpha) percentile bootstrap interval over docs of the first seed's score (clusters
    resampled whole where every doc has one)."""
    boot_high: float
    """Upper bound of that interval."""
    seed_sd: float
    """Sample standard deviation (ddof 1) of the seed runs' scores."""
    seed_min: float
    """Lowest seed run score."""
    seed_max: float
    """Highest seed run score."""
    order_sd: float | None
    """Sample standard deviation over the first seed's example orders (the sampler's and each permutation); None
    without order runs."""
    chance: float | None
    """Expected value under a uniform guess over each doc's choices; None where undefined (exact_match, no
    choices)."""
    snr: float | None
    """(score − chance) / seed_sd, in seed-noise units; None without a chance value or with seed_sd 0."""
    sd_diff: float | None
    """√ of the mean, over pairs of the format's runs whose prompts differ, of var(x_i − x_j) per doc; None
    without such a pair."""
    mde: float | None
    """Smallest true paired difference a two-sided test at ``alpha`` detects with ``power`` on these docs; None
    as for ``sd_diff``."""
    mde_unpaired: float
    """The same for two independent samples (s_d² = 2·var(x))."""
    docs_for_1pt: int | None
    """Docs at which ``mde`` is one point (0.01); None for ``logp_gold_norm`` or without ``sd_diff``."""
    seeds_for_1pt: int | None
    """Seeds each of two systems must average to detect one point against the seed noise; None for
    ``logp_gold_norm`` or a non-finite seed_sd."""
    split: NoiseSplit | None = None
    """The seed runs' noise split into prediction and data noise (:mod:`repaudit.audit.noise`), in points (× 100;
    nats for ``logp_gold_norm``); None with fewer than 2 docs."""


class FormatSpread(BaseModel):
    """One metric's seed-mean score per format, and the spread between formats (max − min)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    metric: str
    """The metric."""
    scores: dict[str, float]
    """Format → the metric's score (mean of the seed runs), in metric units."""
    spread: float
    """Highest minus lowest of ``scores``."""


class VarianceReport(BaseModel):
    """Everything ``repaudit variance`` measured; values in metric units."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    task: str
    """The task."""
    model: str
    """The model, as named."""
    n_docs: int
    """Docs every run evaluated."""
    num_fewshot: int
    """Few-shot examples per prompt."""
    sampler: str
    """The few-shot sampler: with ``first_n`` (MMLU) seeds do not change the examples, only orders do."""
    formats: list[str]
    """The prompt formats measured."""
    fewshot_seeds: list[int]
    """The few-shot seeds of the seed runs (the base seed first)."""
    order_seeds: list[int]
    """The order seeds of the order runs (1 … M)."""
    alpha: float
    """Level of the bootstrap intervals and of the MDE's two-sided test."""
    power: float
    """Power the MDE is computed for."""
    n_boot: int
    """Bootstrap replicates."""
    stat_settings: StatSettings | None = None
    """How the intervals were made (``alpha`` and ``n_boot`` above, and the bootstrap's seed); None: not recorded
    (older report)."""
    runs: list[VarianceRun]
    """Every configuration of the grid, per format: the seed runs, then the order runs."""
    noise: list[MetricNoise]
    """Per format and metric, its noise."""
    format_spread: list[FormatSpread]
    """Per metric, its spread between formats."""
    computed_batches: int
    """Batches computed, over all runs."""
    cached_batches: int
    """Batches read from the batch store, over all runs."""


def continuous_values(d: DocResult) -> dict[str, float]:
    """A multiple-choice doc's continuous counterparts (``p_gold``, ``logp_gold_norm``); {} otherwise."""
    if d.gold is None or len(d.loglikelihoods) < 2 or len(d.choices) != len(d.loglikelihoods):
        return {}
    ll = np.asarray(d.loglikelihoods, dtype=np.float64)
    chars = np.asarray([max(len(c), 1) for c in d.choices], dtype=np.float64)
    return {"p_gold": float(np.exp(ll[d.gold] - np.logaddexp.reduce(ll))),
            "logp_gold_norm": float((ll / chars)[d.gold] - np.logaddexp.reduce(ll / chars))}


def chance(metric: str, docs: list[DocResult]) -> float | None:
    """Expected value of ``metric`` under a uniform guess over each doc's choices (None if undefined)."""
    ks = [len(d.choices) for d in docs if d.gold is not None and d.choices]
    if not ks or metric.startswith("exact_match"):
        return None
    if metric == "logp_gold_norm":
        return float(np.mean([-math.log(k) for k in ks]))
    return float(np.mean([1.0 / k for k in ks]))


def per_doc(rec: RunRecord) -> dict[str, np.ndarray]:
    """Metric -> per-doc values in doc order: the run's own metrics and the continuous counterparts."""
    out = {m: np.array([d.metrics[m] for d in rec.docs], dtype=np.float64) for m in rec.docs[0].metrics}
    cont = [continuous_values(d) for d in rec.docs]
    if all(cont):
        for m in CONTINUOUS:
            out[m] = np.array([c[m] for c in cont], dtype=np.float64)
    return out


def mde(sd_diff: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """Minimum detectable effect of a two-sided paired z-test: (z_{1−α/2} + z_power) · sd_diff / √n
    (Miller 2024 §5). Raises ValueError for n < 1."""
    if n < 1:
        raise ValueError("n must be at least 1")
    return _z(alpha, power) * sd_diff / math.sqrt(n)


def _z(alpha: float, power: float) -> float:
    return float(sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(power))


def noise_of(fmt: str, metric: str, seed_vals: list[np.ndarray], order_scores: list[float],
             pair_vals: list[tuple[np.ndarray, np.ndarray]], docs: list[DocResult], clusters: np.ndarray | None,
             stat: StatSettings, power: float) -> MetricNoise:
    """The :class:`MetricNoise` of one metric from its per-doc values in each seed run (first = base seed),
    the scores of the order runs (sampler order first) and the per-doc values of the noise pairs (runs
    whose prompts differ); no pair leaves the paired MDE undefined (``None``). ``stat``: alpha and the bootstrap."""
    scores = np.array([v.mean() for v in seed_vals])
    first, alpha = seed_vals[0], stat.alpha
    n_boot, boot_seed = stat.bootstrap()
    boot = paired_bootstrap(np.zeros_like(first), first, clusters, n_boot=n_boot, alpha=alpha, seed=boot_seed)
    seed_sd = float(np.std(scores, ddof=1)) if len(scores) > 1 else float("nan")
    diffs = [np.var(a - b, ddof=1) for a, b in pair_vals]
    sd_diff = float(math.sqrt(np.mean(diffs))) if diffs else None
    n = len(first)
    z = _z(alpha, power)
    base = chance(metric, docs)
    bounded = metric != "logp_gold_norm"  # a point is 0.01 of a [0, 1] metric only
    split = split_noise((100.0 if bounded else 1.0) * np.stack(seed_vals, axis=1)) if n > 1 else None
    return MetricNoise(
        format=fmt, metric=metric, counterpart=CONTINUOUS.get(metric), score=float(scores.mean()),
        boot_low=boot.ci_low, boot_high=boot.ci_high, seed_sd=seed_sd, seed_min=float(scores.min()),
        seed_max=float(scores.max()),
        order_sd=float(np.std(order_scores, ddof=1)) if len(order_scores) > 1 else None,
        chance=base, snr=(float(scores.mean()) - base) / seed_sd if base is not None and seed_sd > 0 else None,
        sd_diff=sd_diff, mde=None if sd_diff is None else mde(sd_diff, n, alpha, power),
        mde_unpaired=mde(math.sqrt(2 * np.var(first, ddof=1)), n, alpha, power),
        docs_for_1pt=math.ceil((z * sd_diff / ONE_POINT) ** 2) if bounded and sd_diff is not None else None,
        seeds_for_1pt=max(1, math.ceil(2 * (z * seed_sd / ONE_POINT) ** 2)) if bounded and math.isfinite(seed_sd)
        else None, split=split)


def variance_grid(base: RunConfig, formats: list[str], fewshot_seeds: int, order_seeds: int
                  ) -> list[tuple[str, RunConfig]]:
    """(label, RunConfig) of every configuration, per format: the seed runs, then the order runs.

    Raises:
        RepauditError: fewer than 2 seeds, a 0-shot base (no examples to vary), or a configuration
            that cannot run.
    """
    from repaudit.run.runner import check_config

    if not 2 <= fewshot_seeds <= 1000:
        raise RepauditError(f"--fewshot-seeds must be between 2 and 1000, got {fewshot_seeds}")
    if not 0 <= order_seeds <= 1000:
        raise RepauditError(f"--order-seeds must be between 0 and 1000, got {order_seeds}")
    if not formats:
        raise RepauditError("--formats is empty: give at least one prompt format")
    task = check_config(base)
    nshot = base.fewshot.num_fewshot if base.fewshot.num_fewshot is not None else task.default_num_fewshot
    if (nshot == 0 or base.fewshot_ids is not None or base.fewshot_from is not None
            or base.fewshot_by_doc is not None):
        raise RepauditError("variance varies the few-shot draw: give an n-shot base (--num-fewshot N > 0) without "
                            "fixed few-shot ids")
    out = []
    for fmt in formats:
        cfg = base.model_copy(update={"prompt_format": fmt, "fewshot_order_seed": None})
        check_config(cfg)
        seed = base.seeds.fewshot_seed
        out += [(f"{fmt} seed={seed + i}", cfg.model_copy(update={"fewshot_seed": seed + i}))
                for i in range(fewshot_seeds)]
        out += [(f"{fmt} seed={base.seeds.fewshot_seed} order={o}", cfg.model_copy(update={"fewshot_order_seed": o}))
                for o in range(1, order_seeds + 1)]
    return out


def variance(base: RunConfig, executor, formats: list[str], fewshot_seeds: int = 5, order_seeds: int | None = None,
             stat: StatSettings | None = None, power: float = 0.8, progress=None, **changes: Any) -> VarianceReport:
    """Run the grid of :func:`variance_grid` and measure every spread (see the module docstring).

    ``executor``: an :class:`~repaudit.audit.executor.Executor` or a function ``RunConfig -> RunRecord``;
    ``order_seeds`` defaults to ``fewshot_seeds − 1`` (as many order runs as seed runs); ``stat``: alpha and the
    bootstrap (variance's defaults where None: 2000 resamples, seed 0), ``changes`` over it (``n_boot=500``).

    Raises:
        RepauditError: see :func:`variance_grid`; runs that evaluated different docs; ``power`` outside (0, 1).
        UsageError: a statistics setting out of range.
    """
    from repaudit.audit.executor import as_executor

    stat = for_command("variance", stat, **changes)
    if not 0 < power < 1:
        raise RepauditError(f"power must be in (0, 1), got {power}")
    m = fewshot_seeds - 1 if order_seeds is None else order_seeds
    grid = variance_grid(base, formats, fewshot_seeds, m)
    recs = as_executor(executor).map([c for _, c in grid], progress)
    ids = [d.doc_id for d in recs[0].docs]
    if any([d.doc_id for d in r.docs] != ids for r in recs):
        raise RepauditError("the grid's runs evaluated different docs; variance needs the same docs in every run")
    runs, noise, per = [], [], []
    for k, fmt in enumerate(formats):
        block = recs[k * (fewshot_seeds + m): (k + 1) * (fewshot_seeds + m)]
        vals = [per_doc(r) for r in block]
        per.append(vals)
        for (_, cfg), r, v in zip(grid[k * (fewshot_seeds + m):], block, vals):
            runs.append(VarianceRun(format=fmt, fewshot_seed=cfg.seeds.fewshot_seed,
                                    order_seed=cfg.fewshot.fewshot_order_seed,
                                    scores={name: float(x.mean()) for name, x in v.items()},
                                    stderr={name: float(np.std(x, ddof=1) / math.sqrt(len(x))) if len(x) > 1
                                            else float("nan") for name, x in v.items()},
                                    fingerprint_digest=r.fingerprint_digest))
        docs = block[0].docs
        clusters = np.array([d.cluster for d in docs]) if all(d.cluster for d in docs) else None
        prompts = [[d.prompt_hash for d in r.docs] for r in block]
        pairs = [(i, j) for i, j in combinations(range(len(block)), 2) if prompts[i] != prompts[j]]
        for metric in vals[0]:
            seed_vals = [v[metric] for v in vals[:fewshot_seeds]]
            orders = [float(seed_vals[0].mean())] + [float(v[metric].mean()) for v in vals[fewshot_seeds:]]
            pair_vals = [(vals[i][metric], vals[j][metric]) for i, j in pairs]
            noise.append(noise_of(fmt, metric, seed_vals, orders, pair_vals, docs, clusters, stat, power))
    metrics = [x.metric for x in noise if x.format == formats[0]]
    spread = []
    for metric in metrics:
        s = {x.format: x.score for x in noise if x.metric == metric}
        if len(s) == len(formats):
            spread.append(FormatSpread(metric=metric, scores=s, spread=max(s.values()) - min(s.values())))
    fp = recs[0].fingerprint
    return VarianceReport(task=fp.data.task, model=fp.model.name, n_docs=len(ids),
                          num_fewshot=fp.settings.fewshot.num_fewshot,
                          sampler=fp.fewshot.sampler,
                          formats=list(formats), fewshot_seeds=[c.seeds.fewshot_seed for _, c in grid[:fewshot_seeds]],
                          order_seeds=list(range(1, m + 1)), alpha=stat.alpha, power=power, n_boot=stat.n_boot,
                          stat_settings=stat, runs=runs,
                          noise=noise, format_spread=spread,
                          computed_batches=sum(r.timings.computed_batches for r in recs),
                          cached_batches=sum(r.timings.cached_batches for r in recs))

