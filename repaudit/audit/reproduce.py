"""``repaudit reproduce``: which settings of this model give a reported number?

Search order: every protocol in ``fingerprints/`` that defines the task, then one-factor moves from the base
configuration, then two-factor moves (pairs of one-factor moves of different factors), up to a budget of
configurations. Every configuration runs through the batch store (interruptible, resumable; a repeat costs no forward
pass). Metric variants (acc, acc_norm, acc_bytes, MMLU's micro / subject_macro) and the score form (raw,
leaderboard-normalised) are read from the same inference.

A configuration *reproduces* the target when the target lies in its score's (1 − α) interval (α = 0.05: 95 %),
``value ± z₁₋α/₂ · stderr`` with lm-eval's ``stderr`` (``stdev(ddof=1)/sqrt(n)``); the
leaderboard-normalised interval is the raw one's endpoints normalised (the map is monotone).
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from repaudit.audit.racing import Z95, RaceReport, matchable, z_of
from repaudit.audit.stat_settings import StatSettings, for_command
from repaudit.errors import RepauditError
from repaudit.importers.comparable import metric_key
from repaudit.importers.metric_kinds import metric_kind
from repaudit.run.config import RunConfig, field_value
from repaudit.run.factors import get as get_factor
from repaudit.run.factors import moves as registry_moves
from repaudit.run.metrics import NORMALISED_SUFFIX
from repaudit.run.normalise import leaderboard_normalise
from repaudit.run.protocol import apply_protocol, available, read_protocol
from repaudit.settings import ScoreNormalisation

#: one-factor moves tried by default, and every move ``--moves`` may name (views of :mod:`repaudit.run.factors`)
DEFAULT_MOVES = registry_moves(default_only=True)
ALL_MOVES = registry_moves()


class Candidate(BaseModel):
    """A configuration to evaluate: how it was found (``kind``), its differences from the base."""

    model_config = ConfigDict(use_attribute_docstrings=True)
    label: str
    """``base``, ``protocol <name>``, ``<move>=<value>`` or ``<move>=<value>, <move>=<value>``."""
    kind: Literal["base", "protocol", "one-factor", "two-factor"]
    """How it was found."""
    changes: dict[str, Any]
    """What differs from the base: move → value (a protocol: configuration field → value)."""
    config: RunConfig
    """The configuration evaluated."""


class View(BaseModel):
    """One score of one evaluated configuration, in one form, with its (1 − alpha) interval (fractions)."""

    model_config = ConfigDict(use_attribute_docstrings=True)
    label: str
    """The candidate's label."""
    kind: str
    """The candidate's kind."""
    changes: dict[str, Any]
    """The candidate's changes from the base."""
    metric: str
    """The metric key (``acc``, ``acc_norm``, ``exact_match,strict-match``)."""
    form: ScoreNormalisation
    """The score's form."""
    score: float
    """The score, a fraction 0–1 (dropped: its mean over the docs evaluated)."""
    ci_low: float
    """Lower bound of the (1 − alpha) interval (score ± z · stderr, cut to the metric's range; normalised: the raw
    bounds normalised; dropped: the repeated interval for the all-doc score), a fraction."""
    ci_high: float
    """Upper bound of that interval, a fraction."""
    distance: float
    """``|score − target|``, a fraction."""
    contains: bool
    """The target lies in [ci_low, ci_high] (never for a dropped candidate)."""
    n: int
    """Docs the score is over (dropped: docs evaluated before it was dropped)."""
    dropped: bool = False
    """``reproduce --race``: the candidate was dropped after ``n`` docs; the interval is then the repeated
    (1 − alpha) interval for its score on all docs (:mod:`repaudit.audit.racing`)."""


