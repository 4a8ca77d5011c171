"""Name the mechanism behind a score gap: diagnostics side by side, and the score on unaffected docs.

A diagnostic (:mod:`repaudit.run.diagnostics`) that differs between two runs, or is large in either
(at least :data:`LARGE` of the docs), is a *likely mechanism*: generations cut by the token budget,
answers the filter could not extract, empty answers, exact ties, few-shot leakage. For each, the
paired score on the shared docs affected in *neither* run says how much of the delta is left once
those docs are set aside: if the delta vanishes there, the mechanism accounts for it.
A doc found among its own few-shot examples is a warning whatever the other run shows.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict

from repaudit.audit.stat_settings import StatSettings
from repaudit.audit.stats import paired_bootstrap
from repaudit.importers.comparable import TaskOutcome
from repaudit.run.diagnostics import Diagnostics

#: a diagnostic affecting at least this share of a run's docs is named even when both runs agree
LARGE = 0.05
#: doc ids listed per diagnostic in reports (all of them are in the JSON)
SHOW_IDS = 20


class DiagnosticRow(BaseModel):
    """One diagnostic of one task in both runs: a count with its doc ids, or a value; ``None`` =
    does not apply or cannot be told (``a_unknown``/``b_unknown`` say why)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    task: str
    """The task."""
    name: str
    """The diagnostic (``truncated``, ``extraction_failed[strict-match]``, ``gen_tokens_mean``, …)."""
    a: float | int | bool | str | None
    """A's value: the number of docs for a doc-set diagnostic, else the value itself (mean tokens, ``finish``
    counts as text, a bool); None: does not apply or cannot be told."""
    b: float | int | bool | str | None
    """B's value, as ``a``."""
    a_ids: list[int] | None = None
    """A's doc ids for a doc-set diagnostic; None otherwise."""
    b_ids: list[int] | None = None
    """B's doc ids, as ``a_ids``."""
    a_unknown: str | None = None
    """Why A's value cannot be told; None when it can."""
    b_unknown: str | None = None
    """Why B's value cannot be told; None when it can."""
    keys: dict[int, str] = {}
    """Doc id → the harness's own sample id (inspect's), for the listed ids that have one."""


