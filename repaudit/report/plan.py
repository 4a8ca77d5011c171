"""Reports of ``--dry-run`` (:mod:`repaudit.audit.plan`): Markdown and one summary line."""

from __future__ import annotations

from repaudit.audit.plan import DryRun
from repaudit.escape import md


def dry_run_rows(plan: DryRun) -> list[tuple[str, ...]]:
    """(configuration, docs, requests, batches, in store, tokens to compute, estimate) per configuration."""
    return [(c.label, str(c.docs), str(c.requests), _n(c.batches), _n(c.batches_stored), _n(c.tokens_to_compute),
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
