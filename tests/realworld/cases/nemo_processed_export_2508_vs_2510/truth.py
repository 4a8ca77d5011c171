"""Truth of case nemo_processed_export_2508_vs_2510: the processed_results.json NeMo Evaluator's documentation shows
(``nemo-evaluator-launcher export --dest local --format json``; docs/about/concepts/_snippets/processed_results.json)
at two commits — ifeval, gpqa_diamond and mbpp of one model each, eval-factory containers 25.08.1 (A) and 25.10 (B).

Reads only the raw files beside this script (json via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "Score names carry the benchmark in front (gpqa_diamond_score_micro); A's export repeats lm-eval's metric name "
    "(ifeval_inst_level_loose_acc_inst_level_loose_acc), B's does not: both are inst_level_loose_acc.",
    "A's mbpp has pass@1 only; B's has pass@1 and pass@10. No statistics, no doc counts.",
]

if __name__ == "__main__":
    T.dump(T.nemo_processed_pair(HERE, "a/processed_results.json", "b/processed_results.json", notes=NOTES), HERE)
