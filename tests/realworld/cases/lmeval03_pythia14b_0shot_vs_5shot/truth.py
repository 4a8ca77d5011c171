"""Truth of case lmeval03_pythia14b_0shot_vs_5shot: lm-eval 0.3 results of EleutherAI's Pythia-1.4B (v1.1) final
checkpoint, the zero-shot suite (A, 87 result rows) vs the five-shot suite (B, 65 rows); results only.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "0.3 format: config.num_fewshot is one int for the whole run (0 vs 5); it is reported per task as "
    "config.num_fewshot. No configs, so no fewshot_split/data.split/generation settings are recorded.",
    "model_args 'pretrained=EleutherAI/pythia-v1.1-1.4b,revision=step143000': model.revision is recorded (the "
    "checkpoint), equal on both sides.",
    "batch_size 16 vs 2 (ints) and device 'cuda:7' vs 'cuda:0' differ besides the n-shot; no dtype, seed or version.",
    "The task sets differ (87 vs 65 rows: the five-shot suite has no crows_pairs_* rows); lambada_openai ppl is "
    "lower-is-better and nothing in the file says so.",
]

if __name__ == "__main__":
    T.dump(T.lmeval_pair(HERE, notes=NOTES), HERE)
