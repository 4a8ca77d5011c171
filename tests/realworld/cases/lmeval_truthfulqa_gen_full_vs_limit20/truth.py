"""Truth of case lmeval_truthfulqa_gen_full_vs_limit20: lm-eval 0.4.8, EleutherAI/gpt-neo-125M on CPU, truthfulqa_gen in full (A, samples trimmed to the first 200 of 817 docs) vs --limit 20 (B).

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "config.device is null while model_args holds device=cpu: lm-eval passes model_args' device to the model (the CLI --device is dropped when None), so the truth takes cpu from model_args.",
    "dtype is only in config.model_dtype ('float32'), not in model_args.",
    "limit null (A, all 817 docs) vs 20 (B); A's samples are trimmed to the first 200 docs, so per_doc n_a is 200 (the file says 817 in n-samples).",
    "The samples carry a non-standard 'hallucination' field (a fork's addition) and target ' ' (a space); per-doc *_acc metrics are ints 0/1, the *_max/*_diff floats.",
    "generation_kwargs: until ['\\n\\n'], do_sample false, temperature 0 (an int in the file).",
    "B's samples file is also in the project's collection of public lm-eval files kept outside the repository (lmeval_public, as a single file); here it is paired with its results file.",
]

if __name__ == "__main__":
    T.dump(T.lmeval_pair(HERE, notes=NOTES), HERE)
