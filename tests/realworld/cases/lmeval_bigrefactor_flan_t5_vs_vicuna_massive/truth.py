"""Truth of case lmeval_bigrefactor_flan_t5_vs_vicuna_massive: lm-eval big-refactor (pre-0.4.0) files of a custom 'llm-tools' backend whose model_args are empty: flan-t5-xxl (A) vs vicuna-7b (B) on massive-de with --limit 100; the model is named only by the folder.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "model 'llm-tools' with model_args \"\": no file records the model; flan-t5-xxl vs vicuna-7b is only in the repository folder names. model.name is therefore absent on both sides.",
    "Pre-0.4.0 shape: no n-shot/n-samples/lm_eval_version; versions 'Yaml'; configs.massive-de.num_fewshot 0; group is a list; f1's aggregation is the string '<function massive_multi_f1 at 0x…>'; f1 has no stderr.",
    "limit 100.0 (float) -> 100; device null; batch_size 1 (int).",
]

if __name__ == "__main__":
    T.dump(T.lmeval_pair(HERE, notes=NOTES), HERE)
