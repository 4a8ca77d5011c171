"""Metric definitions against hand-computed values."""

from __future__ import annotations

import math

import pytest

from repaudit.run.metrics import aggregate, mean_stderr, multiple_choice_metrics
from repaudit.tasks.definitions import TASKS
from repaudit.tasks.filters import ExactMatchOptions, FilterPipeline, FilterStep, exact_match

GSM8K = TASKS["gsm8k"]


def extract_answer(text: str, name: str) -> str:
    return next(p for p in GSM8K.filter_pipelines if p.name == name).apply(text)


def test_acc_norm_uses_character_length():
    # raw argmax picks the short choice; per-character normalisation picks the long one
    m = multiple_choice_metrics([-4.0, -6.0], ["ab", "abcdefgh"], gold=1)
    assert m == {"acc": 0.0, "acc_norm": 1.0, "acc_bytes": 1.0}


def test_acc_bytes_differs_from_acc_norm_on_multibyte_text():
    # 2 characters of 3 bytes each vs 4 ASCII characters: per character choice 1 wins (-1.25 > -1.5),
    # per byte choice 0 wins (-0.5 > -1.25)
    m = multiple_choice_metrics([-3.0, -5.0], ["日本", "abcd"], gold=0, is_greedy=[True, False])
    assert (m["acc_norm"], m["acc_bytes"], m["exact_match"]) == (0.0, 1.0, 1.0)


def test_ties_go_to_the_first_choice():
    assert multiple_choice_metrics([-1.0, -1.0], ["x", "y"], gold=0)["acc"] == 1.0
    assert multiple_choice_metrics([-1.0, -1.0], ["x", "y"], gold=1)["acc"] == 0.0


@pytest.mark.parametrize("text,strict,flex", [
    ("She pays 5 + 3 = 8 dollars.\n#### 8", "8", "8"),
    ("The answer is $1,250.", "[invalid]", "$1,250."),
    ("no numbers here", "[invalid]", "[invalid]"),
    ("#### -3.5", "-3.5", "-3.5"),
])
def test_gsm8k_filters(text, strict, flex):
    assert extract_answer(text, "strict-match") == strict
    assert extract_answer(text, "flexible-extract") == flex


def test_gsm8k_exact_match_ignores_commas_dollars_and_reasoning():
    target = "Natalia sold 48/2 = 24 clips in May.\n#### 1,250"
    assert exact_match("1250", target, GSM8K.em_options) == 1.0
    assert exact_match("$1,250.", target, GSM8K.em_options) == 1.0
    assert exact_match("125", target, GSM8K.em_options) == 0.0


def test_exact_match_options_and_filters():
    assert exact_match("Paris!", "paris", ExactMatchOptions(ignore_case=True, ignore_punctuation=True)) == 1.0
    assert exact_match("Paris!", "paris", ExactMatchOptions(ignore_case=True)) == 0.0
    assert exact_match("abc 12", "abc ", ExactMatchOptions(ignore_numbers=True)) == 1.0
    pipe = FilterPipeline("p", (FilterStep("regex", r"answer is (\w+)"), FilterStep("lowercase"),
                                FilterStep("remove_whitespace")))
    assert pipe.apply("The answer is PARIS.") == "paris" and pipe.apply("none") == "[invalid]"


def test_stderr_is_lmeval_sample_stderr():
    xs = [1.0, 0.0, 1.0, 1.0]
    mean = 0.75
    assert mean_stderr(xs) == pytest.approx(math.sqrt(sum((x - mean) ** 2 for x in xs) / 3) / 2)


def test_subject_macro_differs_from_micro():
    per_doc = [{"acc": v} for v in [1, 1, 1, 0, 0]]
    ms = {m.variant: m for m in aggregate(per_doc, {"acc": "none"}, ["a", "a", "a", "b", "b"])}
    assert ms["micro"].value == pytest.approx(0.6)
    assert ms["subject_macro"].value == pytest.approx(0.5)
