"""``repaudit reproduce``: which settings of this model give a reported number?

Search order: every protocol in ``fingerprints/`` that defines the task, then one-factor moves
from the base configuration, then two-factor moves (pairs of one-factor moves of different
factors), up to a budget of configurations. Every configuration runs through the batch store
(interruptible, resumable; a repeat costs no forward pass). Metric variants (acc, acc_norm,
acc_bytes, MMLU's micro / subject_macro) and the score form (raw, leaderboard-normalised) are
read from the same inference.

A configuration *reproduces* the target when the target lies in its score's 95 % interval,
``value ± 1.96 · stderr`` with lm-eval's ``stderr`` (``stdev(ddof=1)/sqrt(n)``); the
leaderboard-normalised interval is the raw one's endpoints normalised (the map is monotone).
"""

from __future__ import annotations

import itertools
import time
from typing import Any, Literal

from pydantic import BaseModel

from repaudit.errors import RepauditError
from repaudit.importers.comparable import metric_key
from repaudit.run.config import RunConfig
from repaudit.run.factors import get as get_factor
from repaudit.run.factors import moves as registry_moves
from repaudit.run.metrics import NORMALISED_SUFFIX
from repaudit.run.normalise import leaderboard_normalise
from repaudit.run.protocol import apply_protocol, available, read_protocol

Z95 = 1.959963984540054

#: one-factor moves tried by default, and every move ``--moves`` may name (views of :mod:`repaudit.run.factors`)
DEFAULT_MOVES = registry_moves(default_only=True)
ALL_MOVES = registry_moves()


class Candidate(BaseModel):
    """A configuration to evaluate: how it was found (``kind``), its differences from the base."""

    label: str
    kind: Literal["base", "protocol", "one-factor", "two-factor"]
    changes: dict[str, Any]
    config: RunConfig


class View(BaseModel):
    """One score of one evaluated configuration, in one form, with its 95 % interval (fractions)."""

    label: str
    kind: str
    changes: dict[str, Any]
    metric: str
    form: Literal["raw", "leaderboard_normalised"]
    score: float
    ci_low: float
    ci_high: float
    distance: float
    contains: bool
    n: int


class ReproduceResult(BaseModel):
    """Everything ``reproduce`` found: the ranked views, counts and the verdict."""

    task: str
    target: float
    target_kind: str
    metric: str | None
    candidates: int
    evaluated: int
    computed: int
    budget: int
    wall_s: float
    views: list[View]
    verdict: str
    reproduced: bool
    recognised_as: str | None


def parse_target(text: str | float) -> float:
    """A reported score as a fraction: values above 1 are percentages (``41.3`` -> 0.413).

    Raises:
        RepauditError: not a number, or outside [0, 100].
    """
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise RepauditError(f"--target must be a number (41.3 or 0.413), got '{text}'") from None
    if not 0.0 <= v <= 100.0 or v != v:
        raise RepauditError(f"--target must be between 0 and 100, got {text}")
    return v / 100.0 if v > 1.0 else v


def _move_values(move: str, base: RunConfig, task) -> list[Any]:
    """The values ``move`` tries from ``base`` (the factor's own ``moves`` in the registry).

    Raises:
        RepauditError: a factor reproduce cannot move (with the reason).
    """
    try:
        f = get_factor(move)
    except KeyError:
        raise RepauditError(f"unknown move '{move}': choose from {', '.join(ALL_MOVES)}") from None
    if not f.supports("reproduce"):
        raise RepauditError(f"reproduce does not move {move}: {f.why_not.get('reproduce', 'not a move')} "
                            f"(moves: {', '.join(ALL_MOVES)})")
    return f.moves(base, task)


def _field(move: str) -> str:
    return get_factor(move).fields[0]


def _key(cfg: RunConfig, task) -> str:
    """Configurations that evaluate the same thing share a key (seed and order are no-ops at 0-shot)."""
    d = cfg.model_dump(mode="json", exclude={"protocol"})
    d["num_fewshot"] = cfg.num_fewshot if cfg.num_fewshot is not None else task.default_num_fewshot
    if d["num_fewshot"] == 0:
        d.pop("fewshot_seed"), d.pop("fewshot_order_seed")
    return repr(sorted(d.items()))


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
        if proto.task_key(base.task) is None or proto.tasks[proto.task_key(base.task)].repaudit_task is None:
            continue
        keep = {"limit": base.limit} if base.limit is not None else {}  # the user's cost cap wins
        fields, rec = apply_protocol(proto, base.task, keep)
        fields.pop("task")
        cfg = base.model_copy(update={**fields, "protocol": rec})
        changes = {k: v for k, v in fields.items() if getattr(base, k) != v}
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