class ReproduceResult(BaseModel):
    """Everything ``reproduce`` found: the ranked views, counts and the verdict."""

    model_config = ConfigDict(use_attribute_docstrings=True)
    task: str
    """The task."""
    target: float
    """The reported score sought, a fraction 0–1."""
    target_kind: str
    """raw, normalised or auto (both forms tried)."""
    metric: str | None
    """The metric key searched; None: every metric the runs report."""
    candidates: int
    """Distinct configurations found, in search order."""
    evaluated: int
    """Of them, configurations evaluated (at most ``budget``)."""
    computed: int
    """Of those, configurations that computed at least one batch (the rest came from the batch store)."""
    budget: int
    """The most configurations to evaluate."""
    wall_s: float
    """Wall-clock seconds of the search, to 0.1."""
    views: list[View]
    """Every view, ranked: not dropped first, then the ones holding the target, then by distance."""
    verdict: str
    """One sentence: reproduced or not, the closest configuration."""
    reproduced: bool
    """Some view's interval holds the target."""
    recognised_as: str | None
    """``auto`` with a match: the form of the closest match (what the target most likely is); None otherwise."""
    race: RaceReport | None = None
    """``--race``: how the racing went; None without it."""
    alpha: float = 0.05
    """A configuration reproduces the target when it lies in the score's (1 − alpha) interval."""
    stat_settings: StatSettings | None = None
    """How the intervals were made: normal ones at ``alpha``, unadjusted over candidates; None: not recorded."""


def _move_values(move: str, base: RunConfig, task) -> list[Any]:
    """The values ``move`` tries from ``base`` (the factor's own ``moves`` in the registry).

    Raises:
        RepauditError: a factor reproduce cannot move (with the reason).
    """
    try:
        f = get_factor(move)
    except KeyError:
        raise RepauditError(f"unknown move '{move}': choose from {', '.join(ALL_MOVES)}") from None
    if f.moves is None or not f.supports("reproduce"):  # (a reproduce factor always has its moves)
        raise RepauditError(f"reproduce does not move {move}: {f.why_not.get('reproduce', 'not a move')} "
                            f"(moves: {', '.join(ALL_MOVES)})")
    return f.moves(base, task)


def _field(move: str) -> str:
    return get_factor(move).fields[0]


def _key(cfg: RunConfig, task) -> str:
    """Configurations that evaluate the same thing share a key (seed and order are no-ops at 0-shot)."""
    d = cfg.model_dump(mode="json")
    d.pop("protocol", None)
    nshot = cfg.fewshot.num_fewshot if cfg.fewshot.num_fewshot is not None else task.default_num_fewshot
    d["fewshot"]["num_fewshot"] = nshot
    if nshot == 0:
        d["seeds"].pop("fewshot_seed"), d["fewshot"].pop("fewshot_order_seed")
    return json.dumps(d, sort_keys=True)


def candidates(base: RunConfig, moves: tuple[str, ...] = DEFAULT_MOVES) -> list[Candidate]:
    """The base, each protocol defining the task, one-factor moves, then two-factor moves — deduplicated.

    Raises:
        RepauditError: an unknown move or task.
    """
    from repaudit.run.runner import get_task

    task = get_task(base.task, base.task_config)
    out = [Candidate(label="base", kind="base", changes={}, config=base)]
    for path in available():
        proto = read_protocol(path)
        key = proto.task_key(base.task)
        if key is None or proto.tasks[key].repaudit_task is None:
            continue
        keep = {"limit": base.data.limit} if base.data.limit is not None else {}  # the user's cost cap wins
        fields, rec = apply_protocol(proto, base.task, keep)
        fields.pop("task")
        cfg = base.model_copy(update={**fields, "protocol": rec})
        changes = {k: v for k, v in fields.items() if field_value(base, k) != v}
        out.append(Candidate(label=f"protocol {proto.name}", kind="protocol", changes=changes, config=cfg))
    singles: list[tuple[str, Any]] = [(m, v) for m in moves for v in _move_values(m, base, task)]
    for m, v in singles:
        out.append(Candidate(label=f"{m}={v}", kind="one-factor", changes={m: v},
                             config=base.model_copy(update={_field(m): v})))
    for (m1, v1), (m2, v2) in itertools.combinations(singles, 2):
        if m1 == m2:
            continue
        out.append(Candidate(label=f"{m1}={v1}, {m2}={v2}", kind="two-factor", changes={m1: v1, m2: v2},
                             config=base.model_copy(update={_field(m1): v1, _field(m2): v2})))
    seen, unique = set(), []
    for c in out:
        k = _key(c.config, task)
        if k not in seen:
            seen.add(k)
            unique.append(c)
    return unique


