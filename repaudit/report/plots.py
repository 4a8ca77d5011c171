"""Figures for a paper appendix: the attribution waterfall and the sweep plot (matplotlib).

Both write a PNG and a PDF next to each other (``path`` with its suffix replaced) and return
the two paths. Scores and effects are drawn in points (metric × 100).
"""

from __future__ import annotations

from pathlib import Path

from repaudit.audit.attribution import AttributionReport
from repaudit.audit.sweep import SweepResult


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; never open a window
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> list[Path]:
    import io

    from repaudit.run.records import write_atomic

    out = []
    for suffix in (".png", ".pdf"):
        buf = io.BytesIO()
        fig.savefig(buf, format=suffix[1:], dpi=200, bbox_inches="tight")
        target = Path(path).with_suffix(suffix)
        write_atomic(target, buf.getvalue())
        out.append(target)
    return out


def waterfall(r: AttributionReport, path: Path) -> list[Path]:
    """Waterfall from recorded score A through each factor's Shapley value and the residual to score B.

    Factor bars carry their 95 % bootstrap interval as an error bar at the bar's end; the
    residual (recorded Δ − re-executed Δ) is its own, hatched bar.

    Returns:
        The PNG and PDF paths written.
    """
    plt = _pyplot()
    labels = ["A"] + list(r.factors) + ["residual", "B"]
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
    ax.set_ylabel(f"{r.metric} (points)")
    ax.set_title(f"{r.task}: A {a:.2f} → B {b:.2f}", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    paths = _save(fig, path)
    plt.close(fig)
    return paths


def sweep_plot(s: SweepResult, path: Path) -> list[Path]:
    """Score against the swept value, paired 95 % intervals, and the noise band (base ± 2 sd).

    Returns:
        The PNG and PDF paths written.
    """
    plt = _pyplot()
    labels = [f"{s.base_value}\n(base)"] + [str(p.value) for p in s.points]
    base = 100 * s.base_score
    scores = [base] + [100 * p.score for p in s.points]
    err_lo = [0.0] + [100 * (p.delta - p.ci_low) for p in s.points]
    err_hi = [0.0] + [100 * (p.ci_high - p.delta) for p in s.points]
    fig, ax = plt.subplots(figsize=(1.5 + 0.8 * len(labels), 3.4))
    band = 2 * 100 * s.noise_floor_sd
    ax.axhspan(base - band, base + band, color="tab:blue", alpha=0.15, label=f"noise floor (±2 sd = {band:.2f})")
    ax.axhline(base, color="tab:blue", linewidth=0.8)
    ax.errorbar(range(len(labels)), scores, yerr=[err_lo, err_hi], fmt="o", color="black", capsize=3,
                label="score, paired 95 % CI of Δ")
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlabel(s.factor)
    ax.set_ylabel(f"{s.metric} (points)")
    ax.set_title(f"{s.task}: sweep of {s.factor}", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    ax.grid(axis="y", alpha=0.3)
    paths = _save(fig, path)
    plt.close(fig)
    return paths
