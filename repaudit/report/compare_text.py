"""The words and numbers of a comparison report, shared by every text format (terminal, Markdown, LaTeX).

Each function returns plain strings; the renderer escapes them for its language. What is shown:

* the **headline** (verdict counts, the largest moves, the differing factors, the task sets);
* **factors** once for all tasks when they differ the same way in every task, per task otherwise; a
  dict-valued setting (``model_args``) as the keys that differ; a long text as the part that differs;
* **scores** per task, one row per metric, in the metric's display unit, with a short verdict word and
  footnotes for everything longer (reasons, shared subsets, renames, directions, units).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from repaudit.audit.compare import NUMERICAL, Comparison, FactorRow, ScoreRow
from repaudit.audit.stats import level
from repaudit.escape import one_line
from repaudit.report.factor_text import (  # noqa: F401  (re-exported: the reports import them from here)
    ARROW,
    FactorLine,
    display,
    display_value,
    equivalence_notes,
    factor_lines,
    na_fields,
    short,
    text_diff,
    unknown_fields,
    value_diff,
    values_diff,
)
from repaudit.report.glossary import ADJUST, METHODS, factor_label, plural, verdict_word
from repaudit.report.power import mde_cell
from repaudit.vocabulary import GROUPS, order


def num(x: float | None, unit: str = "pts", signed: bool = False, decimals: int | None = None) -> str:
    """A value in its unit's usual precision: points 2 decimals; other units ``decimals`` if given (one table
    column keeps one format: :func:`unit_decimals`), else 4 significant digits. The minus sign is U+2212."""
    if x is None or not math.isfinite(x):
        return "n/a"
    sign = "+" if signed else ""
    if decimals is None:
        decimals = 2 if unit in ("pts", "%", "% difference") else _decimals(abs(x))
    return f"{x:{sign}.{decimals}f}".replace("-", "−")


def _decimals(magnitude: float, digits: int = 4) -> int:
    """Decimals that show ``digits`` significant digits of ``magnitude`` (2 at least, 6 at most)."""
    if magnitude == 0 or not math.isfinite(magnitude):
        return 2
    return max(2, min(6, digits - 1 - math.floor(math.log10(magnitude))))


def unit_decimals(rows: list[ScoreRow]) -> dict[str, int]:
    """One number format per unit across a table: points 2 decimals, any other unit the decimals that show 4
    significant digits of its largest value (so ``+0.0414`` stands next to ``+0.1356``, never ``+0.04144``)."""
    out: dict[str, int] = {}
    for r in rows:
        if r.unit in ("pts", "%", "% difference"):
            out[r.unit] = 2
            continue
        big = max((abs(v) for v in (r.a, r.b) if v is not None and math.isfinite(v)), default=0.0)
        out[r.unit] = min(out.get(r.unit, 6), _decimals(big))
    return out


def interval(lo: float | None, hi: float | None, unit: str = "pts", decimals: int | None = None) -> str:
    """``[lo, hi]`` signed, in the unit's format, with more decimals where two different ends would print alike;
    empty when either end is missing."""
    if lo is None or hi is None:
        return ""
    d = decimals if decimals is not None else 2 if unit in ("pts", "%", "% difference") else _decimals(
        max(abs(lo), abs(hi)))
    while lo != hi and num(lo, unit, True, d) == num(hi, unit, True, d) and d < 12:
        d += 1
    return f"[{num(lo, unit, True, d)}, {num(hi, unit, True, d)}]"


def headline(c: Comparison) -> list[str]:
    """The first lines of every report: the verdict, the largest moves, what differs, the task sets.

    Raises:
        ValueError: a comparison without its summary (:func:`~repaudit.audit.compare.compare` always sets one).
    """
    s = c.summary
    if s is None:
        raise ValueError("a comparison without its summary")
    tested = s.better + s.worse + s.moved_unknown_direction + s.within_noise
    moved = s.better + s.worse + s.moved_unknown_direction
    parts = [f"{s.worse} worse", f"{s.better} better"] + ([f"{s.moved_unknown_direction} moved (direction "
                                                           "unknown)"] if s.moved_unknown_direction else [])
    verdict = (f"Verdict: {moved} of {plural(s.rows, 'task×metric row')} moved beyond noise ({', '.join(parts)}), "
               f"{s.within_noise} within noise, {s.not_comparable} not comparable, {s.no_verdict} without a "
               f"verdict; {ADJUST[s.adjust]}-adjusted over {plural(tested, 'tested row')}, α = {s.alpha:g}.")
    if s.group_rows:
        verdict += f" Groups (apart): {s.group_significant} of {s.group_rows} moved."
    lines = [verdict]
    dec = unit_decimals(c.scores)  # the score table's format, one per unit
    if s.largest:
        still = (f" {plural(s.numerically_still, 'other row')} within numerical noise (|Δ| at most "
                 f"{100 * NUMERICAL:g} % of its score): not moves." if s.numerically_still else "")
        lines.append(("Largest moves: " if len(s.largest) > 1 else "Largest move: ") + "; ".join(
            f"{m.task} {m.metric} {num(m.delta, m.unit, True, dec.get(m.unit))} {m.unit} "
            f"{interval(m.ci_low, m.ci_high, m.unit, dec.get(m.unit))} ({m.moved})" for m in s.largest) + "." + still)
    elif s.numerically_still:
        lines.append(f"No move: every tested row's Δ is 0 or within numerical noise (|Δ| at most {100 * NUMERICAL:g} % "
                     "of its score).")
    na = f"; applying to one run only: {s.na_fields}" if s.na_fields else ""
    lines.append(f"Factors that differ: {differing_summary(c)}. Same: {s.same_fields} fields; not recorded by "
                 f"one or both runs: {s.unknown_fields} fields{na}.")
    if c.tasks and (c.tasks.only_a or c.tasks.only_b or c.tasks.groups_only_a or c.tasks.groups_only_b):
        only = [f"only in {k}: {_count(t, g)}" for k, t, g in (("A", c.tasks.only_a, c.tasks.groups_only_a),
                                                                ("B", c.tasks.only_b, c.tasks.groups_only_b))
                if t or g]
        lines.append(f"Tasks: {len(c.tasks.shared)} compared; {'; '.join(only)} (listed below).")
    return lines


def _count(tasks: list[str], groups: list[str]) -> str:
    return " and ".join(x for x in (plural(len(tasks), "task") if tasks else "",
                                    plural(len(groups), "group") if groups else "") if x)


#: groups named first in the headline: what most often moves a score, then the rest in report order
_HEADLINE_ORDER = ("model", "serving", "prompt", "fewshot", "generation", "scoring", "metric", "data", "seeds",
                   "engine", "tokenizer", "software", "hardware", "other")


def differing_summary(c: Comparison, width: int = 24) -> str:
    """Every group with a differing field, in one line: each field ``dtype: float32 → bfloat16`` for a group with
    up to three differing fields, ``hardware (5 fields)`` otherwise."""
    groups: dict[str, list[FactorRow]] = {}
    for f in c.differing():
        groups.setdefault(f.group, []).append(f)
    out = []
    n_tasks = len(c.tasks.shared) if c.tasks else 1
    for g in sorted(groups, key=lambda g: _HEADLINE_ORDER.index(g) if g in _HEADLINE_ORDER else 99):
        paths = list(dict.fromkeys(f.path for f in sorted(groups[g], key=lambda f: order(f.path))))
        if len(paths) > 3:
            out.append(f"{GROUPS.get(g, g)} ({plural(len(paths), 'field')})")
            continue
        for p in paths:
            rows = [f for f in groups[g] if f.path == p]
            a, b = values_diff(rows[0].a, rows[0].b, width)
            out.append(f"{factor_label(p)}: {a} {ARROW} {b}" + (" (some tasks)" if len(rows) < n_tasks else ""))
    return "; ".join(out) or "none recorded"


def run_lines(c: Comparison) -> list[str]:
    """``A = label (file; source; model)`` and the same for B: labels and file names, never local paths."""
    out = []
    for k, side in (("A", c.a), ("B", c.b)):
        file = Path(side["path"]).name
        label = side.get("name") or file
        where = f"{side.get('file') or file}; " if label != (side.get("file") or file) else ""
        out.append(f"{k} = {label} ({where}{side['source']}; model {side.get('model', '?')})")
    return out


def task_lines(c: Comparison, k: int | None = None) -> list[str]:
    """Tasks only one run has (groups apart), every one named (``k``: the first ``k`` and how many more, for a
    view that links to the full list)."""
    if c.tasks is None:
        return []
    out = []
    for label, names in (("Tasks only in A", c.tasks.only_a), ("Task groups only in A", c.tasks.groups_only_a),
                         ("Tasks only in B", c.tasks.only_b), ("Task groups only in B", c.tasks.groups_only_b)):
        if names:
            shown = names if k is None else names[:k]
            more = f" … and {len(names) - len(shown)} more (all in --format json)" if len(shown) < len(names) else ""
            out.append(f"{label} ({len(names)}): " + ", ".join(shown) + more)
    return out


@dataclass
class ScoreBlock:
    """The rows of one task in the score table: the task line and one cell list per metric."""

    task: str
    info: str
    rows: list[list[str]] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)


def score_head(alpha: float, mde: bool = True) -> tuple[str, ...]:
    """The score table's columns; the interval's level is ``1 − alpha`` (the comparison's); ``mde``: the MDE column
    (a comparison without a paired row has none)."""
    return ("metric", "unit", "A", "B", "Δ", f"{level(alpha)}% CI", "p adj", "flips", *(("MDE",) if mde else ()),
            "verdict")


def score_columns(c: Comparison) -> tuple[str, ...]:
    """:func:`score_head` of ``c``: with the MDE column where a row has one."""
    return score_head(c.alpha, any(r.power is not None for r in c.scores))


def numeric_columns(head: tuple[str, ...]) -> set[int]:
    """Positions of the columns of ``head`` that hold numbers (right-aligned): all but metric, unit and verdict."""
    return {i for i, h in enumerate(head) if h not in ("metric", "unit", "verdict")}


def _direction(r: ScoreRow) -> str:
    return {"higher": "↑", "lower": "↓"}.get(r.direction, "?")


def _task_info(rows: list[ScoreRow]) -> str:
    r = rows[0]
    tag = " (group)" if r.is_group else ""
    if r.method.startswith("paired"):
        return f"{tag} · paired on {plural(r.n_paired, 'shared doc')}" + (" (a subset)" if r.subset else "")
    if r.method.startswith("unpaired"):
        return f"{tag} · unpaired (a run has no per-doc values)"
    return tag


def _footnote(r: ScoreRow) -> str:
    parts = []
    if r.verdict in ("not comparable", "no verdict") or r.note:
        parts.append(r.note or r.verdict)
    if r.subset:
        parts.append(f"A and B are scored on the {r.n_paired} docs both runs have; the files report A "
                     f"{num(r.a_reported, r.unit)} ({r.n_a} docs), B {num(r.b_reported, r.unit)} ({r.n_b} docs)")
    return "; ".join(parts)


def p_text(p: float | None) -> str:
    """A p-value in 2 significant digits (below 0.001 in scientific notation); empty when absent."""
    if p is None or not math.isfinite(p):
        return ""
    return f"{p:.2g}" if p >= 1e-3 else f"{p:.0e}" if p >= 1e-16 else "<1e-16"


def score_blocks(c: Comparison) -> tuple[list[ScoreBlock], list[str]]:
    """Score rows grouped by task (task rows first, then groups), and the numbered footnotes.

    A row that is not a plain tested result (not comparable, no verdict, a shared subset, a note) gets
    a footnote; rows with the same footnote share its number, which follows the verdict word.
    """
    blocks: dict[str, ScoreBlock] = {}
    notes: list[str] = []
    dec = unit_decimals(c.scores)
    with_mde = "MDE" in score_columns(c)
    for r in sorted(c.scores, key=lambda r: r.is_group):
        b = blocks.get(r.task)
        if b is None:
            b = blocks[r.task] = ScoreBlock(one_line(r.task), _task_info([x for x in c.scores if x.task == r.task]))
        fn = _footnote(r)
        if fn and fn not in notes:
            notes.append(fn)
        ref = f" [{notes.index(fn) + 1}]" if fn else ""
        d = dec.get(r.unit)
        b.rows.append([one_line(r.metric), f"{r.unit}{_direction(r)}", num(r.a, r.unit, False, d),
                       num(r.b, r.unit, False, d), num(r.delta, r.unit, True, d),
                       interval(r.ci_low, r.ci_high, r.unit, d), p_text(r.p_adjusted), flips_cell(r),
                       *([mde_cell(r)] if with_mde else []), verdict_word(r.verdict, r.moved) + ref])
    return list(blocks.values()), notes


def flips_cell(r: ScoreRow) -> str:
    """Flips of a 0/1 metric on paired docs: ``4↓ 1↑`` (right → wrong, wrong → right), near-tie ones counted in
    both and named (``(2 tie)``); empty for other rows."""
    if r.right_to_wrong is None or r.wrong_to_right is None:
        return ""
    tie = f" ({r.near_tie_flips} tie)" if r.near_tie_flips else ""
    return f"{r.right_to_wrong}↓ {r.wrong_to_right}↑{tie}"


def scores_caption(c: Comparison) -> str:
    methods = sorted({METHODS.get(r.method, r.method) for r in c.scores if r.method != "none"})
    return (f"Δ = B − A; pts = percentage points (proportions ×100), other metrics in their own unit; ↑ higher is "
            f"better, ↓ lower is better, ? unknown; {level(c.alpha)}% intervals ({'; '.join(methods) or 'none'}); "
            "p adj = "
            f"{ADJUST[c.adjust]}-adjusted p (McNemar exact for 0/1 metrics, else a z-test); flips: docs right → wrong "
            f"(↓) and wrong → right (↑) on a 0/1 metric, near ties (margin ≤ {c.tie_eps:g} nats) apart; "
            f"verdict: p adj < {c.alpha:g}")


def agreement_lines(c: Comparison) -> list[str]:
    """One sentence per task on how the shared docs line up (content, targets, prompts, predictions), and one per
    filter of a generate_until task on its scored answers (changed, empty; raw empties beside)."""
    def n(v: int | None) -> str:
        return "not recorded" if v is None else str(v)

    out = [f"{one_line(ag.task)}: {plural(ag.n_shared, 'shared doc')} (A {ag.n_a}, B {ag.n_b}); identical doc content "
           f"{n(ag.doc_hash_equal)}, choices {n(ag.choices_equal)}, targets {n(ag.target_equal)}, prompt texts "
           f"{n(ag.prompt_hash_equal)}, few-shot ids {n(ag.fewshot_equal)}, predictions {n(ag.prediction_equal)}"
           for ag in c.docs]
    for s in c.scored:
        out.append(f"{one_line(s.task)}: scored answers ({one_line(s.filter)}) changed on {s.changed} of "
                   f"{plural(s.n_shared, 'shared doc')}; empty in A {s.empty_a}, in B {s.empty_b} ({s.became_empty} "
                   f"became empty, {s.became_nonempty} stopped being empty); raw generations empty: A "
                   f"{n(s.raw_empty_a)}, B {n(s.raw_empty_b)}")
    return out


def doc_name(doc_id: int, key: str | None) -> str:
    """A doc as its harness names it: its own id where the file gives one (inspect's sample id ``Mercury_7013073``,
    HELM's instance id ``id1234``, Every Eval Ever's ``sample_id``), else its doc id (lm-eval's ``doc_id``: the
    row). A position the reader numbered the docs by is never shown: no file names the doc so."""
    return key if key else str(doc_id)
