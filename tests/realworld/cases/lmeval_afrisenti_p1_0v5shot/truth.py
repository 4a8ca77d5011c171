"""Truth of case lmeval_afrisenti_p1_0v5shot: lm-eval 0.4.10.dev0 (vllm, gemma-2b) afrisenti_swa_prompt_1 0-shot vs 5-shot; results files only.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "multiple_choice task: no generation settings; fewshot_split recorded on both sides, n/a on the 0-shot side.",
    "model_args dict holds trust_remote_code true; batch_size 'auto' with batch_sizes [] (vllm).",
]

if __name__ == "__main__":
    T.dump(T.lmeval_pair(HERE, notes=NOTES), HERE)
