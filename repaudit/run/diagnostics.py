"""Run diagnostics: the silent protocol failures a score table does not show, counted from per-doc results.

* generate_until: generations that hit ``max_gen_toks`` (``truncated``), how each generation ended
  (a stop sequence, EOS, the budget), empty answers, answers a filter could not extract (lm-eval's
  regex filter answers ``[invalid]``), mean and max generated tokens;
* log-likelihood multiple choice: docs whose top two choices have exactly the same log-likelihood
  (the prediction is then the first of them, lm-eval's ``argmax``);
* few-shot: docs found (by content hash) among their own few-shot examples, answer included, and
  whether the examples were drawn from the evaluation split.

Why these: lm-eval #1465/#2676 (missing BOS), allenai/olmo-eval #399 (36.8 % of IFEval responses at
the token cap), lm-eval PR #2034 (strict-match 0.20 vs flexible-extract 0.78 on the same generations),
lighteval #649 (two stop lists, 0.690 vs 0.0015). A diagnostic a file cannot support is listed in
``unknown`` with the reason, never reported as zero.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict

from repaudit.tasks.filters import INVALID

#: diagnostics that name a set of docs, in report order (``extraction_failed`` is per filter)
DOC_SETS = ("truncated", "scored_empty", "empty", "extraction_failed", "ties", "context_truncated",
            "fewshot_leaked")


class Diagnostics(BaseModel):
    """Per-run diagnostics (see the module docstring). Doc-id lists are sorted; ``None`` = does not
    apply to this task's output type, or cannot be told (then ``unknown`` says why)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    n_docs: int
    """Docs the diagnostics were counted over."""
    truncated: list[int] | None = None
    """generate_until: doc_ids whose generation stopped at ``max_gen_toks`` (finish ``length``); None for
    log-likelihood tasks or where how generations ended is not recorded."""
    finish: dict[str, int] | None = None
    """generate_until: finish reason (``stop:<s>``, ``eos``, ``length``) → number of docs; None as for
    ``truncated``."""
    empty: list[int] | None = None
    """generate_until: doc_ids whose generation is empty or whitespace; None for log-likelihood tasks or where raw
    generations are not recorded."""
    scored_empty: dict[str, list[int]] | None = None
    """generate_until: answer filter → doc_ids whose scored (filtered) answer is empty or whitespace — what the
    metric saw, which a filter can empty where the raw generation is not (``empty``); None for log-likelihood tasks
    or where filtered answers are not recorded."""
    extraction_failed: dict[str, list[int]] | None = None
    """generate_until: answer filter → doc_ids whose extracted answer is ``[invalid]`` or empty; None for
    log-likelihood tasks or where filtered answers are not recorded."""
    gen_tokens_mean: float | None = None
    """generate_until: mean generated tokens per doc, rounded to 0.01; None for log-likelihood tasks or where token
    counts are not recorded."""
    gen_tokens_max: int | None = None
    """generate_until: the most tokens any doc generated; None as for ``gen_tokens_mean``."""
    ties: list[int] | None = None
    """Log-likelihood tasks: doc_ids whose two highest choice log-likelihoods are exactly equal (the first wins);
    None for generation or where per-choice log-likelihoods are not recorded."""
    context_truncated: list[int] | None = None
    """doc_ids with a request whose context was cut from the left to fit the model's maximum length; None where
    context token counts are not recorded."""
    fewshot_leaked: list[int] | None = None
    """doc_ids found (by content) among their own few-shot examples; None where the few-shot examples of each doc
    are not recorded."""
    fewshot_from_eval_split: bool | None = None
    """True when few-shot examples were drawn from the evaluation split itself; None: not known."""
    unknown: dict[str, str] = {}
    """Diagnostic name → why it cannot be told from this source."""

    def doc_sets(self) -> dict[str, list[int]]:
        """Every doc-set diagnostic present, flattened: ``truncated``, ``extraction_failed[strict-match]``, …"""
        out: dict[str, list[int]] = {}
        for name in DOC_SETS:
            v = getattr(self, name)
            if isinstance(v, dict):
                out.update({f"{name}[{k}]": ids for k, ids in v.items()})
            elif v is not None:
                out[name] = v
        return out


def diagnose(docs: Iterable[Any], generative: bool, *, leaked: list[int] | None = None,
             from_eval_split: bool | None = None, unknown: dict[str, str] | None = None,
             context_truncated: list[int] | None = None) -> Diagnostics:
    """Diagnostics of per-doc results.

    ``docs`` are objects with ``doc_id`` and, for generate_until, ``generation`` (raw text),
    ``extracted`` (filter name → answer), ``finish`` and ``generated_tokens`` (``None`` where the
    source does not record them); for multiple choice ``loglikelihoods``. ``leaked`` and
    ``from_eval_split`` come from whoever knows the few-shot pool, ``context_truncated`` from whoever
    tokenised the requests. ``unknown`` names diagnostics the caller cannot support, with why.
    """
    docs = list(docs)
    unknown = dict(unknown or {})
    if context_truncated is None:
        unknown.setdefault("context_truncated", "context token counts are not recorded")
    d = Diagnostics(n_docs=len(docs), fewshot_leaked=None if leaked is None else sorted(leaked),
                    context_truncated=None if context_truncated is None else sorted(context_truncated),
                    fewshot_from_eval_split=from_eval_split, unknown=unknown)
    if generative:
        finishes = [x.finish for x in docs]
        if docs and all(f is not None for f in finishes):
            d.truncated = sorted(x.doc_id for x in docs if x.finish == "length")
            d.finish = dict(sorted(Counter(finishes).items()))
        elif "truncated" not in unknown:
            unknown["truncated"] = "the file does not record how generations ended"
        toks = [x.generated_tokens for x in docs]
        if docs and all(t is not None for t in toks):
            d.gen_tokens_mean = round(sum(toks) / len(toks), 2)
            d.gen_tokens_max = max(toks)
        elif "gen_tokens" not in unknown:
            unknown["gen_tokens"] = "generated token counts are not recorded"
        gens = [x.generation for x in docs]
        if docs and all(g is not None for g in gens):
            d.empty = sorted(x.doc_id for x in docs if not x.generation.strip())
        else:
            unknown.setdefault("empty", "raw generations are not recorded")
        names = sorted({k for x in docs for k in (x.extracted or {})})
        if names:
            d.extraction_failed = {n: sorted(x.doc_id for x in docs if (x.extracted or {}).get(n) in (INVALID, ""))
                                   for n in names}
            d.scored_empty = {n: sorted(x.doc_id for x in docs if n in (x.extracted or {})
                                        and not x.extracted[n].strip()) for n in names}
        else:
            unknown.setdefault("extraction_failed", "filtered answers are not recorded")
    else:
        lls = [x.loglikelihoods for x in docs]
        if docs and all(ll for ll in lls):
            d.ties = sorted(x.doc_id for x in docs if len(x.loglikelihoods) > 1
                            and sorted(x.loglikelihoods)[-1] == sorted(x.loglikelihoods)[-2])
        else:
            unknown.setdefault("ties", "per-choice log-likelihoods are not recorded")
    if leaked is None:
        unknown.setdefault("fewshot_leaked", "the file does not record which few-shot examples each doc got")
    d.unknown = unknown
    return d