class Mechanism(BaseModel):
    """A diagnostic named as a likely mechanism, with the paired score on docs affected in neither run."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    task: str
    """The task."""
    diagnostic: str
    """The diagnostic named (as :attr:`DiagnosticRow.name`)."""
    reason: str
    """Why it is named: the runs' counts differ, or it affects at least :data:`LARGE` of a run's docs."""
    metric: str
    """The metric scored on the unaffected docs (the filter's own for a per-filter diagnostic); empty: none."""
    n_unaffected: int
    """Shared docs affected in neither run (where they are scored: those both runs score on ``metric``)."""
    unscored: str = ""
    """Why those docs get no score: ``no per-doc values`` (the metric is corpus-level, or the files hold no per-doc
    value of it), ``too few`` (fewer than 2 such docs), ``no metric`` (none both runs report); empty: scored."""
    a_unaffected: float | None
    """A's mean score on those docs, in ``unit``; None: fewer than 2 such docs, or a non-finite value."""
    b_unaffected: float | None
    """B's mean score on those docs, in ``unit``; None as for ``a_unaffected``."""
    delta_unaffected: float | None
    """B − A on those docs, in ``unit``; None as for ``a_unaffected``."""
    ci_low: float | None
    """Lower bound of the paired-bootstrap (1 − alpha) interval of ``delta_unaffected``; None as above."""
    ci_high: float | None
    """Upper bound of that interval; None as above."""
    unit: str = "proportion"
    """Unit of the scores above: per-doc means (``proportion``) until compare puts them in its rows' display unit
    (``pts`` for proportions)."""
    interval_method: str = "paired_bootstrap"
    """How ``ci_low``/``ci_high`` were made, a key of :data:`repaudit.audit.intervals.STATISTICS`: the paired
    bootstrap over the unaffected docs, or — where those docs are every doc of the metric's score row — the row's
    own method, its interval copied (one Δ on one set of docs has one interval)."""
    same_docs_as_row: bool = False
    """The unaffected docs are all the docs the metric's score row is paired on: its Δ is the row's, and so is its
    interval (:attr:`interval_method`)."""


def _unknown(d: Diagnostics | None, name: str) -> str | None:
    if d is None:
        return "no per-doc results"
    base = name.split("[")[0]
    return d.unknown.get(base) or d.unknown.get("gen_tokens" if base.startswith("gen_tokens") else base)


def doc_keys(ids, *tasks: TaskOutcome) -> dict[int, str]:
    """The harness's own sample ids (inspect's) of ``ids``, where a run's docs carry them."""
    out: dict[int, str] = {}
    for t in tasks:
        for i in ids:
            d = (t.docs or {}).get(i)
            if d is not None and d.key and i not in out:
                out[i] = d.key
    return out


def diagnostic_rows(task: str, da: Diagnostics | None, db: Diagnostics | None,
                    ta: TaskOutcome | None = None, tb: TaskOutcome | None = None) -> list[DiagnosticRow]:
    """Every diagnostic either run has, side by side (``ta``/``tb``: the tasks, for their docs' sample ids)."""
    sa, sb = (d.doc_sets() if d else {} for d in (da, db))
    rows = [DiagnosticRow(task=task, name=n, a=len(sa[n]) if n in sa else None, b=len(sb[n]) if n in sb else None,
                          a_ids=sa.get(n), b_ids=sb.get(n), a_unknown=None if n in sa else _unknown(da, n),
                          b_unknown=None if n in sb else _unknown(db, n),
                          keys=doc_keys([*sa.get(n, [])[:SHOW_IDS], *sb.get(n, [])[:SHOW_IDS]],
                                        *(t for t in (ta, tb) if t is not None)))
            for n in dict.fromkeys([*sa, *sb])]
    for name in ("gen_tokens_mean", "gen_tokens_max", "finish", "fewshot_from_eval_split"):
        va, vb = (getattr(d, name) if d else None for d in (da, db))
        if va is None and vb is None:
            continue
        fmt = (lambda v: None if v is None else ", ".join(f"{k}: {c}" for k, c in v.items())) if name == "finish" \
            else (lambda v: v)
        rows.append(DiagnosticRow(task=task, name=name, a=fmt(va), b=fmt(vb),
                                  a_unknown=None if va is not None else _unknown(da, name),
                                  b_unknown=None if vb is not None else _unknown(db, name)))
    return rows


def explain(task: str, ta: TaskOutcome, tb: TaskOutcome, shared: list[int] | None, metrics: list[str],
            stat: StatSettings) -> tuple[list[DiagnosticRow], list[Mechanism], list[str]]:
    """Diagnostic rows, likely mechanisms (with the score on docs affected in neither run: a paired bootstrap of
    ``stat.n_boot`` resamples seeded with ``stat.boot_seed``, at ``stat.alpha``) and leakage warnings for one task.
    ``metrics`` are the metrics both runs report; a per-filter diagnostic (``extraction_failed[strict-match]``) is
    scored on that filter's metric, any other on the first. ``shared`` is ``None`` when docs cannot be paired (no
    unaffected score then)."""
    da, db = ta.diagnostics, tb.diagnostics
    rows = diagnostic_rows(task, da, db, ta, tb)
    warnings = []
    for side, d, t in (("A", da, ta), ("B", db, tb)):
        if d is not None and d.fewshot_leaked:
            keys = doc_keys(d.fewshot_leaked[:SHOW_IDS], t)
            named = ", ".join(f"{keys[i]} (#{i})" if keys.get(i) not in (None, str(i)) else str(i)
                              for i in d.fewshot_leaked[:SHOW_IDS]) + (" …" if len(d.fewshot_leaked) > SHOW_IDS else "")
            warnings.append(f"{task}: run {side} has {len(d.fewshot_leaked)} doc(s) among their own few-shot "
                            f"examples, answer included (doc ids {named}): their scores are not an evaluation")
    mechanisms = []
    sa, sb = (d.doc_sets() if d else {} for d in (da, db))
    for name in dict.fromkeys([*sa, *sb]):
        ia, ib = set(sa.get(name, [])), set(sb.get(name, []))
        na, nb = (da.n_docs if da else 0), (db.n_docs if db else 0)
        reasons = []
        if name in sa and name in sb and len(ia) != len(ib):
            reasons.append(f"A {len(ia)} vs B {len(ib)} docs")
        for side, ids, n in (("A", ia, na), ("B", ib, nb)):
            if n and len(ids) >= LARGE * n and ids:
                reasons.append(f"{len(ids)} of {n} docs in {side} ({100 * len(ids) / n:.0f} %)")
        if not reasons:
            continue
        if name.startswith("scored_empty") and "empty" in sa and "empty" in sb:  # the raw empties beside
            reasons.append(f"raw generations empty: A {len(sa['empty'])}, B {len(sb['empty'])}")
        metric = _metric_for(name, metrics, ta, tb, shared)
        mechanisms.append(_unaffected_score(task, name, "; ".join(reasons), ta, tb, shared, ia | ib, metric, stat))
    return rows, mechanisms, warnings


def _per_doc(metric: str, ta: TaskOutcome, tb: TaskOutcome, ids: list[int]) -> bool:
    """Both runs hold a per-doc value of ``metric`` on at least one of ``ids``."""
    da, db = ta.docs or {}, tb.docs or {}  # (ids are docs both hold)
    return any(metric in da[i].metrics and metric in db[i].metrics for i in ids)


def _metric_for(name: str, metrics: list[str], ta: TaskOutcome, tb: TaskOutcome, shared: list[int] | None
                ) -> str | None:
    """The metric a diagnostic's unaffected docs are scored on: its filter's own (``[strict-match]``), else the
    first; one with per-doc values before one without (a corpus-level metric such as f1 or bleu has none)."""
    flt = name.partition("[")[2].rstrip("]")
    ranked = sorted(metrics, key=lambda m: not (flt and m.endswith("," + flt)))
    scored = [m for m in ranked if _per_doc(m, ta, tb, shared or [])]
    return scored[0] if scored else ranked[0] if ranked else None


def _unaffected_score(task: str, name: str, reason: str, ta: TaskOutcome, tb: TaskOutcome, shared: list[int] | None,
                      affected: set[int], metric: str | None, stat: StatSettings) -> Mechanism:
    spared = [i for i in shared or [] if i not in affected]
    da, db = ta.docs or {}, tb.docs or {}  # (shared docs are docs both hold)
    keep = [i for i in spared if metric in da[i].metrics and metric in db[i].metrics] if metric else []
    why = ("no metric" if not metric else "no per-doc values" if spared and not keep else
           "too few" if len(keep) < 2 else "")
    empty = Mechanism(task=task, diagnostic=name, reason=reason, metric=metric or "", n_unaffected=len(spared),
                      unscored=why, a_unaffected=None, b_unaffected=None, delta_unaffected=None, ci_low=None,
                      ci_high=None)
    if why or metric is None:  # (no metric: why says so)
        return empty
    xa = np.array([da[i].metrics[metric] for i in keep], dtype=np.float64)
    xb = np.array([db[i].metrics[metric] for i in keep], dtype=np.float64)
    if not (np.isfinite(xa).all() and np.isfinite(xb).all()):
        return empty.model_copy(update=dict(unscored="non-finite values"))
    n_boot, boot_seed = stat.bootstrap()
    res = paired_bootstrap(xa, xb, None, n_boot=n_boot, alpha=stat.alpha, seed=boot_seed)
    return empty.model_copy(update=dict(n_unaffected=len(keep), a_unaffected=float(xa.mean()),
                                        b_unaffected=float(xb.mean()), delta_unaffected=res.delta, ci_low=res.ci_low,
                                        ci_high=res.ci_high))
