"""Truth of case helm_simple_safety_v3_claude35_vs_gpt4o: HELM run folders of simple_safety_tests (2 instances, annotator-scored generations), claude-3-5-sonnet (A) vs gpt-4o (B).

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

A = 'simple_safety_tests:model=anthropic_claude-3-5-sonnet-20240620'
B = 'simple_safety_tests:model=openai_gpt-4o-2024-05-13'
NOTES = [
    "Only 2 instances (max_eval_instances 2); scores are annotator-based; no 0/1 exact-match stats, so no flips.",
    "stop_sequences [] on both sides; max_tokens 512; temperature 0.0.",
]

if __name__ == "__main__":
    T.dump(T.helm_pair(HERE, A, B, notes=NOTES), HERE)
