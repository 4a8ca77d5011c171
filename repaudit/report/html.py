"""One self-contained HTML file per report: no network, styles, script, figures and data inlined.

Made with Jinja2 (autoescaping on: every string from a run file is HTML-escaped) from
``templates/report.html.j2``; the per-doc browser is ``templates/report.js``, plain JavaScript that puts
file strings into the page with ``textContent`` only. Its data is gzip-compressed JSON in base64 inside a
``<script type="application/octet-stream">`` block: base64 has no ``<``, ``&`` or U+2028, so no file string
can close the block or start markup, and the compression keeps a 14,042-doc report small.

The Content-Security-Policy allows no network load (``default-src 'none'``), images only as ``data:``, and
exactly one script: the browser's, by its sha256 (a script tag that an escaping bug let through would not
run). Styles may be inline (matplotlib's SVG uses style attributes; CSS cannot run code).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from markupsafe import Markup

from repaudit.audit.compare import Comparison
from repaudit.escape import one_line

_TEMPLATES = "repaudit.report"


@dataclass
class Cell:
    """A table cell: its text (on one line as in the terminal, escaped when rendered) and an optional CSS
    class of ours."""

    text: str
    cls: str = ""

    def __post_init__(self) -> None:
        # HTML folds a tab or a newline into a space: a name with a newline would read as one with a space
        self.text = one_line(self.text)


@dataclass
class Section:
    """One block of the report: paragraphs before, a table, a figure (our SVG), a list, notes after."""

    id: str
    title: str
    before: list[str] = field(default_factory=list)
    head: list[str] = field(default_factory=list)
    rows: list[list[Cell]] = field(default_factory=list)
    numeric: set[str] = field(default_factory=set)
    svg: Markup | str = ""
    items: list[str | tuple[str, list[str]]] = field(default_factory=list)
    """List items; a ``(line, sub_lines)`` item carries a nested list."""
    after: list[str] = field(default_factory=list)


def _asset(name: str) -> str:
    return resources.files(_TEMPLATES).joinpath("templates", name).read_text(encoding="utf-8")


def _csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:; "
            "base-uri 'none'; form-action 'none'")


def pack(payload: Any) -> str:
    """``payload`` as base64 of gzip-compressed JSON (``mtime`` 0: the same payload gives the same text)."""
    raw = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")


def unpack(text: str) -> Any:
    """Inverse of :func:`pack` (tests and benchmarks read a report's data back with it)."""
    return json.loads(gzip.decompress(base64.b64decode(text)))


def render_page(title: str, headline: list[str], meta: list[str], sections: list[Section],
                warnings: Sequence[str] = (), browser: Any = None, browser_notes: Sequence[str] = (),
                tie_eps: float = 0.01, footer: str = "") -> str:
    """The HTML page: ``headline`` (first line emphasised), run lines, warnings, ``sections`` in order, and the
    per-doc browser when ``browser`` (the payload of :func:`repaudit.report.docview.browser_data`) is given."""
    from jinja2 import Environment

    from repaudit import __version__

    env = Environment(autoescape=True, keep_trailing_newline=True)
    page = env.from_string(_asset("report.html.j2"))
    script = _asset("report.js") if browser is not None else ""
    def clean(xs: Sequence[Any]) -> list[Any]:  # a (line, sub_lines) item: both made one-line
        return [one_line(x) if isinstance(x, str) else (one_line(x[0]), clean(x[1])) for x in xs]

    for sec in sections:  # lines are appended after construction, so made one-line here
        sec.before, sec.items, sec.after = clean(sec.before), clean(sec.items), clean(sec.after)
    return page.render(title=one_line(title), headline=clean(headline), meta=clean(meta),
                       warnings=clean(warnings), sections=sections, css=Markup(_asset("report.css")),
                       script=Markup(script), csp=_csp(script), version=__version__,
                       browser=pack(browser) if browser is not None else None,
                       browser_notes=clean(browser_notes), tie_eps=f"{tie_eps:g}",
                       footer=footer or f"Written by repaudit {__version__}. Self-contained: no network access.")


_VERDICT_CLS = {"worse": "worse", "better": "better", "up": "up", "down": "down"}


def compare_sections(c: Comparison) -> list[Section]:
    """The comparison's blocks in report order: factors, scores (table and forest plot), doc agreement,
    diagnostics and mechanisms, notes."""
    from repaudit.report.compare import NO_ROWS
    from repaudit.report.compare_text import (
        agreement_lines,
        equivalence_notes,
        factor_lines,
        na_fields,
        numeric_columns,
        score_blocks,
        score_columns,
        scores_caption,
        task_lines,
        unknown_fields,
    )
    from repaudit.report.diagnostics import DIAG_HEAD, diagnostic_cells, mechanism_line
    from repaudit.report.plots import forest_svg

    fac = Section("factors", "Factors that differ", head=["scope", "factor", "A", "B"])
    fac.rows = [[Cell(f.scope or "all tasks"), Cell(f.label), Cell(f.a), Cell(f.b)] for f in factor_lines(c, 200)]
    if not fac.rows:
        fac.before.append("No recorded factor differs.")
    fac.items = [*(f"Same, written differently: {n}" for n in equivalence_notes(c)), *task_lines(c, 60)]
    if na_fields(c):
        fac.items.append("Applying to one run only (not a difference): " + "; ".join(na_fields(c)))
    unknown = unknown_fields(c)
    if unknown:
        fac.after.append(f"Not recorded by one or both runs ({len(unknown)} fields, cannot be told): "
                         + ", ".join(unknown))
    blocks, footnotes = score_blocks(c)
    head = score_columns(c)
    sc = Section("scores", "Scores", before=[scores_caption(c)], head=["task", *head],
                 numeric={head[i] for i in numeric_columns(head)})
    for b in blocks:
        for r in b.rows:
            word = r[-1].split(" [")[0]
            sc.rows.append([Cell(b.task + b.info), *(Cell(x) for x in r[:-1]), Cell(r[-1], _VERDICT_CLS.get(word, ""))])
    if not blocks:
        sc.head, sc.before = [], [*sc.before, NO_ROWS]
    from repaudit.report.power import POWER_CAPTION, power_lines

    sc.items = [f"[{i}] {n}" for i, n in enumerate(footnotes, 1)]
    if lines := power_lines(c.scores):
        sc.items += ["What each paired row can detect: " + POWER_CAPTION, *lines]
    svg = forest_svg(c)
    sc.svg = Markup(svg) if svg else ""
    sc.after = agreement_lines(c)
    out = [fac, sc]
    if c.diagnostics or c.mechanisms:
        dg = Section("diagnostics", "Diagnostics and likely mechanisms", head=list(DIAG_HEAD))
        dg.rows = [[Cell(x) for x in diagnostic_cells(r)] for r in c.diagnostics]
        dg.items = [mechanism_line(m) for m in c.mechanisms]
        out.append(dg)
    if c.notes:
        out.append(Section("notes", "Notes", items=list(c.notes)))
    return out


def render_compare_html(c: Comparison, browser: dict | None = None, browser_notes: Sequence[str] = ()) -> str:
    """``repaudit compare --format html``: headline, runs, factor panel, scores with a forest plot,
    diagnostics, notes, then the per-doc browser (when ``browser`` is given)."""
    from pathlib import PurePath

    from repaudit.report.compare_text import headline, run_lines

    title = "repaudit compare: " + " vs ".join(s.get("name") or PurePath(s.get("path", "?")).name for s in (c.a, c.b))
    return render_page(title, headline(c), run_lines(c), compare_sections(c), c.warnings, browser,
                       browser_notes, c.tie_eps)


def _table(id: str, title: str, head, rows, numeric=(), before=(), cls_of=None) -> Section:
    """A section holding one table of already formatted cells (``cls_of(row)``: the last cell's class)."""
    sec = Section(id, title, before=list(before), head=list(head), numeric=set(numeric))
    for row in rows:
        cells = [Cell(x) for x in row]
        if cls_of is not None and cells:
            cells[-1].cls = cls_of(row)
        sec.rows.append(cells)
    return sec


_DECISION_CLS = {"FAIL": "worse", "PASS": "better", "INCONCLUSIVE": ""}


def render_gate_html(g, browser: dict | None = None, browser_notes: Sequence[str] = ()) -> str:
    """``repaudit gate --format html``: the decision, one row per gated task and metric, why every FAIL or
    INCONCLUSIVE row moved, then the comparison behind it (factors, scores, forest plot, diagnostics) and the
    per-doc browser (when ``browser`` is given)."""
    from repaudit.report.compare_text import run_lines
    from repaudit.report.gate import HEAD, _level, cells, why_lines

    head = [*HEAD[:6], _level(g), *HEAD[7:]]
    rows = [cells(r, g.policy.alpha) for r in g.rows]
    gate = _table("gate", "Gate", head, rows, {"margin", "d", _level(g), "p", "p adj", "MDE"},
                  [f"d = B − A oriented so that positive is better, in points for proportions; {_level(g)} (two "
                   f"one-sided tests at α = {g.policy.alpha:g}); multiplicity: {g.policy.multiplicity}."],
                  lambda row: _DECISION_CLS.get(row[-1], ""))
    for r in g.rows:
        if r.decision != "PASS":
            first, *rest = why_lines(r)
            gate.items.append((first, [x.strip() for x in rest]) if rest else first)
    if g.not_gated:
        gate.after.append(f"Not gated ({len(g.not_gated)}, no policy row matches): " + ", ".join(g.not_gated))
    sections = [gate, *compare_sections(g.comparison)]
    if g.notes:
        sections.append(Section("gate-notes", "Gate notes", items=list(g.notes)))
    return render_page(f"repaudit gate: {g.decision}", [f"Gate: {g.summary}"], run_lines(g.comparison), sections,
                       g.comparison.warnings, browser, browser_notes, g.comparison.tie_eps)


def render_attribution_html(r, browser: dict | None = None, browser_notes: Sequence[str] = ()) -> str:
    """``repaudit attribute --format html``: Shapley values per factor with their intervals, the waterfall
    (SVG), the interactions, what ran, then the per-doc browser of the two recorded runs (when given)."""
    from repaudit.audit.stats import level
    from repaudit.report.audit import (
        OTHER_INTERVAL,
        _ci,
        _pts,
        attribution_rows,
        attribution_summary,
        docs_used,
        interval_label,
    )
    from repaudit.report.glossary import plural
    from repaudit.report.plots import waterfall_svg

    interval = interval_label(r.sequential)
    ci = f"{level(r.alpha)} % CI"
    fac = _table("attribution", f"Attribution of the {r.metric} delta on {r.task} (points)",
                 ["factor", "Shapley value", ci], attribution_rows(r), {"Shapley value", ci},
                 [f"Shapley values over all hybrid configurations (HyperSHAP, Wever et al. 2025) in points (× 100); "
                  f"intervals: {interval} ({OTHER_INTERVAL}). Positive: the factor moved B above A."])
    fac.svg = Markup(waterfall_svg(r))
    out = [fac]
    if r.interactions:
        out.append(_table("interactions", "Interactions", ["pair", "index", ci],
                          [(" × ".join(i["pair"]), _pts(i["value"]), _ci(*i["ci"])) for i in r.interactions],
                          {"index", ci},
                          ["Shapley interaction index of each pair of factors (points): non-zero when two factors "
                           "are not additive."]))
    top = max(range(len(r.phi)), key=lambda i: abs(r.phi[i])) if r.phi else None
    first = (f"{r.task} {r.metric}{docs_used(r, ' on ')}: A {100 * r.recorded_a:.2f} → B {100 * r.recorded_b:.2f} "
             f"pts, recorded Δ {_pts(r.recorded_delta)} pts = {plural(len(r.factors), 'factor')} "
             f"{_pts(r.reexecuted_delta)} + residual {_pts(r.residual)}"
             + (f"; largest: {r.factors[top]} {_pts(r.phi[top])} {_ci(*r.phi_ci[top])}." if top is not None else "."))
    return render_page(f"repaudit attribute: {r.task} {r.metric}", [first, attribution_summary(r)], [], out, (),
                       browser, browser_notes)


def render_sweep_html(s) -> str:
    """``repaudit sweep --format html``: score per value with Δ against the base and its interval, the noise
    floor, and the sweep plot (SVG)."""
    from repaudit.report.audit import sweep_floor, sweep_head, sweep_legend, sweep_rows
    from repaudit.report.plots import sweep_svg

    head = sweep_head(s)
    sec = _table("sweep", f"Sweep of {s.factor} on {s.task} ({s.metric}, points)", head, sweep_rows(s),
                 set(head[1:5]),
                 [sweep_legend(s)])
    sec.svg = Markup(sweep_svg(s))
    sec.after = ["Per-doc view: compare the base run with a value's run (repaudit compare A B -o report.html)."]
    beyond = [str(p.value) for p in s.points if p.verdict == "exceeds noise floor"]
    first = (f"Sweep of {s.factor} on {s.task} ({s.metric}): {len(beyond)} of {len(s.points)} values move the score "
             f"beyond the noise floor" + (f" ({', '.join(beyond)})." if beyond else "."))
    return render_page(f"repaudit sweep: {s.factor} on {s.task}", [first, sweep_floor(s)], [], [sec])


def render_variance_html(r, plot_metric: str | None = None) -> str:
    """``repaudit variance --format html``: the noise table, the score per format, and the plot of every
    run (SVG; ``plot_metric``, default the first measured)."""
    from repaudit.report.plots import variance_svg
    from repaudit.report.variance import (
        SPLIT_CAPTION,
        SPLIT_HEAD,
        _v,
        head,
        noise_rows,
        split_rows,
        spread_rows,
        variance_summary,
    )

    noise = _table("noise", f"Benchmark noise: {r.task}", head(r), noise_rows(r), set(head(r)[2:]))
    noise.svg = Markup(variance_svg(r, plot_metric))
    out = [noise]
    if r.format_spread:
        cols = ["metric", *r.formats, "spread (max − min)"]
        out.append(_table("formats", "Score per prompt format (seed means)", cols, spread_rows(r), set(cols[1:])))
    if split_rows(r):
        out.append(_table("split", "Prediction vs data noise", SPLIT_HEAD, split_rows(r), set(SPLIT_HEAD[2:]),
                          [SPLIT_CAPTION]))
    first = f"Benchmark noise of {r.task}: " + "; ".join(
        f"{x.format} {x.metric}: seed sd {_v(x.seed_sd, x.metric)}, MDE {_v(x.mde, x.metric)} "
        + ("nats" if x.metric == "logp_gold_norm" else "pts") for x in r.noise if x.counterpart is None)
    return render_page(f"repaudit variance: {r.task}", [first, variance_summary(r)], [], out)


def render_series_html(r, keys: list[tuple[str, str]]) -> str:
    """``repaudit variance FILE… --across --format html``: the ranked table with the trajectory of ``keys`` (SVG;
    none for a seed series), the confounders, names that contradict their files, repeated steps, what was left
    out, and notes."""
    from repaudit.report.plots import trajectory_svg
    from repaudit.report.series import confounder_lines, head, headline, is_numeric, other_lines, rows, summary

    cols = head(r)
    table = _table("series", f"Series across {r.across}s", cols, rows(r), {h for h in cols if is_numeric(h)},
                   [summary(r)])
    if keys:
        table.svg = Markup(trajectory_svg(r, keys))
    out = [table]
    if lines := confounder_lines(r):
        out.append(Section("confounders", "Confounders: settings that differ between runs", items=[*lines]))
    out += [Section(f"series-{i}", title, items=[*items]) for i, (title, items) in enumerate(other_lines(r))]
    return render_page(f"repaudit variance --across {r.across}", [headline(r)],
                       [f"{s.name}: {s.series}, step {s.step if s.step is not None else 'not recorded'} ({s.source})"
                        for s in r.runs], out)
