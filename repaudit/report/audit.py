"""Render attributions (``repaudit attribute``) and sweeps (``repaudit sweep``) as Markdown or LaTeX.

Values are in points (metric × 100), as in the terminal view. LaTeX output is a fragment with
booktabs tables (``\\usepackage{booktabs}``); every string from a run goes through the escapers of
:mod:`repaudit.escape` (numbers formatted here need none in Markdown).
"""

from __future__ import annotations

from repaudit.audit.attribution import AttributionReport
from repaudit.audit.sequential import sequential_summary
from repaudit.audit.stats import level
from repaudit.audit.sweep import SweepResult
from repaudit.escape import latex as e
from repaudit.escape import md
from repaudit.report.glossary import plural, stat_label


def _pts(x: float) -> str:
    """Points, signed, with the minus sign compare prints (U+2212)."""
    return f"{100 * x:+.2f}".replace("-", "−")


def _ci(lo: float, hi: float) -> str:
    return f"[{_pts(lo)}, {_pts(hi)}]"


def latex_rows(rows) -> list[str]:
    return [" & ".join(e(c) for c in row) + r" \\" for row in rows]


def latex_table(caption: str, colspec: str, blocks: list[list[str]], label: str | None = None) -> str:
    """A booktabs table: ``blocks`` of ready LaTeX lines separated by ``\\midrule`` (the first is the header);
    ``label`` (ASCII letters, digits, ``-`` and ``:``) makes it referable."""
    lines = [r"\begin{table}[t]", r"\centering", r"\small",
             r"\caption{" + caption + "}" + (r"\label{" + label + "}" if label else ""),
             r"\begin{tabular}{" + colspec + "}", r"\toprule"]
    for i, block in enumerate(blocks):
        if i:
            lines.append(r"\midrule")
        lines += block
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def attribution_rows(r: AttributionReport) -> list[tuple[str, str, str]]:
    """(factor, value, (1 − alpha) CI) in points: one row per factor, then the residual and the totals."""
    rows = [(f, _pts(v), _ci(*ci)) for f, v, ci in zip(r.factors, r.phi, r.phi_ci)]
    rows.append(("residual (not replayable here)", _pts(r.residual), ""))
    rows.append(("re-executed Δ (sum of factors)", _pts(r.reexecuted_delta), ""))
    rows.append(("recorded Δ (B − A)", _pts(r.recorded_delta), ""))
    return rows


def attribution_summary(r: AttributionReport, esc=str, cost: bool = True) -> str:
    """Scores, fidelity, grid size and what could not be replayed; with ``cost``, the inference done and
    the wall time too (left out of LaTeX captions). ``esc`` escapes the metric name, which comes from
    the runs."""
    on = docs_used(r, " on ")
    count = "" if on else f", {plural(r.n_docs, 'doc')}"
    s = (f"Scores{on}: A {100 * r.recorded_a:.2f}, B {100 * r.recorded_b:.2f} ({esc(r.metric)}{count}). "
         f"Re-execution fidelity (per-doc prediction agreement with the recorded runs): A {100 * r.fidelity_a:.1f} %, "
         f"B {100 * r.fidelity_b:.1f} %. {r.configurations} configurations ({r.method})")
    s += (f", {r.forward_configurations} of them computed now ({plural(r.computed_batches, 'batch')} computed, "
          f"{r.cached_batches} read from the batch store), {r.wall_s:.0f} s." if cost else ".")
    if r.not_replayable:
        s += f" Differs but not replayable here: {', '.join(r.not_replayable)}."
    if r.not_recorded:
        s += f" Not recorded by one or both runs (may differ): {', '.join(r.not_recorded)}."
    if r.sequential is not None:
        s += " " + sequential_summary(r.sequential)
    return s + floor_sentence(r, esc)


