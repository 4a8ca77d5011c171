"""Answer filters and generative metric options, as lm-evaluation-harness 0.4.13 defines them.

A filter pipeline (lm-eval's ``filter_list`` entry) turns a generation into the answer that is scored:
a named sequence of steps, each one of

* ``regex`` — ``re.findall(regex_pattern, text)``; the match at ``group_select`` (a tuple of groups
  keeps its first non-empty group), stripped; ``fallback`` (``[invalid]``) when nothing matches;
* ``take_first`` — the first of the (repeated) responses: a no-op for one response;
* ``lowercase`` / ``uppercase``;
* ``remove_whitespace`` — leading whitespace removed (lm-eval 0.4.13's ``WhitespaceFilter``).

``exact_match`` follows Hugging Face ``evaluate``'s metric with lm-eval's options: each
``regexes_to_ignore`` pattern is removed from prediction and reference, then ``ignore_case``,
``ignore_punctuation`` (``string.punctuation``) and ``ignore_numbers`` are applied, and the two
strings are compared. :func:`match_answer` adds the other matching rules in use
(:data:`ANSWER_MATCHES`): HELM's quasi-exact match and lighteval's prefix and suffix matches.
"""

from __future__ import annotations

import contextlib
import re
import string
from dataclasses import dataclass, field
from typing import Any, get_args

from repaudit.errors import RepauditError
from repaudit.settings import AnswerMatch

#: lm-eval's fallback answer when a regex finds nothing
INVALID = "[invalid]"
#: filter functions repaudit implements (lm-eval's names)
KNOWN_STEPS = ("regex", "take_first", "lowercase", "uppercase", "remove_whitespace")


@dataclass(frozen=True)
class FilterStep:
    """One step of a pipeline: lm-eval's function name and its keyword arguments."""

    function: str
    regex_pattern: str = r"#### (\-?[0-9\.\,]+)"
    group_select: int = 0
    fallback: str = INVALID

    def apply(self, text: str) -> str:
        if self.function == "regex":
            matches = re.findall(self.regex_pattern, text)
            if not matches:
                return self.fallback
            match = matches[self.group_select]
            if isinstance(match, tuple):
                match = next((m for m in match if m), "")
                if not match:
                    return self.fallback
            return match.strip()
        if self.function == "lowercase":
            return text.lower()
        if self.function == "uppercase":
            return text.upper()
        if self.function == "remove_whitespace":
            return text.lstrip()
        return text  # take_first: one response per request


@dataclass(frozen=True)
class FilterPipeline:
    """A named answer filter (``strict-match``, ``flexible-extract``, ``none``)."""

    name: str
    steps: tuple[FilterStep, ...] = ()

    def apply(self, text: str) -> str:
        for step in self.steps:
            text = step.apply(text)
        return text


#: lm-eval's default when a generate_until task records no filter_list
NO_FILTER = FilterPipeline("none", (FilterStep("take_first"),))


def pipeline_from_spec(spec: dict[str, Any], where: str) -> FilterPipeline:
    """A pipeline from one recorded ``filter_list`` entry (``{"name": …, "filter": [{"function": …}, …]}``).

    Raises:
        RepauditError: an unknown filter function or an argument of the wrong type, named with ``where``.
    """
    steps = []
    for i, step in enumerate(spec.get("filter") or []):
        fn = step.get("function")
        if fn not in KNOWN_STEPS:
            raise RepauditError(f"{where}.filter[{i}]: filter function '{fn}' is not one repaudit implements "
                                f"({', '.join(KNOWN_STEPS)})")
        kwargs = {k: step[k] for k in ("regex_pattern", "group_select", "fallback") if k in step}
        try:
            if "regex_pattern" in kwargs:
                re.compile(kwargs["regex_pattern"])
            if not isinstance(kwargs.get("group_select", 0), int) or not isinstance(kwargs.get("fallback", ""), str):
                raise TypeError
        except (re.error, TypeError):
            raise RepauditError(f"{where}.filter[{i}]: the arguments of '{fn}' are not a valid regex, an integer "
                                "group_select and a string fallback") from None
        steps.append(FilterStep(fn, **kwargs))
    return FilterPipeline(str(spec.get("name", "none")), tuple(steps))


@dataclass(frozen=True)
class ExactMatchOptions:
    """lm-eval's ``exact_match`` options (``metric_list`` entry keys)."""

    ignore_case: bool = False
    ignore_punctuation: bool = False
    ignore_numbers: bool = False
    regexes_to_ignore: tuple[str, ...] = field(default_factory=tuple)


_PUNCT = str.maketrans("", "", string.punctuation)
_DIGITS = str.maketrans("", "", string.digits)


def _normalise(s: str, opts: ExactMatchOptions) -> str:
    for pattern in opts.regexes_to_ignore:
        s = re.sub(pattern, "", s)
    if opts.ignore_case:
        s = s.lower()
    if opts.ignore_punctuation:
        s = s.translate(_PUNCT)
    if opts.ignore_numbers:
        s = s.translate(_DIGITS)
    return s


def exact_match(prediction: str, target: str, opts: ExactMatchOptions) -> float:
    """1.0 when ``prediction`` equals ``target`` after the options, else 0.0."""
    return float(_normalise(prediction, opts) == _normalise(target, opts))


#: ``--answer-match``: how an extracted answer is matched against the target
ANSWER_MATCHES: tuple[str, ...] = get_args(AnswerMatch)


def helm_normalise(text: str) -> str:
    """HELM's quasi-exact normaliser (the QuAC scorer's, as lighteval's ``helm_normalizer``): split on
    spaces and hyphens; per piece lowercase, drop ``string.punctuation``, write a number as ``float``
    does (``1`` and ``1.0`` agree), drop the articles a/an/the and squeeze whitespace; join non-empty
    pieces with one space."""
    def piece(t: str) -> str:
        t = t.lower().translate(_PUNCT)
        with contextlib.suppress(ValueError):
            t = str(float(t))
        return " ".join(re.sub(r"\b(a|an|the)\b", " ", t).split())

    return " ".join(p for p in (piece(t) for t in re.split(" |-", text)) if p).strip()


def match_answer(prediction: str, target: str, opts: ExactMatchOptions, mode: str = "exact") -> float:
    """1.0 when ``prediction`` matches ``target`` under ``mode``, else 0.0.

    * ``exact`` — lm-eval's ``exact_match`` with ``opts`` (:func:`exact_match`);
    * ``quasi_exact`` — HELM's quasi-exact match: both sides through :func:`helm_normalise`, then
      equal (lighteval's ``quasi_exact_match``; ``opts`` are not applied: the normaliser replaces them);
    * ``prefix`` / ``suffix`` — lighteval's ``prefix_exact_match`` / ``suffix_exact_match``: after
      ``opts``, both sides stripped, the prediction starts / ends with the target.

    An empty prediction never matches under quasi_exact, prefix or suffix (lighteval's rule).

    Raises:
        ValueError: an unknown ``mode``.
    """
    if mode == "exact":
        return exact_match(prediction, target, opts)
    if mode not in ANSWER_MATCHES:
        raise ValueError(f"unknown answer match '{mode}': choose one of {', '.join(ANSWER_MATCHES)}")
    if mode == "quasi_exact":
        pred, gold = helm_normalise(prediction), helm_normalise(target)
        return float(bool(pred) and pred == gold)
    pred, gold = _normalise(prediction, opts).strip(), _normalise(target, opts).strip()
    if not pred:
        return 0.0
    return float(pred.startswith(gold) if mode == "prefix" else pred.endswith(gold))
