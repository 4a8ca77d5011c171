"""``repaudit gate``: a regression gate over a comparison — non-inferiority, equivalence (TOST) or
superiority per task and metric, multiplicity control, and one decision: GO, NO-GO or INCONCLUSIVE.

Each score row of :func:`repaudit.audit.compare.compare` that a policy row matches is *oriented* by the
metric's direction (``d`` = Δ when higher is better, −Δ when lower is better; in points for proportions,
the metric's own unit otherwise) and tested at level α with its (1 − 2α) interval (paired, clustered
where docs carry clusters; unpaired from the recorded stderrs, and said, where a run has no per-doc
values):

* **non_inferiority** (margin m): PASS when ``lo > −m``; FAIL when ``hi < −m``;
* **equivalence** (TOST, margin m; Schuirmann 1987): PASS when ``−m < lo`` and ``hi < m``; FAIL when the
  interval lies entirely outside ``[−m, m]``;
* **superiority** (gain g ≥ 0): PASS when ``lo > g``; FAIL when ``hi < g``;
* otherwise INCONCLUSIVE, with the number of docs that would decide it at the observed d and spread — or, where
  that is more than the runs scored, that their docs cannot decide it and what would (repeats, more docs).

Each decision is the one-sided test of its claim (``p_pass`` for PASS, ``p_fail`` for FAIL; TOST takes
the larger of its two one-sided p): for a 0/1 metric on paired docs without clusters, Tango's score test
for a paired difference of proportions against the margin, and the interval that inverts it (Tango 1998;
the Wald interval loses its level when flips are rare — ``bench/gate_simulation.py`` shows both); for
everything else the Wald z with the row's standard error. With ``multiplicity`` (``holm``: Holm 1979, family-wise error;
``bh``: Benjamini & Hochberg 1995, false discovery rate) the PASS claims of all gated rows are one
family and the FAIL claims another; a claim is decided when its adjusted p < α, so with ``none`` the
interval rule above holds exactly. Rows the comparison cannot judge (different doc sets, no noise
estimate, no such metric) are INCONCLUSIVE with the reason.

Overall: **NO-GO** if a critical row FAILs; **GO** if every critical row PASSes and no supporting row
FAILs; otherwise **INCONCLUSIVE**. Advisory rows never decide.
"""

from __future__ import annotations

import fnmatch
import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from scipy.special import ndtr, ndtri

from repaudit.audit.compare import Comparison, FactorRow, ScoreRow
from repaudit.audit.intervals import stat_label
from repaudit.audit.mde import WHAT_WOULD, RowPower
from repaudit.audit.mechanisms import Mechanism
from repaudit.audit.stat_settings import Adjust, Alpha, StatSettings, for_command
from repaudit.audit.stats import benjamini_hochberg, holm, paired_score_interval, paired_score_z
from repaudit.boundary import InputError, read_yaml, validate
from repaudit.errors import UsageError

Test = Literal["equivalence", "non_inferiority", "superiority"]
Tier = Literal["critical", "supporting", "advisory"]
Decision = Literal["PASS", "FAIL", "INCONCLUSIVE"]


class PolicyRow(BaseModel):
    """One rule: which task×metric rows (globs after compare's task pairing) get which test."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    task: str = Field(min_length=1, max_length=500)
    """Glob over the task names, as compare pairs them."""
    metric: str = Field("*", min_length=1, max_length=500)
    """Glob over the metric key compare uses (``acc``, ``exact_match,strict-match``; ``acc,none`` matches too)."""
    test: Test
    """equivalence (TOST), non_inferiority or superiority."""
    margin: float = Field(ge=0, le=1e9, allow_inf_nan=False)
    """The margin m (superiority: the gain g) in the metric's display unit: points for proportions and
    percentages."""
    tier: Tier = "critical"
    """critical (a FAIL is NO-GO), supporting (a FAIL blocks GO) or advisory (never decides)."""
    direction: Literal["higher", "lower"] | None = None
    """Which way is better, over the metric's own (needed for a one-sided test of a metric whose direction is
    unknown); None: the metric's own."""