def _views(c: Candidate, metrics, baseline: float | None, target: float, kinds: tuple[str, ...],
           metric: str | None, z: float = Z95) -> list[View]:
    """The views of one evaluated candidate: each raw aggregate in ``metrics`` (skipping normalised
    ones and those without a stderr), in each form of ``kinds``; ``baseline`` the all-doc chance score."""
    out = []
    for m in metrics:
        if m.variant.endswith(NORMALISED_SUFFIX) or m.stderr is None:
            continue
        key = metric_key(m.name, m.variant)
        if metric is not None and key != metric:
            continue
        lo, hi = _clipped(key, m.value, m.value - z * m.stderr, m.value + z * m.stderr)
        forms = [("raw", m.value, lo, hi)]
        if "leaderboard_normalised" in kinds and baseline is not None and 0 <= baseline < 1:
            n_value, n_lo, n_hi = (leaderboard_normalise(x, baseline) for x in (m.value, max(lo, 0.0), min(hi, 1.0)))
            forms.append(("leaderboard_normalised", n_value, n_lo, n_hi))
        for form, v, a, b in forms:
            if form not in kinds:
                continue
            out.append(View(label=c.label, kind=c.kind, changes=c.changes, metric=key, form=form, score=v, ci_low=a,
                            ci_high=b, distance=abs(v - target), contains=a <= target <= b, n=m.n))
    return out


def _clipped(key: str, value: float, lo: float, hi: float) -> tuple[float, float]:
    """``[lo, hi]`` cut to the range the metric can take (``[0, 1]`` for a proportion such as acc): a
    normal interval around a score near 0 or 1 crosses the bound (acc 0.005 on 200 docs: −0.0048), and a
    negative accuracy is a number no reader should be shown. Containment of a target inside the range is
    unchanged by the cut."""
    kind = metric_kind(key, [value])
    return (lo if kind.low is None else max(lo, kind.low)), (hi if kind.high is None else min(hi, kind.high))


def _dropped_views(c: Candidate, partial: dict[str, tuple], baseline: float | None, target: float) -> list[View]:
    """A dropped candidate's views: its mean so far and repeated interval, per score and form.

    Raises:
        ValueError: a leaderboard-normalised view without the chance baseline (such views exist only with one).
    """
    out = []
    for key, (mean, lo, hi, t) in partial.items():
        name, form = key.rsplit("|", 1)
        lo, hi = _clipped(name, mean, lo, hi)
        if form == "leaderboard_normalised":
            if baseline is None:
                raise ValueError("a leaderboard-normalised view needs the chance baseline")
            mean, lo, hi = (leaderboard_normalise(x, baseline) for x in (mean, lo, hi))
        out.append(View(label=c.label, kind=c.kind, changes=c.changes, metric=name, form=form, score=mean,
                        ci_low=lo, ci_high=hi, distance=abs(mean - target), contains=False, n=t, dropped=True))
    return out


def race_docs(base: RunConfig) -> tuple[list[int], float]:
    """The doc ids a full evaluation of ``base`` scores and their chance score (mean of 1/choices,
    rounded as the runner records it; 0 for generate_until), read without loading a model."""
    from repaudit.audit.sweep import base_docs
    from repaudit.run.normalise import random_baseline

    task, docs = base_docs(base)
    counts = [len(task.doc_to_choice(d.row)) for d in docs] if task.has_choices() else []
    return [d.doc_id for d in docs], round(random_baseline(counts), 6)


def _joined(recs: list):
    """One record's docs and aggregates from its rounds' records (docs in doc-id order)."""
    from repaudit.run.metrics import aggregate

    if len(recs) == 1:
        return recs[0]
    docs = sorted((d for r in recs for d in r.docs), key=lambda d: d.doc_id)
    variants = {m.name: m.variant for m in recs[0].metrics if not m.variant.endswith(NORMALISED_SUFFIX)}
    clusters = [d.cluster for d in docs]
    metrics = aggregate([d.metrics for d in docs], variants, None if all(c is None for c in clusters) else clusters)
    return recs[0].model_copy(update={"docs": docs, "metrics": metrics})


def _race_targets(target: float, kinds: tuple[str, ...], baseline: float, n: int,
                  tolerance: float, z: float) -> dict[str, tuple[float, float]]:
    """Per form, the all-doc raw means that could reproduce ``target`` (:func:`repaudit.audit.racing.matchable`).

    A leaderboard-normalised target ``t > 0`` is the raw score ``b + t(1 − b)`` (the map is monotone);
    ``t = 0`` is every raw score whose interval reaches the baseline or below.
    """
    out = {}
    if "raw" in kinds:
        out["raw"] = matchable(target, n, tolerance, z=z)
    if "leaderboard_normalised" in kinds and 0 <= baseline < 1:
        raw = baseline + target * (1 - baseline)
        out["leaderboard_normalised"] = matchable(raw, n, tolerance, floor=target <= 0, z=z)
    return out


