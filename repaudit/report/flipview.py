"""The flipped docs as every report shows them: grouped by task and metric, the top ones by margin, and each row's
cells — the metric's own predictions and margins (:mod:`repaudit.audit.picks`), "—" where a run's file cannot tell
them, with the reasons said once per table."""

from __future__ import annotations

from repaudit.audit.compare import Comparison
from repaudit.audit.flips import FlippedDoc
from repaudit.report.compare_text import doc_name, short

#: the cell of a prediction or margin that cannot be told from a run's file
UNKNOWN = "—"
#: the flip table's columns (terminal and Markdown; the margins are in nats)
FLIP_HEAD = ("doc", "", "target", "A pred", "B pred", "A margin", "B margin")
#: what a margin is, under every flip table
MARGIN_LEGEND = ("pred: each run's answer by this metric (acc_norm's: by log-likelihood per unit of length); margin: "
                 "the smallest change of one choice's log-likelihood (nats) that would change it; tie: a margin at "
                 "most --tie-eps")


def flip_groups(c: Comparison, top: int) -> list[tuple[str, str, list[FlippedDoc], int]]:
    """Per task×metric with flips, in score-table order: ``(task, metric, the top flips by margin, all flips)``;
    a flip both runs were sure about (the larger smaller margin) comes first."""
    groups: dict[tuple[str, str], list[FlippedDoc]] = {}
    for f in c.flips:
        groups.setdefault((f.task, f.metric), []).append(f)
    order = {(r.task, r.metric): i for i, r in enumerate(c.scores)}
    out = []
    for (task, metric), flips in sorted(groups.items(), key=lambda kv: order.get(kv[0], len(order))):
        ranked = sorted(flips, key=lambda f: -min(f.a_margin or 0.0, f.b_margin or 0.0))
        out.append((task, metric, ranked[:top], len(flips)))
    return out


def top_flips(c: Comparison, top: int) -> list[FlippedDoc]:
    """The ``top`` flips of each task×metric with the largest margins (see :func:`flip_groups`)."""
    return [f for _, _, flips, _ in flip_groups(c, top) for f in flips]


def margin_text(m: float | None) -> str:
    """A margin in nats with three decimals, or "—"."""
    return UNKNOWN if m is None else f"{m:.3f}"


def flip_cells(f: FlippedDoc, width: int = 16) -> tuple[str, ...]:
    """``(doc, direction, target, A pred, B pred, A margin, B margin)`` of one flip, as plain text (each format
    escapes it): the direction ``↓``/``↑`` with `` tie`` for churn, "—" for what cannot be told."""
    pred = (lambda p: UNKNOWN if p is None else short(p, width))
    return (doc_name(f.doc_id, f.key), ("↓" if f.direction == "right_to_wrong" else "↑") + (" tie" if f.near_tie
                                                                                            else ""),
            short(f.target, width), pred(f.a_prediction), pred(f.b_prediction), margin_text(f.a_margin),
            margin_text(f.b_margin))


def flip_reasons(flips: list[FlippedDoc]) -> list[str]:
    """Why columns of these flips show "—", each reason once with the runs it holds for (``A and B: …``)."""
    sides: dict[str, list[str]] = {}
    for f in flips:
        for part in (p for p in f.note.split("; ") if p):
            side, _, why = part.partition(": ")
            if side not in sides.setdefault(why, []):
                sides[why].append(side)
    return [f"{UNKNOWN} {' and '.join(s)}: {why}" for why, s in sides.items()]
