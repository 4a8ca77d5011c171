"""Metric definitions against hand-computed values."""

from __future__ import annotations

import math

import pytest

from repaudit.run.metrics import aggregate, exact_match, extract_answer, mean_stderr, multiple_choice_metrics


def test_acc_norm_uses_character_length():
    # raw argmax picks the short choice; per-character normalisation picks the long one
    m = multiple_choice_metrics([-4.0, -6.0], ["ab", "abcdefgh"], gold=1)
    assert m == {"acc": 0.0, "acc_norm": 1.0}


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
    assert exact_match("1250", target) == 1.0
    assert exact_match("$1,250.", target) == 1.0
    assert exact_match("125", target) == 0.0


def test_stderr_is_lmeval_sample_stderr():
    xs = [1.0, 0.0, 1.0, 1.0]
    mean = 0.75
    assert mean_stderr(xs) == pytest.approx(math.sqrt(sum((x - mean) ** 2 for x in xs) / 3) / 2)


def test_subject_macro_differs_from_micro():
    per_doc = [{"acc": v} for v in [1, 1, 1, 0, 0]]
    ms = {m.variant: m for m in aggregate(per_doc, {"acc": "none"}, ["a", "a", "a", "b", "b"])}
    assert ms["micro"].value == pytest.approx(0.6)
    assert ms["subject_macro"].value == pytest.approx(0.5)
