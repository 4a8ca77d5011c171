"""Each metric's own answer on one doc, and how sure it was: the prediction and margin a flip row shows.

A multiple-choice doc's metrics choose from the same per-choice log-likelihoods in different ways (lm-eval 0.4.13's
``ConfigurableTask.process_results``; :mod:`repaudit.run.metrics`):

* ``acc``: the argmax of the log-likelihoods;
* ``acc_norm``: the argmax of log-likelihood ÷ the choice's length — in characters (lm-eval: ``len(choice)`` of the
  task's ``doc_to_choice``, i.e. the scored continuation without its target delimiter), UTF-8 bytes or continuation
  tokens, as the run's ``scoring.acc_norm`` says — or of log-likelihood − the choice's unconditional log-likelihood
  (``pmi``);
* ``acc_bytes``: ÷ UTF-8 bytes; ``acc_mutual_info``: − the unconditional log-likelihood.

Ties go to the first choice (numpy's argmax, as lm-eval).

The **margin** is the metric's own too: the smallest change, in nats, of one choice's log-likelihood that would
change the metric's answer. For acc it is the gap between the two highest log-likelihoods; for a normalised score
``s = ll / L`` with winner ``w`` it is ``min((s_w − max_{k≠w} s_k)·L_w, min_{k≠w} (s_w − s_k)·L_k)`` — lowering the
winner's log-likelihood or raising another's; for pmi the gap between the two highest scores. Being in nats for every
metric, it is read against ``--tie-eps`` (nats) alike: a flip is a near tie (churn) where a run's margin is at most
that — the log-likelihood noise of a dtype or a batch size could have made it.

A prediction is given only where it follows from what the run records and agrees with the recorded per-doc value (the
argmax is the gold choice exactly where the doc scored 1): never another metric's answer. Where it cannot — no
per-choice log-likelihoods, no choice texts for a length normalisation, no token counts or unconditional
log-likelihoods, a normalisation the run does not record and no gold choice to check it — the prediction and margin
are ``None`` (reports show "—") and ``why`` says which.
"""

from __future__ import annotations

from dataclasses import dataclass

from repaudit.audit.docmatch import target_index
from repaudit.importers.comparable import DocOutcome
from repaudit.run.metrics import argmax_first
from repaudit.vocabulary import Recorded

#: a multiple-choice metric → the normalisation it applies (``None``: raw log-likelihoods; acc_norm's is the run's)
RULES: dict[str, str | None] = {"acc": None, "acc_bytes": "byte_length", "acc_mutual_info": "pmi"}
#: how each normalisation picks, in words
METHODS = {None: "argmax of log-likelihood",
           "char_length": "argmax of log-likelihood / choice length in characters",
           "byte_length": "argmax of log-likelihood / choice length in UTF-8 bytes",
           "token_length": "argmax of log-likelihood / continuation tokens",
           "pmi": "argmax of log-likelihood - unconditional log-likelihood"}


@dataclass(frozen=True)
class Scoring:
    """How one run's metrics pick an answer.

    Attributes:
        acc_norm: acc_norm's normalisation (``char_length``, ``byte_length``, ``token_length``, ``pmi``).
        recorded: the run records it (a harness default of a known version counts: it is how the harness scored);
            else lm-eval's ``char_length`` is assumed and used only where a gold choice confirms it.
        delimiter: the text each scored continuation in the run's ``choices`` starts with that the choice's length
            does not count (lm-eval's target delimiter); ``None``: the choices are the texts themselves.
    """

    acc_norm: str = "char_length"
    recorded: bool = False
    delimiter: str | None = None


def scoring_of(source: str, rec: Recorded) -> Scoring:
    """A task's :class:`Scoring` from its record: ``scoring.acc_norm`` and, for another harness's run (``source``
    not ``repaudit …``, whose choices are the texts), the recorded ``prompt.target_delimiter``."""
    norm = rec.value("scoring.acc_norm")
    delim = None if source.startswith("repaudit") else rec.value("prompt.target_delimiter")
    return Scoring(norm if isinstance(norm, str) else "char_length", isinstance(norm, str),
                   delim if isinstance(delim, str) and delim else None)


@dataclass(frozen=True)
class Pick:
    """One metric's answer on one doc: ``prediction`` (a choice index, or an answer text), ``margin`` (nats; see
    the module docstring), each ``None`` where it cannot be told, and ``why`` not (empty when it can)."""

    prediction: int | str | None
    margin: float | None = None
    why: str = ""
    rule: str | None = None