def _views(c: Candidate, rec, target: float, kinds: tuple[str, ...], metric: str | None) -> list[View]:
    out = []
    baseline = rec.fingerprint.metric.random_baseline
    for m in rec.metrics:
        if m.variant.endswith(NORMALISED_SUFFIX) or m.stderr is None:
            continue
        key = metric_key(m.name, m.variant)
        if metric is not None and key != metric:
            continue
        lo, hi = m.value - Z95 * m.stderr, m.value + Z95 * m.stderr
        forms = [("raw", m.value, lo, hi)]
        if "leaderboard_normalised" in kinds and baseline is not None and 0 <= baseline < 1:
            nz = [leaderboard_normalise(x, baseline) for x in (m.value, max(lo, 0.0), min(hi, 1.0))]
            forms.append(("leaderboard_normalised", *nz))
        for form, v, a, b in forms:
            if form not in kinds:
                continue
            out.append(View(label=c.label, kind=c.kind, changes=c.changes, metric=key, form=form, score=v, ci_low=a,
                            ci_high=b, distance=abs(v - target), contains=a <= target <= b, n=m.n))
    return out


def reproduce(base: RunConfig, target: float, executor, target_kind: str = "auto", metric: str | None = None,
              budget: int = 40, moves: tuple[str, ...] = DEFAULT_MOVES, progress=None) -> ReproduceResult:
    """Search configurations of ``base``'s model for one whose score's 95 % interval holds ``target``.

    ``target`` is a fraction; ``target_kind`` ``raw``, ``normalised`` or ``auto`` (both forms,
    labelled); ``executor`` a :class:`repaudit.audit.executor.Executor` or ``RunConfig -> RunRecord``;
    ``progress(done, total)`` per configuration. At most ``budget`` configurations are evaluated, in
    search order.

    Raises:
        RepauditError: a bad kind, budget, move or metric name.
    """
    from repaudit.audit.executor import as_executor
    from repaudit.run.runner import check_config

    if target_kind not in ("raw", "normalised", "auto"):
        raise RepauditError(f"--target-kind must be raw, normalised or auto, got '{target_kind}'")
    if not 1 <= budget <= 10_000:
        raise RepauditError(f"--budget must be between 1 and 10000, got {budget}")
    kinds = {"raw": ("raw",), "normalised": ("leaderboard_normalised",),
             "auto": ("raw", "leaderboard_normalised")}[target_kind]
    t0 = time.perf_counter()
    found = candidates(base, moves)
    todo = found[:budget]
    for c in todo:
        check_config(c.config)
    recs = as_executor(executor).map([c.config for c in todo], progress)
    views: list[View] = []
    for c, rec in zip(todo, recs):
        views += _views(c, rec, target, kinds, metric)
    if metric is not None and not views:
        names = sorted({metric_key(m.name, m.variant) for r in recs for m in r.metrics
                        if not m.variant.endswith(NORMALISED_SUFFIX)})
        raise RepauditError(f"metric '{metric}' is not reported by {base.task}: choose one of {', '.join(names)}")
    views.sort(key=lambda v: (not v.contains, v.distance))
    computed = sum(1 for r in recs if r.timings.computed_batches > 0)
    hits = [v for v in views if v.contains]
    recognised = None
    pct = f"{100 * target:.2f}"
    if hits:
        best = hits[0]
        # auto: the form of the closest match names what the target most likely is
        recognised = best.form if target_kind == "auto" else None
        verdict = (f"{pct} is reproduced by {len({v.label for v in hits})} of {len(todo)} configurations; closest: "
                   f"{best.label} ({best.metric}, {best.form}) {100 * best.score:.2f} "
                   f"[{100 * best.ci_low:.2f}, {100 * best.ci_high:.2f}]")
        if recognised is not None:
            other = sum(v.form != recognised for v in hits)
            verdict += (f"; the target reads as a {recognised.replace('_', '-')} score (closest match, "
                        f"{100 * best.distance:.2f} points away; {other} match(es) in the other form)")
    else:
        best = views[0] if views else None
        verdict = (f"none of the {len(todo)} searched configurations reproduces {pct}"
                   + (f"; closest: {best.label} ({best.metric}, {best.form}) {100 * best.score:.2f} "
                      f"[{100 * best.ci_low:.2f}, {100 * best.ci_high:.2f}], {100 * best.distance:.2f} points away"
                      if best else ""))
    if len(found) > len(todo):
        verdict += f" ({len(found) - len(todo)} more configurations lie beyond --budget {budget})"
    return ReproduceResult(task=base.task, target=target, target_kind=target_kind, metric=metric,
                           candidates=len(found), evaluated=len(todo), computed=computed, budget=budget,
                           wall_s=round(time.perf_counter() - t0, 1), views=views, verdict=verdict,
                           reproduced=bool(hits), recognised_as=recognised)
