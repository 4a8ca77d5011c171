"""The verdicts of a comparison's score rows: their p-values adjusted for multiplicity over each family (task rows,
group rows), *significant* or *within noise* by the adjusted p, and a note where the unadjusted interval and the
verdict point different ways."""

from __future__ import annotations

import math

from repaudit.audit.scores import ScoreRow
from repaudit.audit.stat_settings import ADJUST, StatSettings
from repaudit.audit.stats import benjamini_hochberg, holm, level
from repaudit.importers.metric_kinds import moved


def judge(rows: list[ScoreRow], stat: StatSettings) -> None:
    """Adjust the p-values of the tested rows for multiplicity and set each row's verdict, in place.

    Task rows and group rows (aggregates of task rows) are two families, so a group never counts
    twice with its own subtasks. ``stat.adjust`` is ``holm`` (family-wise error; Holm 1979), ``bh``
    (false discovery rate; Benjamini & Hochberg 1995) or ``none``. A row is *significant* when its
    adjusted p is below ``stat.alpha``; its ``moved`` says better/worse by the metric's direction.
    """
    alpha, adjust = stat.alpha, stat.adjust
    if adjust is None:  # compare's statistics (for_command) always name one
        raise ValueError("verdicts need a multiplicity adjustment: holm, bh or none")
    for family in (False, True):
        tested = [r for r in rows if r.is_group == family and r.method != "none" and r.p_value is not None
                  and math.isfinite(r.p_value)]
        ps = [p for r in tested if (p := r.p_value) is not None]  # (all of them)
        adj = holm(ps) if adjust == "holm" else benjamini_hochberg(ps) if adjust == "bh" else ps
        for r, p in zip(tested, adj):
            r.p_adjusted = p
            r.verdict = "significant" if p < alpha else "within noise"
            r.moved = moved(r.delta, r.direction) if r.verdict == "significant" else None
            _say_where_interval_and_verdict_part(r, alpha, adjust, len(tested))
        for r in rows:
            if r.is_group == family and r.method != "none" and r not in tested:
                r.verdict = "no verdict"
                r.note = "; ".join(x for x in (r.note, "no p-value (the interval has no spread)") if x)


def _say_where_interval_and_verdict_part(r: ScoreRow, alpha: float, adjust: str, n_tested: int) -> None:
    """Append to ``r.note`` when its unadjusted interval and its verdict point different ways: the interval
    excludes 0 but the adjusted p does not reach ``alpha`` (the multiplicity adjustment, or the test and the
    interval disagreeing at the margin), or the reverse. A reader then sees why, instead of two answers."""
    if r.ci_low is None or r.ci_high is None or r.p_adjusted is None:
        return
    excludes = r.ci_low > 0 or r.ci_high < 0
    adjusted = "not adjusted" if adjust == "none" else f"{ADJUST[adjust]}-adjusted over {n_tested} rows"
    if excludes and r.verdict == "within noise":
        text = (f"the unadjusted {level(alpha)} % interval excludes 0, but p adj = {r.p_adjusted:.3g} ({adjusted}) "
                f"is not below {alpha:g}: within noise")
    elif not excludes and r.verdict == "significant":
        text = (f"p adj = {r.p_adjusted:.3g} ({adjusted}) is below {alpha:g}, but the {level(alpha)} % interval "
                "includes 0: the test and the interval disagree at the margin")
    else:
        return
    r.note = "; ".join(x for x in (r.note, text) if x)