class Policy(BaseModel):
    """A gate policy (YAML): α, the multiplicity adjustment and the rules, first match wins."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    alpha: Alpha = 0.05
    """Level of each one-sided claim; intervals are (1 − 2α). In (0, 0.5), as ``--alpha`` on every command
    (:attr:`~repaudit.audit.stat_settings.StatSettings.alpha` says why)."""
    multiplicity: Adjust = "holm"
    """Adjustment over the PASS claims of all gated rows (one family) and the FAIL claims (another): holm, bh or
    none (the command line's ``--adjust``)."""
    rows: list[PolicyRow] = Field(min_length=1, max_length=10_000)
    """The rules, first match wins; at least one critical."""

    @model_validator(mode="after")
    def _one_critical(self) -> Policy:
        if not any(r.tier == "critical" for r in self.rows):
            raise ValueError("a policy needs at least one critical row (advisory rows never decide, and a gate "
                             "of supporting rows alone could pass on nothing)")
        return self


def read_policy(path: Path) -> Policy:
    """Read and validate a policy file (limits first, then the schema; an unknown key is an error).

    Raises:
        InputError: unreadable, not YAML, or not a valid policy (the JSON path is named).
    """
    data = read_yaml(Path(path), "policy file")
    if not isinstance(data, dict):
        raise InputError(path, None, "is not a gate policy (a YAML mapping with alpha, multiplicity, rows)")
    policy, _ = validate(Policy, data, Path(path), schema="gate policy")
    return policy


def _margin_bound() -> float:
    """The largest margin a policy row takes (:attr:`PolicyRow.margin`'s own bound, read from its declaration)."""
    return next(float(m.le) for m in PolicyRow.model_fields["margin"].metadata if getattr(m, "le", None) is not None)


def inline_policy(max_drop: float | None, margin: float | None, stat: StatSettings | None = None) -> Policy:
    """``--max-drop PTS`` (non-inferiority) or ``--margin PTS`` (equivalence) on every row, all critical, at
    ``stat``'s ``alpha`` and ``adjust`` (gate's defaults where None: 0.05, holm).

    Raises:
        UsageError: neither or both given, a value that is negative, not finite or over a policy row's bound
            (1e9).
    """
    if max_drop is not None and margin is not None:
        raise UsageError("give --max-drop PTS (non-inferiority) or --margin PTS (equivalence), not both: one "
                         "test per row; a policy file (--policy) can give different tests to different rows")
    if max_drop is None and margin is None:
        raise UsageError("give a policy: --policy FILE, or one of --max-drop PTS (non-inferiority) and "
                         "--margin PTS (equivalence) for every task and metric")
    value = max_drop if max_drop is not None else margin
    assert value is not None  # one of the two was given (checked above)
    top = _margin_bound()
    if not (math.isfinite(value) and 0 <= value <= top):
        raise UsageError(f"{'--max-drop' if max_drop is not None else '--margin'} must be a number of points from 0 "
                         f"to {top:g}, got {value:g}")
    stat = for_command("gate", stat)
    test = "non_inferiority" if max_drop is not None else "equivalence"
    return Policy(alpha=stat.alpha, multiplicity=stat.adjust, rows=[PolicyRow(task="*", test=test, margin=value)])


class GateRow(BaseModel):
    """One gated task×metric row: the oriented difference d (positive = better) in ``unit``, its (1 − 2α)
    interval, the claim's raw and adjusted p, the decision and why."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    task: str
    """The task (a rule that matched no row: its task glob)."""
    metric: str
    """The metric key (a rule that matched no row: its metric glob)."""
    test: Test
    """The test the rule gives the row."""
    tier: Tier
    """The rule's tier."""
    margin: float
    """The rule's margin (superiority: the gain), in ``unit``."""
    unit: str
    """compare's display unit of the row (``pts`` for proportions and percentages); empty for a rule that matched
    no row."""
    direction: str
    """The direction the row was oriented by (the rule's, else the metric's): higher, lower or unknown; empty for a
    rule that matched no row."""
    d: float | None
    """The oriented difference in ``unit``: Δ where higher is better, −Δ where lower is; positive = better. None:
    no test."""
    delta: float | None = None
    """compare's Δ = B − A of the row (not oriented), also where no test could be run; None: no row matched."""
    ci_low: float | None
    """Lower bound of the (1 − 2α) interval of ``d``; None: no test."""
    ci_high: float | None
    """Upper bound of the (1 − 2α) interval of ``d``; None: no test."""
    se: float | None
    """compare's standard error of Δ, in ``unit``; None: compare gives no test."""
    method: str
    """compare's method of the row (``paired_bootstrap``, ``unpaired_newcombe``, ``unpaired_stderr``, …); ``none``: no
    test."""
    test_used: str = ""
    """``score test (Tango 1998)`` for 0/1 metrics on paired docs without clusters, else ``z test``; empty: no
    test."""
    n_docs: int
    """Docs the row rests on: the shared docs, else the smaller of the runs' doc counts; 0: not known."""
    p_pass: float | None = None
    """One-sided p of the PASS claim, before adjustment; None: no test."""
    p_fail: float | None = None
    """One-sided p of the FAIL claim, before adjustment; None: no test."""
    p_raw: float | None = None
    """The p of the claim that decided the row (PASS's for an inconclusive one), before adjustment; None: no
    test."""
    p_adjusted: float | None = None
    """``p_raw`` after the policy's multiplicity adjustment; None: no test."""
    decision: Decision
    """PASS, FAIL or INCONCLUSIVE."""
    reason: str = ""
    """Why a row is inconclusive or how it was tested; empty: nothing to say."""
    docs_to_decide: int | None = None
    """Inconclusive tested rows: about how many docs would decide it at the observed d and spread (the interval's
    half-width on the deciding side shrinking as 1/√n); None otherwise or when no number would. ``reason`` says
    when that is more than the runs scored, and what would decide it instead."""
    factors: list[FactorRow] = []
    """FAIL and INCONCLUSIVE rows: the factors that differ for this task (run-level ones included)."""
    mechanisms: list[Mechanism] = []
    """FAIL and INCONCLUSIVE rows: the likely mechanisms compare names for this task."""
    harmful: list[int] = []
    """FAIL and INCONCLUSIVE rows: doc ids that flipped right → wrong (not near-ties)."""
    beneficial: list[int] = []
    """FAIL and INCONCLUSIVE rows: doc ids that flipped wrong → right (not near-ties)."""
    churn: list[int] = []
    """FAIL and INCONCLUSIVE rows: doc ids that flipped either way where a run's margin by the metric is at most
    ``tie_eps`` nats (acc: its top two choices within ``tie_eps``; acc_norm: by its normalised scores)."""
    keys: dict[int, str] = {}
    """Flipped doc id → the harness's own sample id, where it has one (inspect)."""
    power: RowPower | None = None
    """compare's power record of the row (paired rows): the smallest move its two-sided test detects with 80 % power,
    the effective docs, the docs a 1- and 3-point move need; None: not paired."""


class GateResult(BaseModel):
    """The gate's decision, its rows, and (for FAIL/INCONCLUSIVE rows) the comparison that explains them."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    decision: Literal["GO", "NO-GO", "INCONCLUSIVE"]
    """NO-GO if a critical row FAILs; GO if every critical row PASSes and no supporting row FAILs; else
    INCONCLUSIVE."""
    summary: str
    """One line: the decision and the rows per tier and decision, α and the adjustment."""
    policy: Policy
    """The policy applied."""
    stat_settings: StatSettings | None = None
    """How the intervals and tests were made: the policy's ``alpha`` and ``multiplicity`` (as ``adjust``), the
    comparison's bootstrap and near-tie settings; None: written by a repaudit that did not record it."""
    rows: list[GateRow]
    """One row per gated score row, and one per rule that matched none."""
    not_gated: list[str]
    """``task metric`` of the score rows no rule matched."""
    comparison: Comparison
    """The comparison the gate was applied to."""
    attribution: dict | None = None
    """``--attribute``: the attribution of the first failing or inconclusive tested row (an
    :class:`~repaudit.audit.attribution.AttributionReport` as JSON); None: not asked, or none run (``notes`` says
    why)."""
    notes: list[str] = []
    """Notes on what ``--attribute`` did."""


def _match(row: ScoreRow, rule: PolicyRow) -> bool:
    """Globs over the task and the metric key (``acc``, ``exact_match,strict-match``); lm-eval's spelling of
    the unfiltered key (``acc,none``) matches too."""
    keys = (row.metric, f"{row.metric},none") if "," not in row.metric else (row.metric,)
    return fnmatch.fnmatchcase(row.task, rule.task) and any(fnmatch.fnmatchcase(k, rule.metric) for k in keys)


def _claims(test: Test, z_at) -> tuple[float, float]:
    """One-sided p of the PASS claim and of the FAIL claim; ``z_at(δ0)`` is the test statistic of H0: d = δ0
    (large when d lies above δ0)."""
    sf, cdf = (lambda x: ndtr(-x)), ndtr
    if test in ("non_inferiority", "superiority"):  # PASS: d > δ0; FAIL: d < δ0
        z = z_at(None)
        return float(sf(z)), float(cdf(z))
    lo, hi = z_at(-1), z_at(1)  # TOST: PASS when d > −m and d < m; FAIL when d < −m or d > m
    return max(float(sf(lo)), float(cdf(hi))), min(float(cdf(lo)), float(sf(hi)))


def _statistic(r: ScoreRow, test: Test, margin: float, sign: float, alpha: float):
    """``(z_at, d, interval, how)``: the test statistic as a function of the margin's side (``None``: the
    one-sided test's own δ0, ±1: −m / +m), the oriented difference and its (1 − 2α) interval.

    0/1 metrics on paired docs without clusters use Tango's score test and its inverted interval (it keeps
    its level when flips are rare); everything else the Wald z with the row's (clustered or unpaired) SE.
    """
    delta0 = {"non_inferiority": -margin, "superiority": margin}.get(test, margin)
    if r.method == "paired_score":  # a 0/1 metric on paired docs without clusters (scores.py)
        b, c = (r.right_to_wrong, r.wrong_to_right) if sign > 0 else (r.wrong_to_right, r.right_to_wrong)
        n = r.n_paired
        if b is None or c is None or n is None:  # scores.py counts the flips of every paired_score row
            raise ValueError(f"{r.task} {r.metric}: a paired_score row without its flip counts")

        def score_z_at(side):
            d0 = delta0 if side is None else side * margin
            return paired_score_z(b, c, n, max(-0.999999, min(0.999999, d0 / 100)))

        lo, hi = paired_score_interval(b, c, n, alpha)
        return score_z_at, 100 * (c - b) / n, (100 * lo, 100 * hi), stat_label("gate_score")
    d, se = sign * r.delta, r.se
    if se is None:  # _gate_row tests only rows with an SE
        raise ValueError(f"{r.task} {r.metric}: a row without its standard error")
    zq = float(ndtri(1 - alpha))

    def z_at(side):
        return (d - (delta0 if side is None else side * margin)) / se

    return z_at, d, (d - zq * se, d + zq * se), stat_label("gate_z")


def docs_to_decide(test: Test, d: float, lo: float, hi: float, n: int, m: float) -> tuple[int | None, str]:
    """Docs (same per-doc noise, same observed d) at which the row's interval would decide it, and which way. The
    half-width ``h`` on the side that decides shrinks as 1/√n, so it takes ``n · (h / gap)²`` docs, ``gap`` the
    distance from d to the margin (the interval's own ends, so Tango's score interval and the z interval alike);
    ``None`` when d sits on the margin or the interval has no width."""
    below, above = d - lo, hi - d
    if test == "equivalence":
        inside = abs(d) < m
        gap, h, way = abs(m - abs(d)), (max(below, above) if inside else below if d > 0 else above), (
            "PASS" if inside else "FAIL")
    else:
        bound = -m if test == "non_inferiority" else m
        gap, h, way = abs(d - bound), (below if d > bound else above), ("PASS" if d > bound else "FAIL")
    if not (math.isfinite(h) and h > 0):
        return None, "no doc differs between the runs, so the spread to project from is 0"
    if gap == 0:
        return None, "d sits on the margin: no number of docs decides it"
    return max(n, math.ceil(n * (h / gap) ** 2)), way


def _undecided(r: GateRow) -> str:
    """Why an inconclusive row's docs could not decide it, and what would: the docs it would take, where they are
    more than these runs scored, with what to do instead (:data:`~repaudit.audit.mde.WHAT_WOULD`)."""
    if r.d is None or r.ci_low is None or r.ci_high is None:  # a tested row has its d and interval (_gate_row)
        raise ValueError(f"{r.task} {r.metric}: an untested row has no docs to decide it")
    n, way = docs_to_decide(r.test, r.d, r.ci_low, r.ci_high, r.n_docs, r.margin)
    r.docs_to_decide = n
    if n is None:
        return way
    have = max((r.power.docs_available or 0) if r.power else 0, r.n_docs)
    if n <= have:
        return f"about {n:,} docs would decide it ({way}, at the observed difference and spread)"
    scored = (f"even all {have:,} docs the larger run scored could not decide it (this row is paired on {r.n_docs:,})"
              if have > r.n_docs else f"the {r.n_docs:,} docs this row is paired on cannot decide it")
    return f"{scored} (at the observed difference and spread about {n:,} would: {way}); {WHAT_WOULD}"


def _gate_row(r: ScoreRow, rule: PolicyRow, alpha: float) -> GateRow:
    direction = rule.direction or r.direction
    n_docs = r.n_paired if r.n_paired else min((x for x in (r.n_a, r.n_b) if x is not None), default=0)
    base = dict(task=r.task, metric=r.metric, test=rule.test, tier=rule.tier, margin=rule.margin, unit=r.unit,
                direction=direction, method=r.method, n_docs=n_docs, delta=r.delta, power=r.power)
    binary = r.method == "paired_score"
    if r.verdict == "not comparable" or r.method == "none" or r.se is None or not math.isfinite(r.se) or (
            r.se <= 0 and not binary):  # the score test of a 0/1 metric needs no spread (no flip is evidence too)
        return GateRow(**base, d=None, ci_low=None, ci_high=None, se=None, decision="INCONCLUSIVE",
                       reason=f"compare gives no test: {r.note or r.verdict}")
    if direction not in ("higher", "lower") and rule.test != "equivalence":
        return GateRow(**base, d=None, ci_low=None, ci_high=None, se=r.se, decision="INCONCLUSIVE",
                       reason="the metric's direction is unknown: set direction: higher|lower in the policy row")
    sign = -1.0 if direction == "lower" else 1.0
    z_at, d, (lo, hi), how = _statistic(r, rule.test, rule.margin, sign, alpha)
    p_pass, p_fail = _claims(rule.test, z_at)
    note = "unpaired: a run has no per-doc values" if r.method.startswith("unpaired") else ""
    return GateRow(**base, d=d, ci_low=lo, ci_high=hi, se=r.se, p_pass=p_pass, p_fail=p_fail, test_used=how,
                   decision="INCONCLUSIVE", reason=note)


def gate(comparison: Comparison, policy: Policy) -> GateResult:
    """Apply ``policy`` to a comparison: the first matching rule gates each score row (the others are listed
    as not gated); a rule that matches no row is an INCONCLUSIVE row of its own tier. FAIL and
    INCONCLUSIVE rows carry their explanation (:func:`explain`)."""
    a = policy.alpha
    rows: list[GateRow] = []
    not_gated = []
    for r in comparison.scores:
        rule = next((x for x in policy.rows if _match(r, x)), None)
        if rule is None:
            not_gated.append(f"{r.task} {r.metric}")
        else:
            rows.append(_gate_row(r, rule, a))
    for rule in policy.rows:  # a rule that gates nothing: a critical task is missing from the runs
        if not any(_match(r, rule) for r in comparison.scores):
            rows.append(GateRow(task=rule.task, metric=rule.metric, test=rule.test, tier=rule.tier,
                                margin=rule.margin, unit="", direction="", d=None, ci_low=None, ci_high=None,
                                se=None, method="none", n_docs=0, decision="INCONCLUSIVE",
                                reason="no task×metric of the runs matches this policy row"))
    _decide(rows, a, policy.multiplicity)
    for row in rows:
        if row.decision != "PASS":
            explain(row, comparison)
    decision = _overall(rows)
    stat = for_command("gate", comparison.stat_settings, alpha=policy.alpha, adjust=policy.multiplicity)
    result = GateResult(decision=decision, summary=_summary(decision, rows, policy), policy=policy,
                        stat_settings=stat, rows=rows, not_gated=not_gated, comparison=comparison)
    # the docs a row rests on, where they are a subset of what the runs scored: compare's rule, said in every format
    gated = {(r.task, r.metric) for r in rows}
    for task in dict.fromkeys(r.task for r in comparison.scores if r.subset and (r.task, r.metric) in gated):
        r = next(x for x in comparison.scores if x.task == task and x.subset)
        result.notes.append(f"{task}: the rows are on the {r.n_paired} docs both runs scored (A's file has {r.n_a}, "
                            f"B's {r.n_b})")
    return result


def _decide(rows: list[GateRow], alpha: float, multiplicity: str) -> None:
    # (a tested row has both claims' p: _claims gives them together)
    tested = [(r, p, f) for r in rows if (p := r.p_pass) is not None and (f := r.p_fail) is not None]
    adjust = {"holm": holm, "bh": benjamini_hochberg}.get(multiplicity, lambda ps: list(ps))
    adj_pass = adjust([p for _, p, _ in tested])
    adj_fail = adjust([f for _, _, f in tested])
    for (r, p_pass, p_fail), pp, pf in zip(tested, adj_pass, adj_fail):
        if pp < alpha:
            r.decision, r.p_raw, r.p_adjusted = "PASS", p_pass, pp
        elif pf < alpha:
            r.decision, r.p_raw, r.p_adjusted = "FAIL", p_fail, pf
        else:
            r.p_raw, r.p_adjusted = p_pass, pp
            alone = "PASS" if p_pass < alpha else "FAIL" if p_fail < alpha else None
            why = (f"alone it would {alone} (p {min(p_pass, p_fail):.3g}), but not after the {multiplicity} "
                   f"adjustment over {len(tested)} claims" if alone else _undecided(r))
            r.reason = "; ".join(x for x in (r.reason, why) if x)


def _overall(rows: list[GateRow]) -> Literal["GO", "NO-GO", "INCONCLUSIVE"]:
    critical = [r for r in rows if r.tier == "critical"]
    if any(r.decision == "FAIL" for r in critical):
        return "NO-GO"
    if critical and all(r.decision == "PASS" for r in critical) and not any(
            r.decision == "FAIL" for r in rows if r.tier == "supporting"):
        return "GO"
    return "INCONCLUSIVE"


def _summary(decision: str, rows: list[GateRow], policy: Policy) -> str:
    def count(tier: str, what: str) -> int:
        return sum(r.tier == tier and r.decision == what for r in rows)

    parts = [f"{t}: {count(t, 'PASS')} pass, {count(t, 'FAIL')} fail, {count(t, 'INCONCLUSIVE')} inconclusive"
             for t in ("critical", "supporting", "advisory") if any(r.tier == t for r in rows)]
    return (f"{decision} — " + "; ".join(parts) + f" (α = {policy.alpha:g}, "
            f"{ {'holm': 'Holm', 'bh': 'Benjamini–Hochberg', 'none': 'no'}[policy.multiplicity]} adjustment)")


def explain(row: GateRow, c: Comparison) -> None:
    """Fill ``row``'s why-fields from the comparison, in place: differing factors of its task (run-level ones
    included), likely mechanisms of its task, and its flips split into harmful, beneficial and churn."""
    row.factors = [f for f in c.differing() if f.task == row.task]
    row.mechanisms = [m for m in c.mechanisms if m.task == row.task]
    score = next((s for s in c.scores if s.task == row.task and s.metric == row.metric), None)
    classes = (score.flip_ids if score else None) or {}
    row.harmful, row.beneficial, row.churn = (classes.get(k, []) for k in ("harmful", "beneficial", "churn"))
    row.keys = {f.doc_id: f.key for f in c.flips if f.task == row.task and f.metric == row.metric and f.key}