def docs_used(r: AttributionReport, before: str = "") -> str:
    """Where the runs scored different docs, the docs an attribution's scores, Δ and residual are on — compare's
    rule, said as compare says it: ``before`` + ``the 40 docs both runs scored (A's file has 570, B's 40)`` (``120
    of the 40…`` where ``--precision`` stopped early); empty where both scored the same docs."""
    if r.n_shared is None or r.n_docs_a is None or r.n_docs_b is None or r.n_shared >= max(r.n_docs_a, r.n_docs_b):
        return ""
    used = "" if r.n_docs == r.n_shared else f"{r.n_docs} of "
    return f"{before}{used}the {r.n_shared} docs both runs scored (A's file has {r.n_docs_a}, B's {r.n_docs_b})"


def floor_sentence(r: AttributionReport, esc=str) -> str:
    """With ``--noise-floor``: the backend's numerical noise floor, whether the residual lies within 2 sd of it,
    and the factors whose Shapley value does (numerical noise could account for them); else empty."""
    if r.noise_floor_sd is None:
        return ""
    sd = r.noise_floor_sd
    within = [esc(f) for f, v in zip(r.factors, r.phi) if abs(v) <= 2 * sd]
    return (f" Numerical noise floor of the backend: sd {100 * sd:.2f} points ({esc(r.noise_floor_method or '')});"
            f" the residual {_pts(r.residual)} is {'within' if abs(r.residual) <= 2 * sd else 'beyond'} 2 sd of it"
            + (f"; factors within 2 sd (numerical noise could account for them): {', '.join(within)}." if within
               else "; every factor is beyond 2 sd."))


def attribution_markdown(r: AttributionReport) -> str:
    """Markdown: factor table (Shapley values), interaction table, summary."""
    ci = f"{level(r.alpha)} % CI"
    out = [f"### Attribution of the {md(r.metric)} delta on {md(r.task)} (points)", "",
           f"| factor | Shapley value | {ci} |", "|---|---:|---:|"]
    out += [f"| {md(a, block=False)} | {b} | {c} |" for a, b, c in attribution_rows(r)]
    if r.interactions:
        out += ["", f"| interaction | index | {ci} |", "|---|---:|---:|"]
        out += [f"| {md(' × '.join(i['pair']), block=False)} | {_pts(i['value'])} | {_ci(*i['ci'])} |"
                for i in r.interactions]
    out += ["", attribution_summary(r, md), "",
            "Shapley values over all hybrid configurations (HyperSHAP, Wever et al. 2025); intervals: "
            + interval_label(r.sequential) + f" ({OTHER_INTERVAL})."]
    return "\n".join(out) + "\n"


def attribution_latex(r: AttributionReport, label: str | None = None) -> str:
    """LaTeX fragment: one booktabs table of factors (and interactions below a rule), labelled ``label``."""
    rows = attribution_rows(r)
    ci = level(r.alpha) + r"\,\% CI"
    blocks = [[r"factor & value & " + ci + r" \\"], latex_rows(rows[:-3]), latex_rows(rows[-3:])]
    if r.interactions:
        blocks += [[r"interaction & index & " + ci + r" \\"],
                   latex_rows([(" x ".join(i["pair"]), _pts(i["value"]), _ci(*i["ci"])) for i in r.interactions])]
    return latex_table(r"Attribution of the " + e(r.metric) + " difference on " + e(r.task)
                        + r" to each factor (Shapley values in points, " + level(r.alpha) + r"\,\%"
                        + " intervals: " + e(interval_label(r.sequential)) + "; " + e(OTHER_INTERVAL) + "). "
                        + e(attribution_summary(r, cost=False)), "lrr", blocks, label)


def sweep_rows(s: SweepResult) -> list[tuple[str, ...]]:
    """(value, score, Δ, (1 − alpha) CI, flip rate, verdict) in points, base first."""
    rows: list[tuple[str, ...]] = [(f"{s.base_value} (base)", f"{100 * s.base_score:.2f}", "", "", "", "")]
    rows += [(str(p.value), f"{100 * p.score:.2f}", _pts(p.delta), _ci(p.ci_low, p.ci_high),
              f"{100 * p.flip_rate:.1f} %", p.verdict) for p in s.points]
    return rows


