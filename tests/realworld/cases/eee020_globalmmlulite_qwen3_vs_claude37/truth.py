"""Truth of case eee020_globalmmlulite_qwen3_vs_claude37: Every Eval Ever 0.2.0 records of the Global MMLU Lite
leaderboard (a Kaggle scrape), Qwen3-235B-A22B-Instruct (A) vs Claude 3.7 Sonnet (B): 19 scores each, 16 of them with a
recorded uncertainty written as a ± half-width around 0 (``confidence_interval`` lower −h, upper h), level not stated.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "score_details.uncertainty.confidence_interval is a ± half-width (lower = −upper, the score outside [lower, upper]), "
    "method 'unknown', no confidence_level: stderr = upper / z(0.975), the 95 % level assumed (EEE's schema example).",
    "No doc count, limit or split is recorded (the leaderboard's 400 questions per language are not stated in the "
    "file): the doc sets cannot be told, so no row gets a verdict; the stderr is still read.",
    "The three aggregate rows (Global MMLU Lite, Culturally Sensitive, Culturally Agnostic) record no uncertainty.",
]

if __name__ == "__main__":
    T.dump(T.eee_pair(HERE, "a/c8ab4e94-d8e8-417f-be18-fececf3c815c.json",
                      "b/acd2082a-ce0c-418f-9383-f3c9f11735a2.json", notes=NOTES), HERE)
