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
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from markupsafe import Markup

from repaudit.audit.compare import Comparison
from repaudit.escape import visible_controls

_TEMPLATES = "repaudit.report"


@dataclass
class Cell:
    """A table cell: its text (escaped when rendered) and an optional CSS class of ours."""

    text: str
    cls: str = ""

    def __post_init__(self) -> None:
        self.text = visible_controls(str(self.text))


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
    items: list[str] = field(default_factory=list)
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
                warnings: list[str] = (), browser: Any = None, browser_notes: list[str] = (),
                tie_eps: float = 0.01, footer: str = "") -> str:
    """The HTML page: ``headline`` (first line emphasised), run lines, warnings, ``sections`` in order, and the
    per-doc browser when ``browser`` (the payload of :func:`repaudit.report.docview.browser_data`) is given."""
    from jinja2 import Environment

    from repaudit import __version__

    env = Environment(autoescape=True, keep_trailing_newline=True)
    page = env.from_string(_asset("report.html.j2"))
    script = _asset("report.js") if browser is not None else ""
    clean = (lambda xs: [visible_controls(x) for x in xs])
    return page.render(title=visible_controls(title), headline=clean(headline), meta=clean(meta),
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
        SCORE_HEAD,
        agreement_lines,
        equivalence_notes,
        factor_lines,
        score_blocks,
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
    fac.items = [f"Same, written differently: {n}" for n in equivalence_notes(c)] + [f"Tasks {t}" for t in
                                                                                     task_lines(c, 60)]
    unknown = unknown_fields(c)
    if unknown:
        fac.after.append(f"Not recorded by one run ({len(unknown)} fields, cannot be told): " + ", ".join(unknown))
    blocks, footnotes = score_blocks(c)
    sc = Section("scores", "Scores", before=[scores_caption(c)], head=["task", *SCORE_HEAD],
                 numeric={"A", "B", "Δ", "95% CI", "p adj"})
    for b in blocks:
        for r in b.rows:
            word = r[-1].split(" [")[0]
            sc.rows.append([Cell(b.task + b.info), *(Cell(x) for x in r[:-1]), Cell(r[-1], _VERDICT_CLS.get(word, ""))])
    if not blocks:
        sc.head, sc.before = [], [*sc.before, NO_ROWS]
    sc.items = [f"[{i}] {n}" for i, n in enumerate(footnotes, 1)]
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


def render_compare_html(c: Comparison, browser: dict | None = None, browser_notes: list[str] = ()) -> str:
    """``repaudit compare --format html``: headline, runs, factor panel, scores with a forest plot,
    diagnostics, notes, then the per-doc browser (when ``browser`` is given)."""
    from pathlib import PurePath

    from repaudit.report.compare_text import headline, run_lines

    title = "repaudit compare: " + " vs ".join(s.get("name") or PurePath(s.get("path", "?")).name for s in (c.a, c.b))
    return render_page(title, headline(c), run_lines(c), compare_sections(c), c.warnings, browser,
                       browser_notes, c.tie_eps)