def choice_texts(doc: DocOutcome, scoring: Scoring) -> list[str] | None:
    """The choice texts a length normalisation measures: the recorded choices without the run's delimiter."""
    if not doc.choices:
        return None
    d = scoring.delimiter
    return [c[len(d):] if d and c.startswith(d) else c for c in doc.choices]


def pick(metric: str, doc: DocOutcome, scoring: Scoring) -> Pick:
    """``metric``'s own prediction and margin on ``doc`` (see the module docstring)."""
    name, _, flt = metric.partition(",")
    lls = doc.loglikelihoods
    if name == "acc_norm" or name in RULES:
        if lls and len(lls) >= 2:
            return _choice_pick(metric, name, doc, scoring)
        if name != "acc":
            return Pick(None, why=f"{name} needs each choice's log-likelihood, which the run's file does not keep")
    elif lls and len(lls) >= 2:
        return Pick(None, why=f"{name} of a multiple-choice task scores the choices' log-likelihoods; it predicts no "
                              "choice of its own")
    if flt and doc.extracted and flt in doc.extracted:
        return Pick(doc.extracted[flt], rule=f"filter {flt}")
    if doc.prediction is None:
        return Pick(None, why="the run records no prediction for this doc")
    return Pick(doc.prediction, rule="the harness's recorded answer")


def _choice_pick(metric: str, name: str, doc: DocOutcome, scoring: Scoring) -> Pick:
    norm = scoring.acc_norm if name == "acc_norm" else RULES[name]
    got = _scores(name, norm, doc, scoring)
    if isinstance(got, str):
        return Pick(None, why=got)
    scores, lengths = got
    idx = argmax_first(scores)
    texts = choice_texts(doc, scoring)
    gold = _gold(doc, texts, len(scores))
    value = doc.metrics.get(metric)
    if gold is not None and value in (0.0, 1.0) and float(idx == gold) != value:
        return Pick(None, why=f"the argmax under {norm or 'raw log-likelihoods'} (choice {idx}) disagrees with the "
                              f"recorded per-doc {metric} {value!r}")
    if gold is None and name == "acc_norm" and not scoring.recorded:
        return Pick(None, why="the run records neither acc_norm's normalisation nor the gold choice to check one")
    return Pick(idx, margin(scores, lengths), rule=norm)


def _scores(name: str, norm: str | None, doc: DocOutcome, scoring: Scoring) -> tuple[list[float], list[float]] | str:
    """The metric's per-choice scores and the lengths they divide by (1 where they divide by nothing), or why they
    cannot be computed."""
    lls = list(doc.loglikelihoods or [])
    ones = [1.0] * len(lls)
    if norm is None:
        return lls, ones
    if norm == "pmi":
        u = doc.unconditional
        if not u or len(u) != len(lls):
            return (f"{name}'s pmi normalisation needs each choice's unconditional log-likelihood, which the run's "
                    "file does not keep")
        return [ll - x for ll, x in zip(lls, u)], ones
    if norm == "token_length":
        n = doc.continuation_tokens
        if not n or len(n) != len(lls):
            return f"{name}'s token_length normalisation needs each continuation's token count, which the run's " \
                   "file does not keep"
        lengths = [float(x) for x in n]
    else:
        texts = choice_texts(doc, scoring)
        if texts is None or len(texts) != len(lls):
            return f"{name}'s {norm} normalisation needs the choice texts, which the run's file does not keep"
        if len(set(texts)) == 1:
            return (f"{name}'s {norm} normalisation divides by the options' lengths, and the scored continuations "
                    "are all one text (partial scoring, as WinoGrande): the file does not keep the options")
        lengths = [float(len(t) if norm == "char_length" else len(t.encode("utf-8"))) for t in texts]
    lengths = [x if x else 1.0 for x in lengths]  # lm-eval's rule in repaudit: an empty text divides by nothing
    return [ll / x for ll, x in zip(lls, lengths)], lengths


def margin(scores: list[float], lengths: list[float]) -> float:
    """The smallest change, in nats, of one choice's log-likelihood that changes the argmax of ``scores`` (each a
    log-likelihood divided by its ``lengths`` entry, or offset: lengths 1); see the module docstring."""
    w = argmax_first(scores)
    others = [k for k in range(len(scores)) if k != w]
    second = max(scores[k] for k in others)
    return float(min([(scores[w] - second) * lengths[w]] + [(scores[w] - scores[k]) * lengths[k] for k in others]))


def _gold(doc: DocOutcome, texts: list[str] | None, n: int) -> int | None:
    """The gold choice's index: the target as an index, a letter or one of the choice texts."""
    t = (doc.target or "").strip()
    if t.isdigit():
        return int(t) if int(t) < n else None
    return target_index(doc.target, texts)
