"""A notebook-style tour of repaudit's Python API on two real lighteval runs kept in the repository.

    .venv/bin/python examples/api_tour.py

The runs: lighteval 0.13, the default model on ARC-Easy, 0-shot (40 docs) and 3-shot (100 docs)
(``tests/fixtures/lighteval``, made by ``bench/lighteval_runs.py``). Every object used here is what
``repaudit compare`` renders; the DataFrames are views of it (``repaudit.report.frames``).
"""

from __future__ import annotations

from pathlib import Path

from repaudit import api

RUNS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "lighteval"


def main() -> None:
    a, b = api.load(RUNS / "arc_easy_0shot"), api.load(RUNS / "arc_easy_3shot")
    c = api.compare(a, b, n_boot=2000)

    # 1. The score table: one row per task and metric, Δ = B − A in points with its paired interval
    scores = api.scores(c)
    print(scores[["task", "metric", "unit", "n_paired", "a", "b", "delta", "ci_low", "ci_high", "verdict"]]
          .to_string(index=False))

    # 2. What differs between the two runs (the factor panel)
    factors = api.factors(c)
    print(factors[factors.status == "differs"][["factor", "group", "field", "a", "b"]].drop_duplicates()
          .to_string(index=False))

    # 3. Every doc both runs scored, and the docs that flipped (margins in nats)
    docs = api.paired_docs(a, b)
    print(f"{len(docs)} shared docs, {int(docs.flipped.sum())} flipped: {int((docs.delta > 0).sum())} right only "
          f"with 3 shots, {int((docs.delta < 0).sum())} right only with 0 shots")
    print(api.flips(c)[["doc_id", "direction", "a_margin", "b_margin", "near_tie"]].to_string(index=False))

    # 4. One run's own per-doc table
    print(api.docs(b)[["doc_id", "target", "prediction", "metric:acc"]].head().to_string(index=False))


if __name__ == "__main__":
    main()
