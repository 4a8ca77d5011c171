"""Truth of case eee020_hfopenllm_yi34b_32k_vs_chat16k: Every Eval Ever 0.2.0 records scraped from the HF Open LLM Leaderboard v2: Yi-1.5-34B-32K (A) vs Yi-1.5-34B-Chat-16K (B).

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

A = 'a/f63536ed-752b-4538-9b92-2514a617a4bf.json'
B = 'b/8ff13de2-ea43-4392-992f-ba70b6023e96.json'
NOTES = [
    "model_info.additional_details.precision 'bfloat16' is read as serving.dtype; architecture and params_billions are not settings.",
    "Scores are on 0-1 with min_score/max_score in metric_config.",
]

if __name__ == "__main__":
    T.dump(T.eee_pair(HERE, A, B, notes=NOTES), HERE)
