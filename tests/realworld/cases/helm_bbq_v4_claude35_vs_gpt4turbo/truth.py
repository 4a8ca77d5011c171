"""Truth of case helm_bbq_v4_claude35_vs_gpt4turbo: HELM run folders of bbq (100 instances), claude-3-5-sonnet-20240620 (A) vs gpt-4-turbo-2024-04-09 (B).

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

A = 'bbq:subject=all,method=multiple_choice_joint,model=anthropic_claude-3-5-sonnet-20240620'
B = 'bbq:subject=all,method=multiple_choice_joint,model=openai_gpt-4-turbo-2024-04-09'
NOTES = [
    "adapter_spec.stop_sequences is [] for claude-3-5-sonnet and ['\\n'] for gpt-4-turbo (HELM's per-model run expanders): a recorded generation difference.",
    "temperature 0.0 on both sides (greedy): n/a. max_train_instances 0 (0-shot), max_eval_instances 100, num_outputs 5, max_tokens 1.",
    "scores hold every unperturbed stat of stats.json (incl. infrastructure stats such as inference_runtime); the split is 'test'. flips are for 0/1 per-instance stats named *exact_match*/*accuracy* (trial 0).",
    "The same run folders exist twice in the source repository (benchmark_output_last and benchmark_output_TRUE_latest, identical blobs).",
]

if __name__ == "__main__":
    T.dump(T.helm_pair(HERE, A, B, notes=NOTES), HERE)
