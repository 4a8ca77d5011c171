"""Render ``repaudit determinism`` reports: terminal, Markdown, LaTeX and HTML (JSON is the report itself).

Log-likelihood differences are in nats (natural-log probability units), as |Δ| = |this configuration − the axis's
reference|; counts are docs of the probed docs. Every string from the run (task, model, labels, notes, error text)
goes through :mod:`repaudit.escape` for its format.
"""

from __future__ import annotations

from repaudit.audit.determinism import AxisPoint, DeterminismReport, worst_key
from repaudit.escape import latex as e
from repaudit.escape import md
from repaudit.report.audit import latex_rows, latex_table
from repaudit.report.glossary import plural

HEAD = ("axis", "vs", "configuration", "docs changed", "max |Δ ll| (nats)", "flips", "verdict")
#: columns right-aligned
NUMERIC = {"docs changed", "max |Δ ll| (nats)", "flips"}


def _nats(x: float | None) -> str:
    if x is None:
        return "—"
    return "0" if x == 0 else f"{x:.2e}"


def _detail(p: AxisPoint) -> str:
    """A point's qualifiers: the earliest generation divergence, what it could not do as asked."""
    out = []
    if p.divergence:
        doc, tok = min(p.divergence.items(), key=lambda kv: kv[1])
        out.append(f"first divergent token {tok} (doc {doc})")
    if p.note:
        out.append(p.note)
    return "; ".join(out)


def rows(r: DeterminismReport) -> list[tuple[str, ...]]:
    """One row per point (:data:`HEAD`), an axis's name and reference on its first row; a skipped axis as one row
    (why: :func:`note_lines`)."""
    out: list[tuple[str, ...]] = []
    for a in r.axes:
        name = a.axis + (" (control)" if a.control else "")
        if a.skipped is not None:
            out.append((name, "—", "—", "", "", "", "skipped"))
            continue
        for k, p in enumerate(a.points):
            out.append((name if k == 0 else "", a.reference if k == 0 else "", p.label,
                        f"{p.docs_changed}/{p.n_docs}", _nats(p.max_abs_delta), str(p.flips),
                        p.verdict if p.judged else f"{p.verdict} (shown, not judged)"))
        if not a.points:
            out.append((name, a.reference, "—", "", "", "", "nothing to compare"))
    return out


def headline(r: DeterminismReport) -> str:
    """The verdict in one sentence, with the exit code and the worst numbers behind it."""
    if r.unsupported is not None:
        return f"Not measured (exit {r.exit_code}): {r.unsupported}"
    measured = [a for a in r.axes if a.skipped is None and a.points and not a.control]
    parts = []
    for a in measured:
        p = max(a.points, key=worst_key)
        if a.verdict == "bit-identical":
            continue
        delta = "" if p.max_abs_delta is None else f" by up to {_nats(p.max_abs_delta)} nats"
        parts.append(f"{a.axis} ({p.label}) changed {p.docs_changed} of {p.n_docs} docs{delta}, "
                     f"{plural(p.flips, 'prediction')}")
    same = [a.axis for a in measured if a.verdict == "bit-identical"]
    if same:
        parts.append(", ".join(same) + " bit-identical")
    if not measured:
        parts.append("no axis measured")
    return f"Verdict: {r.verdict} (exit {r.exit_code}): " + "; ".join(parts) + "."


def run_line(r: DeterminismReport) -> str:
    """What was probed: task, model, backend, dtype, device (a served model: the server, its version and URL),
    batch size, docs, threads."""
    if r.server is not None:
        sv = r.server
        where = (f"served by {sv.kind}{' ' + sv.version if sv.version else ''} at {sv.base_url} (dtype and device "
                 "not told)")
        return (f"{r.task} · {r.model} · {where} · batch size {r.batch_size} · {plural(r.n_docs, 'doc')} probed · "
                f"{r.wall_s:.0f} s")
    return (f"{r.task} · {r.model} · {r.backend} {r.dtype} on {r.device} · batch size {r.batch_size} · "
            f"{plural(r.n_docs, 'doc')} probed · {plural(r.torch_threads, 'torch thread')} · {r.wall_s:.0f} s")