def _forms(target_kind: str) -> tuple[str, ...]:
    """The score forms a ``--target-kind`` compares the target with.

    Raises:
        RepauditError: not raw, normalised or auto.
    """
    if target_kind not in ("raw", "normalised", "auto"):
        raise RepauditError(f"--target-kind must be raw, normalised or auto, got '{target_kind}'")
    return {"raw": ("raw",), "normalised": ("leaderboard_normalised",),
            "auto": ("raw", "leaderboard_normalised")}[target_kind]


def _all_views(todo: list[Candidate], recs: list[list], partial: dict[int, dict[str, tuple]], baseline: float | None,
               target: float, kinds: tuple[str, ...], metric: str | None, z: float) -> list[View]:
    """Every candidate's views: dropped ones' from their rounds so far, the others' from all docs (rounds joined)."""
    views: list[View] = []
    for i, (c, rounds) in enumerate(zip(todo, recs)):
        if i in partial:
            views += _dropped_views(c, partial[i], baseline, target)
        else:
            rec = _joined(rounds)
            b = rec.fingerprint.metric.random_baseline if baseline is None else baseline
            views += _views(c, rec.metrics, b, target, kinds, metric, z)
    return views


def reproduce(base: RunConfig, target: float, executor, target_kind: str = "auto", metric: str | None = None,
              budget: int = 40, moves: tuple[str, ...] = DEFAULT_MOVES, progress=None, race: bool = False,
              tolerance: float = 0.0, race_seed: int = 0, round_docs: int | None = None,
              stat: StatSettings | None = None) -> ReproduceResult:
    """Search configurations of ``base``'s model for one whose score's (1 − ``alpha``) interval holds ``target``.

    ``target`` is a fraction; ``target_kind`` ``raw``, ``normalised`` or ``auto`` (both forms,
    labelled); ``executor`` a :class:`repaudit.audit.executor.Executor` or ``RunConfig -> RunRecord``;
    ``progress(done, total)`` per configuration (per configuration and round with ``race``). At most
    ``budget`` configurations are evaluated, in search order.

    With ``race``, candidates advance through shared seeded rounds of ``round_docs`` docs and are
    dropped once they cannot match (:mod:`repaudit.audit.racing`; ``tolerance`` in fractions widens
    what counts as "could match"); survivors are scored on every doc, so their views, the verdict and
    the ranking among them are the full search's. ``stat``: its alpha (reproduce's defaults where None).

    Raises:
        RepauditError: a bad kind, budget, tolerance, move or metric name; UsageError: ``alpha`` out of range.
    """
    from repaudit.audit.executor import as_executor
    from repaudit.run.runner import check_config

    alpha = (stat := for_command("reproduce", stat)).alpha
    kinds, z = _forms(target_kind), z_of(alpha)
    if not 1 <= budget <= 10_000:
        raise RepauditError(f"--budget must be between 1 and 10000, got {budget}")
    t0 = time.perf_counter()
    found = candidates(base, moves)
    todo = found[:budget]
    for c in todo:
        check_config(c.config)
    ex = as_executor(executor)
    report = None
    if race:
        recs, report, partial = _race(todo, base, ex, target, kinds, metric, (tolerance, alpha), race_seed,
                                      round_docs, progress)
        baseline = report.random_baseline
    else:
        recs = [[r] for r in ex.map([c.config for c in todo], progress)]
        partial, baseline = {}, None
    views = _all_views(todo, recs, partial, baseline, target, kinds, metric, z)
    if metric is not None and not views:
        names = sorted({metric_key(m.name, m.variant) for r in recs for m in r[0].metrics
                        if not m.variant.endswith(NORMALISED_SUFFIX)})
        raise RepauditError(f"metric '{metric}' is not reported by {base.task}: choose one of {', '.join(names)}")
    views.sort(key=lambda v: (v.dropped, not v.contains, v.distance))
    computed = sum(1 for rounds in recs if any(r.timings.computed_batches > 0 for r in rounds))
    hits = [v for v in views if v.contains]
    verdict, recognised = _verdict(views, hits, target, target_kind, len(todo))
    if len(found) > len(todo):
        verdict += f" ({len(found) - len(todo)} more configurations lie beyond --budget {budget})"
    if report is not None and report.dropped:
        verdict += (f"; racing dropped {len(report.dropped)} of {len(todo)} configurations before the last doc "
                    f"({report.doc_evaluations:,} of {report.full_doc_evaluations:,} doc evaluations)")
    wall = round(time.perf_counter() - t0, 1)
    return ReproduceResult(task=base.task, target=target, target_kind=target_kind, metric=metric, candidates=len(found),
                           evaluated=len(todo), computed=computed, budget=budget, wall_s=wall, views=views,
                           verdict=verdict, reproduced=bool(hits), recognised_as=recognised, race=report, alpha=alpha,
                           stat_settings=stat)


