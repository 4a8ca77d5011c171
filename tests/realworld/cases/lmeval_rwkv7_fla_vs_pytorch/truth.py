"""Truth of case lmeval_rwkv7_fla_vs_pytorch: lm-eval (0.4.7 era), the same local RWKV7 1.5B checkpoint with model_args tmix_backend=fla (A) vs tmix_backend=pytorch (B), lambada_openai; results only.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "The only difference is model_args tmix_backend=fla vs tmix_backend=pytorch, which is not in the settings vocabulary: differs is empty, the scores differ (perplexity 4.2567 vs 4.2588).",
    "model_args add_bos_token=True (a string in the file) is recorded as serving.add_bos_token true; trust_remote_code=True.",
    "pretty_env_info is an error string (\"'NoneType' object has no attribute 'splitlines'\"); device null; dtype only in config.model_dtype; model.name is a local path ending in '/'.",
    "lambada_openai perplexity is lower-is-better (higher_is_better says so).",
]

if __name__ == "__main__":
    T.dump(T.lmeval_pair(HERE, notes=NOTES), HERE)
