"""The words and numbers of a comparison report, shared by every text format (terminal, Markdown, LaTeX).

Each function returns plain strings; the renderer escapes them for its language. What is shown:

* the **headline** (verdict counts, the largest moves, the differing factors, the task sets);
* **factors** once for all tasks when they differ the same way in every task, per task otherwise; a
  dict-valued setting (``model_args``) as the keys that differ; a long text as the part that differs;
* **scores** per task, one row per metric, in the metric's display unit, with a short verdict word and
  footnotes for everything longer (reasons, shared subsets, renames, directions, units).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repaudit.audit.compare import Comparison, FactorRow, ScoreRow
from repaudit.escape import one_line, visible_controls
from repaudit.report.glossary import ADJUST, GROUPS, METHODS, factor_label, plural, verdict_word

ARROW = "→"


def short(value: Any, width: int = 48) -> str:
    """A value on one line, at most ``width`` characters (JSON for non-strings)."""
    s = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    s = visible_controls(s).replace("\n", " ").replace("\t", " ")
    return s if len(s) <= width else s[: width - 1] + "…"


def num(x: float | None, unit: str = "pts", signed: bool = False) -> str:
    """A value in its unit's usual precision (points: 2 decimals; others: 4 significant digits)."""
    if x is None or not math.isfinite(x):
        return "n/a"
    sign = "+" if signed else ""
    if unit in ("pts", "%", "% difference") or abs(x) >= 100:
        s = f"{x:{sign}.2f}"
    else:
        s = f"{x:{sign}.4g}"
    return s.replace("-", "−")


def interval(lo: float | None, hi: float | None, unit: str = "pts") -> str:
    return "" if lo is None or hi is None else f"[{num(lo, unit, True)}, {num(hi, unit, True)}]"


def _text_diff(a: str, b: str, width: int) -> tuple[str, str]:
    """The differing middle of two long strings, with a little shared context (``…``)."""
    if len(a) <= width and len(b) <= width:
        return a, b
    pre = 0
    while pre < min(len(a), len(b)) and a[pre] == b[pre]:
        pre += 1
    suf = 0
    while suf < min(len(a), len(b)) - pre and a[-1 - suf] == b[-1 - suf]:
        suf += 1
    start = max(0, pre - 12)

    def cut(s: str) -> str:
        body = s[start:len(s) - suf]
        out = ("…" if start else "") + body
        if len(out) > width:
            return out[:width - 1] + "…"
        return out + ("…" if suf else "")

    return cut(a), cut(b)


