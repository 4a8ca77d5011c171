"""Text of the diagnostics, likely mechanisms and leakage warnings of a Comparison, shared by every
output format (each escapes the strings with its own escaper)."""

from __future__ import annotations

from repaudit.audit.compare import Comparison
from repaudit.audit.mechanisms import SHOW_IDS, DiagnosticRow, Mechanism
from repaudit.report.glossary import diagnostic_label

DIAG_HEAD = ("task", "diagnostic", "A", "B")


def _side(value, ids: list[int] | None, why: str | None) -> str:
    if value is None:
        return f"unknown ({why})" if why else "n/a"
    if ids is None:
        return str(value).lower() if isinstance(value, bool) else str(value)
    shown = ", ".join(map(str, ids[:SHOW_IDS])) + (" …" if len(ids) > SHOW_IDS else "")
    return f"{value}" + (f" ({'doc' if len(ids) == 1 else 'docs'} {shown})" if ids else "")


def diagnostic_cells(r: DiagnosticRow) -> list[str]:
    """task, diagnostic, A, B: a count with its first doc ids, a value, or ``unknown (why)``."""
    return [r.task, diagnostic_label(r.name), _side(r.a, r.a_ids, r.a_unknown), _side(r.b, r.b_ids, r.b_unknown)]


def mechanism_line(m: Mechanism) -> str:
    """One sentence: the diagnostic, why it is named, and the score on the docs it spares in both runs."""
    head = f"{m.task}: likely mechanism: {diagnostic_label(m.diagnostic)}: {m.reason}"
    if m.delta_unaffected is None:
        return head + (f"; too few docs unaffected in both runs ({m.n_unaffected}) to score them"
                       if m.metric else "; no shared per-doc metric to score the unaffected docs")
    k = 100.0 if m.unit == "proportion" else 1.0
    unit = "pts" if m.unit == "proportion" else m.unit
    return (head + f"; {m.metric} on the {m.n_unaffected} docs affected in neither run: A "
            f"{k * m.a_unaffected:.2f}, B {k * m.b_unaffected:.2f}, Δ {k * m.delta_unaffected:+.2f} "
            f"[{k * m.ci_low:+.2f}, {k * m.ci_high:+.2f}] {unit}")


def has_diagnostics(c: Comparison) -> bool:
    return bool(c.diagnostics or c.mechanisms or c.warnings)
