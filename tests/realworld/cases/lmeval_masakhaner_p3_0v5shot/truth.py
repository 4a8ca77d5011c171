"""Truth of case lmeval_masakhaner_p3_0v5shot: the same model and harness on masakhaner_luo_prompt_3, 0-shot (A) vs 5-shot (B); samples trimmed to the first 60 of 185 docs.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "Scored answers empty on 45 of 60 docs at 0-shot (A) vs 23 at 5-shot (B); one raw answer is empty in A.",
    "As in the prompt_2 case: fewshot_split/sampler recorded on both sides but n/a at 0-shot; f1 per-doc values are [gold, prediction] pairs.",
]

if __name__ == "__main__":
    T.dump(T.lmeval_pair(HERE, notes=NOTES), HERE)