def value_diff(a: Any, b: Any, width: int = 60) -> tuple[str, str]:
    """Two differing values shown so that the difference is visible: a dict as the keys that differ
    (``load_in_8bit=True`` / ``(not set)``), a long string as its differing part, else :func:`short`."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k, _MISSING) != b.get(k, _MISSING)]
        def side(d: dict) -> str:
            return "; ".join(f"{k}={short(d[k], 40)}" if k in d else f"{k} (not set)" for k in keys)
        return short(side(a), width), short(side(b), width)
    if isinstance(a, str) and isinstance(b, str):
        sa, sb = _text_diff(visible_controls(a).replace("\n", "\\n"), visible_controls(b).replace("\n", "\\n"),
                            width)
        return sa, sb
    return short(a, width), short(b, width)


_MISSING = object()


@dataclass
class FactorLine:
    """One differing factor field: where (``None`` = every shared task), label, both values, a note."""

    scope: str | None
    label: str
    a: str
    b: str
    note: str = ""


def factor_lines(c: Comparison, width: int = 60) -> list[FactorLine]:
    """Differing factors: once for all tasks when every shared task differs the same way, else per task."""
    tasks = c.tasks.shared if c.tasks else sorted({f.task for f in c.factors})
    by_field: dict[tuple[str, str], list[FactorRow]] = {}
    for f in c.differing():
        by_field.setdefault((f.group, f.field), []).append(f)
    out = []
    for (group, name), rows in by_field.items():
        uniform = len(rows) == len(tasks) > 1 and all(
            json.dumps(r.a, sort_keys=True, default=str) == json.dumps(rows[0].a, sort_keys=True, default=str)
            and json.dumps(r.b, sort_keys=True, default=str) == json.dumps(rows[0].b, sort_keys=True, default=str)
            for r in rows)
        for r in rows[:1] if uniform else rows:
            a, b = value_diff(r.a, r.b, width)
            out.append(FactorLine(None if uniform or len(tasks) == 1 else r.task, factor_label(group, name), a, b))
    out.sort(key=lambda x: (x.scope is not None, x.scope or ""))
    return out


def equivalence_notes(c: Comparison) -> list[str]:
    """One line per kind of value judged the same though written differently (with the fields)."""
    seen: dict[str, list[str]] = {}
    for f in c.factors:
        if f.note:
            seen.setdefault(f.note, []).append(factor_label(f.group, f.field))
    return [f"{note} ({', '.join(dict.fromkeys(fields))})" for note, fields in seen.items()]


def unknown_fields(c: Comparison) -> list[str]:
    """Labels of every factor field one run does not record."""
    return sorted({factor_label(f.group, f.field) for f in c.factors if f.status == "unknown"})


def headline(c: Comparison) -> list[str]:
    """The first lines of every report: the verdict, the largest moves, what differs, the task sets."""
    s = c.summary
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
    if s.largest:
        lines.append(("Largest moves: " if len(s.largest) > 1 else "Largest move: ") + "; ".join(
            f"{m.task} {m.metric} {num(m.delta, m.unit, True)} {m.unit} {interval(m.ci_low, m.ci_high, m.unit)} "
            f"({m.moved})" for m in s.largest) + ".")
    lines.append(f"Factors that differ: {differing_summary(c)}. Same: {s.same_fields} fields; not recorded by "
                 f"one or both runs: {s.unknown_fields} fields.")
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
_HEADLINE_ORDER = ("model", "quantisation", "dtype", "backend", "prompt_format", "fewshot", "chat_template", "bos",
                   "stop", "max_tokens", "sampling", "metric_variant", "batch_size", "padding", "seed", "data",
                   "tokenizer", "library_versions", "hardware", "other")


def differing_summary(c: Comparison, width: int = 24) -> str:
    """Every group with a differing field, in one line: ``dtype: float32 → bfloat16`` for a group with one
    differing field, ``hardware (5 fields)`` otherwise."""
    groups: dict[str, list[FactorRow]] = {}
    for f in c.differing():
        groups.setdefault(f.group, []).append(f)
    out = []
    for g in sorted(groups, key=lambda g: _HEADLINE_ORDER.index(g) if g in _HEADLINE_ORDER else 99):
        fields = {f.field for f in groups[g]}
        if len(fields) == 1:
            f = groups[g][0]
            a, b = value_diff(f.a, f.b, width)
            out.append(f"{factor_label(g, f.field)}: {a} {ARROW} {b}" + (" (some tasks)" if len(groups[g]) <
                                                                           len(c.tasks.shared if c.tasks else [1])
                                                                           else ""))
        else:
            out.append(f"{GROUPS.get(g, g)} ({plural(len(fields), 'field')})")
    return "; ".join(out) or "none recorded"


def run_lines(c: Comparison) -> list[str]:
    """``A = name (source; model)`` and the same for B: file names, never local paths."""
    return [f"{k} = {side.get('name') or Path(side['path']).name} ({side['source']}; model {side.get('model', '?')})"
            for k, side in (("A", c.a), ("B", c.b))]


def task_lines(c: Comparison, k: int = 12) -> list[str]:
    """Tasks only one run has (groups apart), the first ``k`` of each named."""
    if c.tasks is None:
        return []
    out = []
    for label, names in (("only in A", c.tasks.only_a), ("groups only in A", c.tasks.groups_only_a),
                         ("only in B", c.tasks.only_b), ("groups only in B", c.tasks.groups_only_b)):
        if names:
            out.append(f"{label} ({len(names)}): " + ", ".join(names[:k]) + (" …" if len(names) > k else ""))
    return out


@dataclass
class ScoreBlock:
    """The rows of one task in the score table: the task line and one cell list per metric."""

    task: str
    info: str
    rows: list[list[str]] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)


SCORE_HEAD = ("metric", "unit", "A", "B", "Δ", "95% CI", "p adj", "verdict")


def _direction(r: ScoreRow) -> str:
    return {"higher": "↑", "lower": "↓"}.get(r.direction, "?")


def _task_info(rows: list[ScoreRow]) -> str:
    r = rows[0]
    tag = " (group)" if r.is_group else ""
    if r.method.startswith("paired"):
        return f"{tag} · paired on {r.n_shared} shared docs" + (" (a subset)" if r.subset else "")
    if r.method == "unpaired_stderr":
        return f"{tag} · unpaired (a run has no per-doc values)"
    return tag


def _footnote(r: ScoreRow) -> str:
    parts = []
    if r.verdict in ("not comparable", "no verdict") or r.note:
        parts.append(r.note or r.verdict)
    if r.subset:
        parts.append(f"A and B are scored on the {r.n_shared} docs both runs have; the files report A "
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
    for r in sorted(c.scores, key=lambda r: r.is_group):
        b = blocks.get(r.task)
        if b is None:
            b = blocks[r.task] = ScoreBlock(one_line(r.task), _task_info([x for x in c.scores if x.task == r.task]))
        fn = _footnote(r)
        if fn and fn not in notes:
            notes.append(fn)
        ref = f" [{notes.index(fn) + 1}]" if fn else ""
        b.rows.append([one_line(r.metric), f"{r.unit}{_direction(r)}", num(r.a, r.unit), num(r.b, r.unit),
                       num(r.delta, r.unit, True), interval(r.ci_low, r.ci_high, r.unit), p_text(r.p_adjusted),
                       verdict_word(r.verdict, r.moved) + ref])
    return list(blocks.values()), notes


def scores_caption(c: Comparison) -> str:
    methods = sorted({METHODS.get(r.method, r.method) for r in c.scores if r.method != "none"})
    return (f"Δ = B − A; pts = percentage points (proportions ×100), other metrics in their own unit; ↑ higher is "
            f"better, ↓ lower is better, ? unknown; 95% intervals ({'; '.join(methods) or 'none'}); p adj = "
            f"{ADJUST[c.adjust]}-adjusted p (McNemar exact for 0/1 metrics, else a z-test); verdict: p adj < "
            f"{c.alpha:g}")


def agreement_lines(c: Comparison) -> list[str]:
    """One sentence per task on how the shared docs line up (content, targets, prompts, predictions)."""
    def n(v: int | None) -> str:
        return "not recorded" if v is None else str(v)

    return [f"{one_line(ag.task)}: {ag.n_shared} shared docs (A {ag.n_a}, B {ag.n_b}); identical doc content "
            f"{n(ag.doc_hash_equal)}, choices {n(ag.choices_equal)}, targets {n(ag.target_equal)}, prompt texts "
            f"{n(ag.prompt_hash_equal)}, few-shot ids {n(ag.fewshot_equal)}, predictions {n(ag.prediction_equal)}"
            for ag in c.docs]


def top_flips(c: Comparison, top: int):
    """The ``top`` flips with the largest margins (a flip both runs were sure about comes first)."""
    return sorted(c.flips, key=lambda f: -min(f.a_margin or 0.0, f.b_margin or 0.0))[:top]
