"""The factor part of a comparison report as words, shared by every text format: values with their provenance on one
line, two differing values cut so that where they differ stays visible, the differing factors (once for all tasks
where every task differs the same way), spellings judged one setting, settings one run does not record or that apply to
one run only."""

from __future__ import annotations

from dataclasses import dataclass

from repaudit.audit.compare import Comparison, FactorRow
from repaudit.report.glossary import factor_label
from repaudit.report.values import (  # noqa: F401  (re-exported: the reports import them from here)
    display,
    display_value,
    short,
    text_diff,
    value_diff,
    values_diff,
)
from repaudit.vocabulary import Value, order

ARROW = "→"


@dataclass
class FactorLine:
    """One differing factor field: where (``None`` = every shared task), label, both values, a note."""

    scope: str | None
    label: str
    a: str
    b: str
    note: str = ""


def _reads(v: Value) -> tuple:
    """What a value shows, without the key of the place it was read at (the same value read for each task)."""
    return v.source, v.value, v.harness, v.version, v.note


def factor_lines(c: Comparison, width: int = 60) -> list[FactorLine]:
    """Differing factors: once for all tasks when every shared task differs the same way, else per task."""
    tasks = c.tasks.shared if c.tasks else sorted({f.task for f in c.factors})
    by_path: dict[str, list[FactorRow]] = {}
    for f in c.differing():
        by_path.setdefault(f.path, []).append(f)
    out = []
    for path, rows in sorted(by_path.items(), key=lambda kv: order(kv[0])):
        # one line for every task when every task's pair of values reads the same (keys name each task's own place)
        uniform = len(rows) == len(tasks) > 1 and all(
            (_reads(r.a), _reads(r.b)) == (_reads(rows[0].a), _reads(rows[0].b)) for r in rows)
        for r in rows[:1] if uniform else rows:
            a, b = values_diff(r.a, r.b, width)
            out.append(FactorLine(None if uniform or len(tasks) == 1 else r.task, factor_label(path), a, b))
    out.sort(key=lambda x: (x.scope is not None, x.scope or ""))
    return out


def equivalence_notes(c: Comparison) -> list[str]:
    """One line per kind of value judged the same though written differently (with the fields)."""
    seen: dict[str, list[str]] = {}
    for f in c.factors:
        if f.note:
            seen.setdefault(f.note, []).append(factor_label(f.path))
    return [f"{note} ({', '.join(dict.fromkeys(fields))})" for note, fields in seen.items()]


def unknown_fields(c: Comparison) -> list[str]:
    """Labels of every setting or fact one run does not record (or records as a default of a version it does
    not record)."""
    return sorted({factor_label(f.path) for f in c.factors if f.status == "unknown"})


def na_fields(c: Comparison) -> list[str]:
    """Settings that apply to one run only (never a difference), each as ``fewshot_split: n/a on A (0-shot)``."""
    out: dict[str, None] = {}
    for f in c.factors:
        if f.status != "n/a":
            continue
        sides = [k for k, v in (("A", f.a), ("B", f.b)) if v.source == "not_applicable"]
        why = "; ".join(dict.fromkeys(v.note for v in (f.a, f.b) if v.source == "not_applicable" and v.note))
        if len(sides) == 1:
            out[f"{factor_label(f.path)}: n/a on {sides[0]}" + (f" ({why})" if why else "")] = None
    return list(out)