def modes_line(r: DeterminismReport) -> str:
    """The determinism switches in force (a served model's are its server's: what it tells, else not told)."""
    if r.server is not None:
        told = {k: v for k, v in r.server.facts.items() if "determin" in k or "invariant" in k}
        said = "; ".join(f"{k} {v}" for k, v in sorted(told.items()))
        return ("Modes: the server's (" + said + ")." if said else
                "Modes: a served model's determinism switches are its server's (VLLM_BATCH_INVARIANT, SGLang's "
                "--enable-deterministic-inference, …); this endpoint does not tell them.")
    m = r.modes
    ops = m.get("batch_invariant_ops")
    parts = [f"torch deterministic algorithms {'on' if m.get('torch_deterministic_algorithms') else 'off'}",
             f"CUBLAS_WORKSPACE_CONFIG {m.get('cublas_workspace_config') or 'unset'}",
             (f"batch_invariant_ops {ops}, mode {'on' if m.get('batch_invariant_ops_mode') else 'off'}" if ops else
              "batch_invariant_ops not installed"),
             f"attention {m.get('attention') or 'unknown'}"]
    if "vllm_batch_invariant" in m:
        parts.append(f"VLLM_BATCH_INVARIANT {'on' if m['vllm_batch_invariant'] else 'off'}")
    if m.get("vllm_tp_invariant"):
        parts.append(f"VLLM_TP_INVARIANT {m['vllm_tp_invariant']}")
    if m.get("batch_invariant_requested"):
        parts.append("--batch-invariant asked")
    return "Modes: " + "; ".join(parts) + "."


def compare_lines(r: DeterminismReport) -> list[str]:
    """Per measured axis: what ``repaudit compare`` of two runs differing only along it would show."""
    return [f"{a.axis}: {a.expected_compare}" for a in r.axes if a.skipped is None and a.points]


def note_lines(r: DeterminismReport) -> list[str]:
    """Why an axis was skipped, each point's qualifiers and each axis's notes, prefixed with the axis; the process
    axis's environments where they differ from the reference's."""
    out = []
    for a in r.axes:
        if a.skipped is not None:
            out.append(f"{a.axis}: skipped: {a.skipped}")
        out += [f"{a.axis} {p.label}: {d}" for p in a.points if (d := _detail(p))]
        out += [f"{a.axis}: {n}" for n in a.notes]
        if a.reference_environment:
            out.append(f"{a.axis}: {a.reference} environment: {_env(a.reference_environment)}")
            out += [f"{a.axis} {p.label}: environment differs: {_env(p.environment)}" for p in a.points
                    if p.environment and _env(p.environment) != _env(a.reference_environment)]
    return out


def _env(env: dict) -> str:
    """A process's numerics environment in one line (its pid left out: it always differs)."""
    variables = env.get("variables") or {}
    vs = ", ".join(f"{k}={v}" for k, v in sorted(variables.items())) or "no numerics variables set"
    return (f"torch threads {env.get('torch_threads')} (inter-op {env.get('torch_interop_threads')}), "
            f"deterministic algorithms {'on' if env.get('deterministic_algorithms') else 'off'}, {vs}")


def diff_rows(d) -> list[tuple[str, ...]]:
    """One row per configuration both reports traced (:class:`repaudit.audit.determinism_diff.TraceDiff`)."""
    return [(c.axis, c.label, f"{c.requests_changed}/{c.n_requests}", f"{c.docs_changed}/{c.n_docs}",
             _nats(c.max_abs_delta), str(c.flips), c.verdict) for c in d.configurations]


DIFF_HEAD = ("axis", "configuration", "requests changed", "docs changed", "max |Δ ll| (nats)", "flips", "verdict")


def _diff_lines(d) -> list[str]:
    out = [f"A = {d.report_a}: {d.setup_a}", f"B = {d.report_b}: {d.setup_b}",
           f"Verdict (B against A, request by request): {d.headline} (exit {d.exit_code})."]
    if d.only_a:
        out.append("Traced by A only: " + ", ".join(d.only_a))
    if d.only_b:
        out.append("Traced by B only: " + ", ".join(d.only_b))
    return out


def diff_rich(d, console) -> None:
    """``--diff`` in the terminal: both setups, the table, the verdict."""
    from rich.table import Table

    from repaudit.escape import rich_text

    table = Table(title="determinism · two reports compared")
    for col in DIFF_HEAD:
        table.add_column(col, justify="right" if col in NUMERIC | {"requests changed"} else "left", overflow="fold")
    for row in diff_rows(d):
        table.add_row(*(rich_text(c) for c in row))
    console.print(table)
    for line in [*_diff_lines(d), FOOT_DIFF]:
        console.print(rich_text(line), highlight=False, soft_wrap=True)


