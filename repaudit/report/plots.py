"""Figures (matplotlib): the attribution waterfall, the sweep plot, the variance plot, the forest plot, the
trajectory of a series of checkpoints.

Each writes a PNG and a PDF next to each other (``path`` with its suffix replaced) and returns
the two paths; its ``*_svg`` twin, and the comparison's forest plot, return SVG text for the HTML
report. Scores and effects are drawn in points (metric × 100).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repaudit.audit.attribution import AttributionReport
from repaudit.audit.series import SeriesReport
from repaudit.audit.series_stats import CheckpointRow, ModelRow
from repaudit.audit.stats import level as ci_level
from repaudit.audit.sweep import SweepResult
from repaudit.audit.variance import VarianceReport


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; never open a window
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> list[Path]:
    import io

    from repaudit.outputs import write_file

    out = []
    for suffix in (".png", ".pdf"):
        buf = io.BytesIO()
        fig.savefig(buf, format=suffix[1:], dpi=200, bbox_inches="tight")
        target = Path(path).with_suffix(suffix)
        write_file(target, buf.getvalue(), "plot")
        out.append(target)
    return out


def _svg_text(fig) -> str:
    """``fig`` as SVG text for inlining into HTML (then closed): text stays text (``svg.fonttype`` none, escaped
    by matplotlib's SVG writer), no script, no external reference, no date, a fixed hash salt so that the same
    figure gives the same bytes."""
    import io

    plt = _pyplot()
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "repaudit"}):
        buf = io.StringIO()
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]


def _saved(fig, path: Path) -> list[Path]:
    paths = _save(fig, path)
    _pyplot().close(fig)
    return paths


def waterfall(r: AttributionReport, path: Path) -> list[Path]:
    """Waterfall from recorded score A through each factor's Shapley value and the residual to score B.

    Factor bars carry their (1 − alpha) bootstrap interval as an error bar at the bar's end; the
    residual (recorded Δ − re-executed Δ) is its own, hatched bar.

    Returns:
        The PNG and PDF paths written.
    """
    return _saved(_waterfall_fig(r), path)


def waterfall_svg(r: AttributionReport) -> str:
    """:func:`waterfall` as SVG text for the HTML report."""
    return _svg_text(_waterfall_fig(r))


def _waterfall_fig(r: AttributionReport):
    plt = _pyplot()
    labels = ["A"] + [_plain(f) for f in r.factors] + ["residual", "B"]
    steps = [100 * v for v in r.phi] + [100 * r.residual]
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * len(labels), 3.6))
    a, b = 100 * r.recorded_a, 100 * r.recorded_b
    ax.bar(0, a, color="0.55")
    level = a
    for i, step in enumerate(steps, start=1):
        is_residual = i == len(steps)
        color = "0.8" if is_residual else ("tab:green" if step >= 0 else "tab:red")
        ax.bar(i, step, bottom=level, color=color, hatch="//" if is_residual else None, edgecolor="0.3",
               linewidth=0.5)
        if not is_residual:
            lo, hi = (100 * x for x in r.phi_ci[i - 1])
            end = level + step
            ax.errorbar(i, end, yerr=[[step - lo], [hi - step]], color="black", capsize=3, linewidth=1)
        ax.annotate(f"{step:+.2f}", (i, level + step), ha="center", va="bottom" if step >= 0 else "top",
                    fontsize=7, xytext=(0, 2 if step >= 0 else -2), textcoords="offset points")
        level += step
    ax.bar(len(labels) - 1, b, color="0.35")
    lows = [a, b] + [a + sum(steps[:k]) for k in range(len(steps) + 1)]
    span = max(lows) - min(lows)
    ax.set_ylim(max(0.0, min(lows) - max(2.0, span)), max(lows) + max(2.0, 0.6 * span))
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_ylabel(f"{_plain(r.metric)} (points)")
    ax.set_title(f"{_plain(r.task)}: A {a:.2f} → B {b:.2f} on {r.n_docs} docs; bars: {ci_level(r.alpha)} % CI",
                 fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    return fig


def sweep_plot(s: SweepResult, path: Path) -> list[Path]:
    """Score against the swept value, paired (1 − alpha) intervals, and the noise band (base ± 2 sd).

    Returns:
        The PNG and PDF paths written.
    """
    return _saved(_sweep_fig(s), path)


def sweep_svg(s: SweepResult) -> str:
    """:func:`sweep_plot` as SVG text for the HTML report."""
    return _svg_text(_sweep_fig(s))


def _sweep_fig(s: SweepResult):
    plt = _pyplot()
    labels = [f"{_plain(s.base_value)}\n(base)"] + [_plain(p.value) for p in s.points]
    base = 100 * s.base_score
    scores = [base] + [100 * p.score for p in s.points]
    err_lo = [0.0] + [100 * (p.delta - p.ci_low) for p in s.points]
    err_hi = [0.0] + [100 * (p.ci_high - p.delta) for p in s.points]
    fig, ax = plt.subplots(figsize=(1.5 + 0.8 * len(labels), 3.4))
    band = 2 * 100 * s.noise_floor_sd
    ax.axhspan(base - band, base + band, color="tab:blue", alpha=0.15, label=f"noise floor (±2 sd = {band:.2f})")
    ax.axhline(base, color="tab:blue", linewidth=0.8)
    ax.errorbar(range(len(labels)), scores, yerr=[err_lo, err_hi], fmt="o", color="black", capsize=3,
                label=f"score, paired {ci_level(s.alpha)} % CI of Δ")
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlabel(_plain(s.factor))
    ax.set_ylabel(f"{_plain(s.metric)} (points)")
    ax.set_title(f"{_plain(s.task)}: sweep of {_plain(s.factor)}", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    ax.grid(axis="y", alpha=0.3)
    return fig


def variance_plot(r: VarianceReport, path: Path, metric: str | None = None) -> list[Path]:
    """Score of every run of a variance grid: per format, the few-shot seeds (filled) then the other
    orders of the first seed's examples (hollow), each with its (1 − alpha) normal interval over docs
    (± z₁₋α/₂ stderr); a line at each format's seed mean.

    Returns:
        The PNG and PDF paths written.
    """
    return _saved(_variance_fig(r, metric), path)


def variance_svg(r: VarianceReport, metric: str | None = None) -> str:
    """:func:`variance_plot` as SVG text for the HTML report."""
    return _svg_text(_variance_fig(r, metric))


def _variance_fig(r: VarianceReport, metric: str | None):
    plt = _pyplot()
    metric = metric or r.noise[0].metric
    scale = 1.0 if metric == "logp_gold_norm" else 100.0
    n_seeds = len(r.fewshot_seeds)
    from scipy.stats import norm

    z = float(norm.ppf(1 - r.alpha / 2))
    fig, ax = plt.subplots(figsize=(2.0 + 0.35 * len(r.runs), 3.4))
    x = 0
    ticks, labels = [], []
    for k, fmt in enumerate(r.formats):
        runs = [u for u in r.runs if u.format == fmt]
        color = f"C{k}"
        for j, u in enumerate(runs):
            y, se = scale * u.scores[metric], z * scale * u.stderr[metric]
            ax.errorbar(x, y, yerr=se, fmt="o", color=color, mfc=color if j < n_seeds else "white", capsize=2,
                        label=_plain(fmt) if j == 0 else None)
            ticks.append(x)
            labels.append(f"s{u.fewshot_seed}" if u.order_seed is None else f"o{u.order_seed}")
            x += 1
        mean = scale * next(n.score for n in r.noise if n.format == fmt and n.metric == metric)
        ax.hlines(mean, x - len(runs), x - 1, colors=color, linewidth=0.8, linestyles="dashed")
        x += 1
    ax.set_xticks(ticks, labels, rotation=90, fontsize=6)
    ax.set_ylabel(f"{_plain(metric)} ({'nats' if scale == 1.0 else 'points'})")
    ax.set_title(f"{_plain(r.task)}: {len(r.fewshot_seeds)} few-shot seeds (filled) and {len(r.order_seeds)} orders "
                 f"(hollow) per format; bars: {ci_level(r.alpha)} % CI over docs", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    ax.grid(axis="y", alpha=0.3)
    return fig


def trajectory_keys(r: SeriesReport, wanted: list[tuple[str, str]] | None = None, k: int = 6) -> list[tuple[str, str]]:
    """The (task, metric) panels of a trajectory: ``wanted`` as given, else the first ``k`` of the report's ranking."""
    rows: list[CheckpointRow | ModelRow] = [*r.checkpoint, *r.model]
    return wanted or list(dict.fromkeys((x.task, x.metric) for x in rows))[:k]


def trajectory_plot(r: SeriesReport, path: Path, keys: list[tuple[str, str]]) -> list[Path]:
    """Score over training step, one panel per (task, metric) in ``keys`` and one line per series (model), with
    the 95 % bootstrap band over docs where the runs have per-doc values. The step axis is logarithmic above 1
    and linear below (matplotlib's symlog, so that step 0 is drawn); scores in each row's unit.

    Returns:
        The PNG and PDF paths written.
    """
    return _saved(_trajectory_fig(r, keys), path)


def trajectory_svg(r: SeriesReport, keys: list[tuple[str, str]]) -> str:
    """:func:`trajectory_plot` as SVG text for the HTML report."""
    return _svg_text(_trajectory_fig(r, keys))


def _trajectory_fig(r: SeriesReport, keys: list[tuple[str, str]]):
    import math

    plt = _pyplot()
    rows: list[CheckpointRow | ModelRow] = [*r.checkpoint, *r.model]
    cols = min(3, len(keys))
    lines = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(lines, cols, squeeze=False, figsize=(4.2 * cols, 3.0 * lines))
    colours = {name: f"C{i}" for i, name in enumerate(dict.fromkeys(s.series for s in r.runs))}
    for ax, (task, metric) in zip(axes.flat, keys):
        mine = [x for x in rows if (x.task, x.metric) == (task, metric)]
        for series in colours:
            pts = sorted((p for x in mine for p in x.points if p.series == series and p.step is not None),
                         key=lambda p: p.step or 0)  # (every step is set: filtered above)
            if not pts:
                continue
            steps = [p.step for p in pts]
            ax.plot(steps, [p.score for p in pts], "o-", color=colours[series], markersize=2.5, linewidth=1,
                    label=_plain(series))
            band = [(p.step, p.ci_low, p.ci_high) for p in pts if p.ci_low is not None]
            if band:
                ax.fill_between([b[0] for b in band], [b[1] for b in band], [b[2] for b in band],
                                color=colours[series], alpha=0.2, linewidth=0)
        unit, direction = (mine[0].unit, mine[0].direction) if mine else ("", "unknown")
        ax.set_xscale("symlog", linthresh=1)
        ax.set_title(_label(f"{task} · {metric}", 50), fontsize=9)
        better = {"higher": " (higher is better)", "lower": " (lower is better)"}.get(direction, "")
        ax.set_ylabel(f"{_plain(metric)} ({_plain(unit)}){better}", fontsize=7)
        ax.set_xlabel("training step (log scale; 0 at left)", fontsize=7)
        if unit == "perplexity":
            ax.set_yscale("log")
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(keys):]:
        ax.set_visible(False)
    legend: dict[str, Any] = {}  # one entry per series, whichever panel drew it
    for ax in axes.flat:
        legend.update(zip(*reversed(ax.get_legend_handles_labels())))
    labels, handles = list(legend), list(legend.values())
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)) or 1, fontsize=7, frameon=False,
               bbox_to_anchor=(0.5, -0.02))
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def forest_svg(c) -> str:
    """Forest plot of a comparison's task rows (Δ = B − A with its interval, one panel per unit) as SVG text,
    for inlining into the HTML report. Rows without an interval are left out (the table has them); colour
    says the verdict (red worse, green better, grey otherwise). Returns "" when no row has an interval.

    Written by :func:`_svg_text`.
    """
    plt = _pyplot()
    from repaudit.report.glossary import verdict_word

    rows = [r for r in c.scores if not r.is_group and r.ci_low is not None and r.ci_high is not None]
    if not rows:
        return ""
    units = list(dict.fromkeys(r.unit for r in rows))
    heights = [len([r for r in rows if r.unit == u]) for u in units]
    with plt.rc_context({"font.size": 9}):
        fig, axes = plt.subplots(len(units), 1, squeeze=False, gridspec_kw={"height_ratios": heights},
                                 figsize=(7.5, 0.9 + 0.26 * sum(heights) + 0.5 * len(units)))
        for ax, unit in zip(axes[:, 0], units):
            sub = [r for r in rows if r.unit == unit]
            ys = list(range(len(sub)))[::-1]
            for y, r in zip(ys, sub):
                word = verdict_word(r.verdict, r.moved)
                color = {"worse": "tab:red", "better": "tab:green"}.get(word, "0.45")
                ax.plot([r.ci_low, r.ci_high], [y, y], color=color, linewidth=1.6)
                ax.plot([r.delta], [y], "o", color=color, markersize=4)
            ax.axvline(0, color="0.3", linewidth=0.8)
            ax.set_yticks(ys)
            ax.set_yticklabels([_label(f"{r.task} · {r.metric}", 60) for r in sub])
            ax.set_ylim(-0.7, len(sub) - 0.3)
            higher = {r.direction for r in sub}
            better = ("right = better" if higher == {"higher"} else
                      "left = better" if higher == {"lower"} else "direction per row in the table")
            ax.set_xlabel(f"Δ = B − A ({unit}); {better}")
            ax.grid(axis="x", color="0.9")
        fig.tight_layout()
        return _svg_text(fig)


def _label(s: str, width: int) -> str:
    s = _plain(s)
    return s if len(s) <= width else s[: width - 1] + "…"


def _plain(text) -> str:
    """``text`` from a run file as matplotlib shows it literally: on one line (control characters visible) and
    with ``$`` escaped, since a pair of dollars would otherwise be typeset as mathtext (and a bad one raises)."""
    from repaudit.escape import one_line

    return one_line(text).replace("$", r"\$")
