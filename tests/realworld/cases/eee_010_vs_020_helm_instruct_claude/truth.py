"""Truth of case eee_010_vs_020_helm_instruct_claude: the same helm_instruct scrape of claude-v1.3 as an EEE 0.1.0 record (A) and as its 0.2.0 re-conversion (B): only the schema differs.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

A = 'a/c4e55239-581b-433f-82bc-68a690f59e4a.json'
B = 'b/e5e98ffa-3c2d-42d4-86a9-0cb46a71c684.json'
NOTES = [
    "The 0.2.0 record renames the evaluations ('Anthropic RLHF dataset - Harmlessness' -> 'Anthropic RLHF dataset', the metric moving to evaluation_description 'Harmlessness on …'); the scores are the same numbers (4.965, 4.995, …). A reader pairing by evaluation_name finds only 'Mean win rate' shared.",
    "0.2.0 adds per-result source_data and generation_config.additional_details; 0.1.0 had a top-level source_data list.",
]

if __name__ == "__main__":
    T.dump(T.eee_pair(HERE, A, B, notes=NOTES), HERE)