def diff_markdown(d) -> str:
    """``--diff`` in Markdown."""
    out = ["### Determinism: two reports compared", ""] + [md(x) + "  " for x in _diff_lines(d)] + [
        "", "| " + " | ".join(md(h, block=False) for h in DIFF_HEAD) + " |",
        "|" + "|".join("---:" if h in NUMERIC | {"requests changed"} else "---" for h in DIFF_HEAD) + "|"]
    out += ["| " + " | ".join(md(c, block=False) for c in row) + " |" for row in diff_rows(d)]
    return "\n".join([*out, "", md(FOOT_DIFF)]) + "\n"


FOOT_DIFF = ("Requests are matched by their key (sha256 of the request), docs by id; Δ = B − A in nats; a flip is a "
             "doc whose log-likelihood argmax or generated text differs.")


FOOT = ("Bit-identical: every log-likelihood (nats), greedy flag and generated text has the same bits as the "
        "axis's reference. Flips: docs whose prediction or a per-doc metric differs. The dtype control never "
        "decides the exit code (0 bit-identical, 1 predictions differ, 2 only numbers differ, 65 nothing measured).")


#: terminal widths of the numeric columns, so that the verdict keeps its words at 80 columns
_WIDTHS = {"axis (vs)": 13, "configuration": 13, "docs changed": 7, "max |Δ ll| (nats)": 10, "flips": 5}


def determinism_rich(r: DeterminismReport, console) -> None:
    """The report in the terminal: the run, the table, the verdict, modes, compare expectations, notes."""
    from rich.table import Table

    from repaudit.escape import rich_text

    table = Table(title=rich_text("determinism · " + run_line(r)))
    head = ("axis (vs)", *HEAD[2:])  # the reference under the axis's name: one column less at 80 columns
    for col in head:
        table.add_column(col, justify="right" if col in NUMERIC else "left", overflow="fold",
                         max_width=_WIDTHS.get(col))
    for row in rows(r):
        axis = rich_text(row[0]) + (f"\n(vs {rich_text(row[1])})" if row[0] and row[1] not in ("", "—") else "")
        table.add_row(axis, *(rich_text(c) for c in row[2:]))
    console.print(table)
    for line in [headline(r), modes_line(r), *(["What compare would show:"] if compare_lines(r) else []),
                 *(f"  {x}" for x in compare_lines(r)),
                 *(["Notes:"] if note_lines(r) else []), *(f"  {x}" for x in note_lines(r)), FOOT]:
        console.print(rich_text(line), highlight=False, soft_wrap=True)


def determinism_markdown(r: DeterminismReport) -> str:
    """Markdown: the run, the verdict, the table, modes, compare expectations, notes."""
    out = [f"### Determinism: {md(r.task)} on {md(r.backend)} {md(r.dtype)}", "", md(run_line(r)), "",
           f"**{md(headline(r))}**", "", "| " + " | ".join(md(h, block=False) for h in HEAD) + " |",
           "|" + "|".join("---:" if h in NUMERIC else "---" for h in HEAD) + "|"]
    out += ["| " + " | ".join(md(c, block=False) for c in row) + " |" for row in rows(r)]
    out += ["", md(modes_line(r))]
    if compare_lines(r):
        out += ["", "What `repaudit compare` of two runs differing only along an axis would show:", ""]
        out += [f"- {md(x, block=False)}" for x in compare_lines(r)]
    if note_lines(r):
        out += ["", "Notes:", ""] + [f"- {md(x, block=False)}" for x in note_lines(r)]
    out += ["", md(FOOT)]
    return "\n".join(out) + "\n"


def determinism_latex(r: DeterminismReport) -> str:
    """A booktabs fragment: the table, captioned with the run, the verdict and the modes."""
    caption = " ".join(e(x) for x in (f"Determinism of {r.task}:", run_line(r) + ".", headline(r), modes_line(r),
                                       FOOT))
    return latex_table(caption, "lllrrrl", [latex_rows([HEAD]), latex_rows(rows(r))])


def _axis_cls(row: tuple[str, ...]) -> str:
    v = row[-1]
    return "worse" if v.startswith("predictions differ") else ("down" if v.startswith("numerically") else "")


def determinism_html(r: DeterminismReport) -> str:
    """One self-contained page: the verdict, the table, modes, compare expectations and notes."""
    from repaudit.report.html import Section, _table, render_page

    table = _table("determinism", "Axes", HEAD, rows(r), NUMERIC, [FOOT], _axis_cls)
    sections = [table] + ([Section("compare", "What compare would show", items=[*compare_lines(r)])]
                          if compare_lines(r) else [])
    if note_lines(r):
        sections.append(Section("notes", "Notes", items=[*note_lines(r)]))
    return render_page(f"repaudit determinism: {r.task}", [headline(r), modes_line(r)], [run_line(r)], sections)

