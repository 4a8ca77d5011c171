"""Text of the diagnostics, likely mechanisms and leakage warnings of a Comparison, shared by every
output format (each escapes the strings with its own escaper)."""

from __future__ import annotations

from repaudit.audit.compare import Comparison
from repaudit.audit.mechanisms import SHOW_IDS, DiagnosticRow, Mechanism
from repaudit.report.compare_text import doc_name, interval, num
from repaudit.report.glossary import diagnostic_label, plural, stat_label

DIAG_HEAD = ("task", "diagnostic", "A", "B")


def _side(value, ids: list[int] | None, why: str | None, keys: dict[int, str]) -> str:
    if value is None:
        return f"unknown ({why})" if why else "n/a"
    if ids is None:
        return str(value).lower() if isinstance(value, bool) else str(value)
    shown = ", ".join(doc_name(i, keys.get(i)) for i in ids[:SHOW_IDS]) + (" …" if len(ids) > SHOW_IDS else "")
    return f"{value}" + (f" ({'doc' if len(ids) == 1 else 'docs'} {shown})" if ids else "")


def diagnostic_cells(r: DiagnosticRow) -> list[str]:
    """task, diagnostic, A, B: a count with its first docs (the harness's sample ids where it has them), a value,
    or ``unknown (why)``."""
    return [r.task, diagnostic_label(r.name), _side(r.a, r.a_ids, r.a_unknown, r.keys),
            _side(r.b, r.b_ids, r.b_unknown, r.keys)]


def mechanism_line(m: Mechanism) -> str:
    """One sentence: the diagnostic, why it is named, and the score on the docs it spares in both runs."""
    head = f"{m.task}: likely mechanism: {diagnostic_label(m.diagnostic)}: {m.reason}"
    if m.delta_unaffected is None:
        docs = plural(m.n_unaffected, "doc")
        return head + {
            "no metric": "; no metric both runs report to score the unaffected docs",
            "no per-doc values": f"; {m.metric} has no per-doc values (a corpus-level metric, or not recorded per "
                                 f"doc), so the {docs} affected in neither run cannot be scored apart",
            "non-finite values": f"; {m.metric} is not finite on some of the {docs} affected in neither run",
        }.get(m.unscored, f"; too few docs unaffected in both runs ({m.n_unaffected}) to score them" if m.n_unaffected
              else "; every shared doc is affected in one run or the other: none is left to score apart")
    k = 100.0 if m.unit == "proportion" else 1.0

    def scaled(x: float | None) -> float | None:  # None stays None: num and interval say it is missing
        return None if x is None else k * x

    unit = "pts" if m.unit == "proportion" else m.unit
    d = 2 if unit == "pts" else None
    how = ("every doc of the score row: its Δ and interval" if m.same_docs_as_row else
           stat_label(m.interval_method))
    return (head + f"; {m.metric} on the {m.n_unaffected} docs affected in neither run: A "
            f"{num(scaled(m.a_unaffected), unit, False, d)}, B {num(scaled(m.b_unaffected), unit, False, d)}, Δ "
            f"{num(k * m.delta_unaffected, unit, True, d)} {interval(scaled(m.ci_low), scaled(m.ci_high), unit, d)} "
            f"{unit} "
            f"({how})")


def has_diagnostics(c: Comparison) -> bool:
    return bool(c.diagnostics or c.mechanisms or c.warnings)
