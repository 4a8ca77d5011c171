"""Truth of case lmeval_asdiv_batch1_vs_batch8: lm-eval (0.4.3 era, git 59170e85), Meta-Llama-3-8B-Instruct, asdiv (loglikelihood) with --limit 50, batch size '1' (A) vs '8' (B); a chat template is applied on both sides; samples whole.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "batch_size is the string \"1\" vs \"8\"; everything else recorded is equal. The per-doc log-likelihoods (resps) differ on 16 of the 50 docs (batch numerics) but no acc flips.",
    "config.gen_kwargs {'max_gen_toks': 1024} was given on the command line to a loglikelihood task: recorded, but it does not apply (not_applicable on both sides).",
    "No lm_eval_version key; git_hash 59170e85; seeds are 42 (random/numpy/torch/fewshot), not lm-eval's usual 0/1234.",
    "A chat template is recorded (chat_template non-null, fewshot_as_multiturn true) on a loglikelihood task.",
    "samples rows have no 'filter' or 'metrics' key (0.4.3 era) and resps hold numbers and booleans as strings ([['-9.5e-07', 'True']]).",
    "B (results and samples) is also in the project's collection of public lm-eval files kept outside the repository (lmeval_public), as single files; A is new.",
]

if __name__ == "__main__":
    T.dump(T.lmeval_pair(HERE, notes=NOTES), HERE)
