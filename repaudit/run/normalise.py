"""Score normalisation against random guessing, as the Open LLM Leaderboard v2 shows scores.

``normalised = max(raw - b, 0) / (1 - b)`` with ``b`` the random-guess baseline
(Hugging Face, "Scores Normalization", https://huggingface.co/docs/leaderboards/open_llm_leaderboard/normalization:
``lower_bound = 1/num_choices``, 0 for generative tasks, and 0 when the raw score is below it).
Scores here are fractions in [0, 1]; the leaderboard multiplies by 100.
"""

from __future__ import annotations


def random_baseline(choice_counts: list[int]) -> float:
    """Expected accuracy of a uniform random guess: the mean of ``1/k`` over docs with ``k`` choices.

    For a task with a constant number of choices this is the leaderboard's ``1/num_choices``;
    for ARC (3-5 choices) it is the exact expectation. An empty list (generate_until) gives 0.
    """
    counts = [k for k in choice_counts if k > 0]
    return sum(1.0 / k for k in counts) / len(counts) if counts else 0.0


def leaderboard_normalise(raw: float, baseline: float) -> float:
    """``max(raw - b, 0) / (1 - b)`` (fractions). Raises ValueError for a baseline outside [0, 1)."""
    if not 0.0 <= baseline < 1.0:
        raise ValueError(f"random baseline must be in [0, 1), got {baseline}")
    return max(raw - baseline, 0.0) / (1.0 - baseline)


def leaderboard_denormalise(normalised: float, baseline: float) -> float:
    """The raw score a normalised one stands for: ``b + n (1 - b)``. A normalised 0 stands for any
    raw score at or below ``b``; this returns ``b`` for it."""
    if not 0.0 <= baseline < 1.0:
        raise ValueError(f"random baseline must be in [0, 1), got {baseline}")
    return baseline + normalised * (1.0 - baseline)