def sweep_floor(s: SweepResult) -> str:
    """The noise floor in one sentence."""
    out = (f"Noise floor: sd {100 * s.noise_floor_sd:.2f} points ({s.noise_floor_method}: "
           + ", ".join(f"{100 * x:.2f}" for x in s.noise_floor_scores) + ").")
    out += (f" The values' runs computed {plural(s.computed_batches, 'batch')} now and read {s.cached_batches} "
            "from the store.")
    return out if s.sequential is None else out + " " + sequential_summary(s.sequential)


def sweep_head(s: SweepResult) -> tuple[str, ...]:
    """The sweep table's columns; the interval's level is the sweep's (1 − alpha)."""
    return ("value", "score", "Δ", f"{level(s.alpha)} % CI", "flip rate", "verdict")


#: why an attribution's interval of a Δ and compare's of the same Δ on the same docs can differ: two methods
OTHER_INTERVAL = ("compare and gate give a 0/1 metric's Δ Tango's score interval instead, so their bounds for the "
                  "same Δ on the same docs can differ")


def interval_label(sequential) -> str:
    """The intervals of an attribution or sweep, by the label of :data:`~repaudit.report.glossary.STATISTICS`: the
    paired bootstrap over docs, or with ``--precision`` the sequential design's repeated confidence intervals."""
    return stat_label("paired_bootstrap" if sequential is None else "repeated_ci")


def sweep_legend(s: SweepResult) -> str:
    """What a sweep's Δ, interval and verdict are, in one sentence."""
    return (f"Δ against the base; intervals: {interval_label(s.sequential)}; an effect exceeds the "
            f"{stat_label('noise_floor')} when its interval excludes 0 and |Δ| > 2 sd of the floor.")


def sweep_markdown(s: SweepResult) -> str:
    """Markdown: one row per value, then the noise floor."""
    out = [f"### Sweep of {md(s.factor)} on {md(s.task)} ({md(s.metric)}, points)", "",
           "| " + " | ".join(sweep_head(s)) + " |", "|---|---:|---:|---:|---:|---|"]
    out += ["| " + " | ".join([md(row[0], block=False), *row[1:]]) + " |" for row in sweep_rows(s)]
    out += ["", sweep_floor(s), "",
            sweep_legend(s)]
    return "\n".join(out) + "\n"


def sweep_latex(s: SweepResult, label: str | None = None) -> str:
    """LaTeX fragment: one booktabs table, labelled ``label``."""
    return latex_table(r"Effect of " + e(s.factor) + " on " + e(s.metric) + " (" + e(s.task)
                        + r"), points; $\Delta$ against the base with its " + level(s.alpha)
                        + r"\,\% interval (" + e(interval_label(s.sequential)) + "). " + e(sweep_floor(s)),
                        "lrrrrl", [[r"value & score & $\Delta$ & " + level(s.alpha)
                                    + r"\,\% CI & flip rate & verdict \\"],
                                   latex_rows(sweep_rows(s))], label)


def attribution_rich(result, console) -> None:
    """The attribution in the terminal: Shapley values with their intervals, interactions, the summary line."""
    from rich.table import Table

    from repaudit.escape import rich_text

    table = Table(title=rich_text(f"attribution · {result.task} · {result.metric} (points)"))
    for col in ("factor", "Shapley value", f"{level(result.alpha)}% CI"):
        table.add_column(col, justify="left" if col == "factor" else "right")
    for row in attribution_rows(result):
        table.add_row(*(rich_text(c) for c in row))
    console.print(table)
    for it in result.interactions:
        console.print(rich_text(f"interaction {' × '.join(it['pair'])}: {_pts(it['value'])} pts "
                                f"{_ci(*it['ci'])}"))
    console.print(rich_text(attribution_summary(result)))
    console.print(rich_text(f"Intervals: {interval_label(result.sequential)} ({OTHER_INTERVAL})."))