def _verdict(views: list[View], hits: list[View], target: float, target_kind: str, searched: int
             ) -> tuple[str, str | None]:
    """The verdict sentence and, for ``auto``, the form the target most likely is (None otherwise)."""
    recognised = None
    pct = f"{100 * target:.2f}"
    if hits:
        best = hits[0]
        # auto: the form of the closest match names what the target most likely is
        recognised = best.form if target_kind == "auto" else None
        verdict = (f"{pct} is reproduced by {len({v.label for v in hits})} of {searched} configurations; closest: "
                   f"{best.label} ({best.metric}, {best.form}) {100 * best.score:.2f} "
                   f"[{100 * best.ci_low:.2f}, {100 * best.ci_high:.2f}]")
        if recognised is not None:
            other = sum(v.form != recognised for v in hits)
            verdict += (f"; the target reads as a {recognised.replace('_', '-')} score (closest match, "
                        f"{100 * best.distance:.2f} points away; {other} match(es) in the other form)")
        return verdict, recognised
    closest = views[0] if views else None
    verdict = f"none of the {searched} searched configurations reproduces {pct}"
    if closest is not None:
        verdict += (f"; closest: {closest.label} ({closest.metric}, {closest.form}) {100 * closest.score:.2f} "
                    f"[{100 * closest.ci_low:.2f}, {100 * closest.ci_high:.2f}], {100 * closest.distance:.2f} points "
                    "away" + (f" (dropped by the race after {closest.n} docs)" if closest.dropped else ""))
    return verdict, None


def _race(todo: list[Candidate], base: RunConfig, ex, target: float, kinds: tuple[str, ...], metric: str | None,
          slack: tuple[float, float], seed: int, round_docs: int | None, progress):
    """Run :func:`repaudit.audit.racing.race` over the candidates (``slack``: tolerance and alpha): (records per
    candidate, report, partial views)."""
    from repaudit.audit.racing import RaceScore, race

    tolerance, alpha = slack
    if not (0.0 <= tolerance <= 1.0):
        raise RepauditError(f"--tolerance must be between 0 and 100 points, got {100 * tolerance:g}")
    doc_ids, baseline = race_docs(base)
    targets = _race_targets(target, kinds, baseline, len(doc_ids), tolerance, z_of(alpha))
    from repaudit.audit.sequential import plan_rounds

    planned = len(plan_rounds(doc_ids, seed, round_docs))
    state = {"done": 0, "round": 0}

    def run_round(alive: list[int], chunk: list[int]) -> list:
        total = state["done"] + len(alive) * (planned - state["round"])  # shrinks as candidates drop
        tick = (lambda d, _t: progress(state["done"] + d, total)) if progress else None
        out = ex.map([todo[i].config.model_copy(update={"doc_ids": chunk}) for i in alive], tick)
        state["done"] += len(alive)
        state["round"] += 1
        return out

    def scores(rec) -> list[RaceScore]:
        out = []
        for m in rec.metrics:
            if m.variant.endswith(NORMALISED_SUFFIX):
                continue
            key = metric_key(m.name, m.variant)
            if metric is not None and key != metric:
                continue
            if m.variant == "subject_macro":  # not a per-doc mean: it can never rule a candidate out
                return []
            out.append(RaceScore(name=m.name, key=key))
        return out

    recs, report, partial = race([c.label for c in todo], doc_ids, targets, run_round, scores, seed=seed,
                                 round_docs=round_docs, alpha=alpha, tolerance=tolerance, random_baseline=baseline)
    return [recs[i] for i in range(len(todo))], report, partial
