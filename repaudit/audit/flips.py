"""The docs whose 0/1 outcome flipped between two runs, each with its metric's own prediction and margin on both
sides (:mod:`repaudit.audit.picks`), and the class a gate counts it in: harmful (right → wrong), beneficial
(wrong → right) or churn (a near tie: a run's margin at most ``tie_eps`` nats)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict

from repaudit.audit.picks import Scoring, pick
from repaudit.importers.comparable import TaskOutcome


class FlippedDoc(BaseModel):
    """A doc whose correctness on ``metric`` differs between A and B."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    task: str
    """The task."""
    metric: str
    """The 0/1 metric that flipped."""
    doc_id: int
    """The doc's id (its position in the split)."""
    direction: Literal["right_to_wrong", "wrong_to_right"]
    """right_to_wrong: right in A, wrong in B; wrong_to_right: the reverse."""
    target: str | None
    """The doc's target as A records it (else B's); None: neither records one."""
    a_prediction: object
    """A's prediction *by this metric* (a choice index, or an answer text): acc's argmax of the log-likelihoods,
    acc_norm's of the length-normalised ones, a filter's extracted answer (:mod:`repaudit.audit.picks`); None where
    it cannot be told from A's file (reports show "—"; ``note`` says why)."""
    b_prediction: object
    """B's prediction by this metric, as ``a_prediction``."""
    a_margin: float | None
    """A's margin by this metric: the smallest change, in nats, of one choice's log-likelihood that would change the
    metric's answer (acc: the gap between the two highest log-likelihoods); None: not multiple choice, or not
    derivable from A's file (reports show "—")."""
    b_margin: float | None
    """B's margin, as ``a_margin``."""
    near_tie: bool
    """A run's margin is at most ``tie_eps`` nats: the flip counts as churn."""
    key: str | None = None
    """The harness's own id of the doc where it is not the position (inspect's sample id); None otherwise."""
    doc: str = ""
    """The doc as its harness names it — ``key`` where there is one, else ``doc_id`` — the name every report
    prints."""
    note: str = ""
    """Why a prediction or margin is not shown (``A: acc_norm's char_length normalisation needs the choice texts,
    …``); empty when every column is."""


@dataclass
class FlipList:
    """Where a comparison's flipped docs go, and how each run's metrics pick their answers.

    Attributes:
        out: every flipped doc, appended in order.
        scoring_a: A's scoring of the task being compared (acc_norm's normalisation, the continuation delimiter).
        scoring_b: B's, as ``scoring_a``.
    """

    out: list[FlippedDoc] = field(default_factory=list)
    scoring_a: Scoring = field(default_factory=Scoring)
    scoring_b: Scoring = field(default_factory=Scoring)


def list_flips(task: str, metric: str, ta: TaskOutcome, tb: TaskOutcome, shared: list[int], xa, xb,
               tie_eps: float, flips: FlipList) -> dict[str, list[int]]:
    """Append every doc of ``shared`` whose per-doc ``metric`` differs (``xa`` vs ``xb``, 0/1) to ``flips.out``;
    the flipped doc ids by class: harmful, beneficial, churn (a run's own margin ≤ ``tie_eps`` nats)."""
    classes: dict[str, list[int]] = {"harmful": [], "beneficial": [], "churn": []}
    for i, va, vb in zip(shared, xa, xb):
        if va == vb:
            continue
        if ta.docs is None or tb.docs is None:  # the caller pairs docs both runs hold
            raise ValueError(f"task '{task}': a flip needs both runs' per-doc outcomes")
        da, db = ta.docs[i], tb.docs[i]
        pa, pb = pick(metric, da, flips.scoring_a), pick(metric, db, flips.scoring_b)
        tie = any(m is not None and m <= tie_eps for m in (pa.margin, pb.margin))
        classes["churn" if tie else "harmful" if va > vb else "beneficial"].append(i)
        note = "; ".join(f"{side}: {p.why}" for side, p in (("A", pa), ("B", pb)) if p.why)
        flips.out.append(FlippedDoc(task=task, metric=metric, doc_id=i,
                                    direction="right_to_wrong" if va > vb else "wrong_to_right",
                                    target=da.target if da.target is not None else db.target,
                                    a_prediction=pa.prediction, b_prediction=pb.prediction,
                                    a_margin=pa.margin, b_margin=pb.margin, near_tie=tie, key=da.key or db.key,
                                    doc=da.key or db.key or str(i), note=note))
    return classes
