"""Reports of ``--dry-run`` (:mod:`repaudit.audit.plan`): terminal lines, Markdown, LaTeX and one summary line."""

from __future__ import annotations

from repaudit.audit.plan import DryRun
from repaudit.escape import md

#: the plan table's columns
HEAD = ("configuration", "docs", "requests", "batches", "in store", "tokens to compute", "estimate")


def dry_run_lines(plan: DryRun, width: int) -> list[str]:
    """The plan as terminal lines of at most ``width`` characters where its numbers allow, no configuration name
    ever cut: one line per configuration where the longest name and the numbers fit side by side, else each name
    on a line of its own with its numbers on the next, under a two-line header."""
    rows = dry_run_rows(plan)
    num = [max([len(HEAD[i])] + [len(r[i]) for r in rows]) for i in range(1, len(HEAD))]
    label = max([len(HEAD[0])] + [len(r[0]) for r in rows])

    def numbers(cells) -> str:
        return "  ".join(c.rjust(w) for c, w in zip(cells, num))

    out = [f"dry run · {plan.command}"]
    if label + 2 + sum(num) + 2 * (len(num) - 1) <= width:
        out.append(f"{HEAD[0].ljust(label)}  {numbers(HEAD[1:])}")
        out += [f"{r[0].ljust(label)}  {numbers(r[1:])}" for r in rows]
        return out
    out += [HEAD[0], "    " + numbers(HEAD[1:])]
    for r in rows:
        out += [r[0], "    " + numbers(r[1:])]
    return out


def dry_run_rows(plan: DryRun) -> list[tuple[str, ...]]:
    """(configuration, docs, requests, batches, in store, tokens to compute, estimate) per configuration."""
    return [(c.label, _n(c.docs), _n(c.requests), _n(c.batches), _n(c.batches_stored), _n(c.tokens_to_compute),
             _s(c.estimate_s)) for c in plan.configurations]


def dry_run_markdown(plan: DryRun) -> str:
    """Markdown table of the plan (labels come from factor values: escaped)."""
    out = [f"### Dry run of {md(plan.command)}", "",
           "| configuration | docs | requests | batches | in store | tokens to compute | estimate |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    out += ["| " + " | ".join([md(r[0]), *r[1:]]) + " |" for r in dry_run_rows(plan)]
    out += ["", dry_run_summary(plan)]
    return "\n".join(out) + "\n"


def dry_run_summary(plan: DryRun) -> str:
    """One paragraph: totals, the throughput and where it came from."""
    rate = f"{plan.tokens_per_s:,.0f} tokens/s ({plan.throughput_source})" if plan.tokens_per_s else \
        "no throughput measured"
    s = (f"{len(plan.configurations)} configurations, {plan.stored} entirely in the store; {plan.tokens:,} tokens "
         f"still to compute; estimated {_s(plan.estimate_s)} of scoring at {rate}. "
         + ("Only those calibration requests were scored." if "now" in plan.throughput_source else
            "Nothing was run."))
    return s + (" " + plan.rounds_note if plan.rounds_note else "")


def _n(x: int | None) -> str:
    return "–" if x is None else f"{x:,}"


def _s(x: float | None) -> str:
    if x is None:
        return "unknown"
    return f"{x:.0f} s" if x < 120 else f"{x / 60:.1f} min"


def dry_run_latex(plan: DryRun) -> str:
    """LaTeX fragment: one booktabs table of the plan."""
    from repaudit.escape import latex as e
    from repaudit.report.audit import latex_rows, latex_table

    return latex_table("Dry run of " + e(plan.command) + ". " + e(dry_run_summary(plan)), "lrrrrrr",
                       [[r"configuration & docs & requests & batches & in store & tokens to compute & estimate \\"],
                        latex_rows(dry_run_rows(plan))])
