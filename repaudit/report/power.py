"""What a paired score row can detect, in words and one table cell: the MDE at 80 % power beside the row, and one
line per paired row with its effective docs, the docs a 1- and a 3-point move need, and — for a row within noise
— the move that could hide there (:mod:`repaudit.audit.mde`). Shared by compare's and gate's text formats."""

from __future__ import annotations

from repaudit.audit.compare import ScoreRow
from repaudit.audit.mde import RowPower, hide_sentence


def mde_cell(r: ScoreRow) -> str:
    """The MDE of a paired row in its unit (2 decimals), ``–`` where none is detectable; empty for other rows."""
    if r.power is None:
        return ""
    return "–" if r.power.mde is None else f"{r.power.mde:.2f}"




def power_text(p: RowPower, unit: str, within_noise: bool) -> str:
    """One row's power in one sentence (without its task and metric)."""
    mde = "none detectable" if p.mde is None else f"{p.mde:.2f} {unit}"
    eff = (f"{p.n_effective:,.0f} effective docs of {p.n_docs:,} (design effect {p.design_effect:.2f})"
           if p.design_effect != 1 else f"{p.n_docs:,} docs")
    flips = f", {100 * p.flip_share:.1f} % of them flip" if p.flip_share is not None else ""
    out = f"MDE {mde} ({100 * p.power:.0f} % power, {p.test} at α = {p.alpha:g}; {eff}{flips})"
    have = max(p.docs_available or 0, p.n_docs)
    within = {m: v for m, v in p.docs_for.items() if v is not None and v <= have}  # the note says what the rest need
    if within:
        out += "; docs to detect " + ", ".join(f"a {m}-pt move: {v:,}" for m, v in within.items())
    if within_noise:
        out += "; " + hide_sentence(p, unit)
    return out + (f"; {p.note}" if p.note else "")


def power_lines(rows: list[ScoreRow]) -> list[str]:
    """``task metric: …`` for every paired row with a power record, in table order."""
    return [f"{r.task} {r.metric}: " + power_text(r.power, r.unit, r.verdict == "within noise")
            for r in sorted(rows, key=lambda r: r.is_group) if r.power is not None]


POWER_CAPTION = ("MDE: the smallest true move the row's own test (exact McNemar for 0/1 metrics on paired docs, else "
                 "the z-test of the row's standard error) detects with 80 % power on these docs at the row's α, before "
                 "the multiplicity adjustment; effective docs: docs over the design effect of clusters (subjects); a "
                 "move's docs assume the same per-doc noise.")
