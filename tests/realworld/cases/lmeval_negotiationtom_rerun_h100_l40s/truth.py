"""Truth of case lmeval_negotiationtom_rerun_h100_l40s: lm-eval 0.4.13.dev0, Qwen/Qwen3-8B, the same command run twice (an H100 run, A, and an L40S run, B, per pretty_env_info); two multiple_choice tasks and one generate_until task, 20 docs each, samples whole.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "Every recorded setting is equal: the runs differ in the GPU only (pretty_env_info: 'GPU 0: NVIDIA H100 80GB HBM3' in A, 'NVIDIA L40S' in B), which is not a settings path.",
    "negotiationtom_intention's scored answer changes on doc 17 ('A  ' -> 'Answer: A, C, F, G'), which moves micro_f1/macro_f1 (corpus-level; per-doc values are label lists) while exact_match has no flip.",
    "generation_kwargs record do_sample false AND temperature 0.0: greedy, so temperature is n/a on both sides.",
    "The results rows hold name, sample_len and a sample_count dict; the group row 'negotiationtom' aggregates acc over the two MC tasks (40 docs) and the f1s over intention; versions include the string '0'.",
    "model_args is a dict with enable_thinking False; batch_size 'auto' with batch_sizes [64]; git_hash is a full 40-hex sha.",
]

if __name__ == "__main__":
    T.dump(T.lmeval_pair(HERE, notes=NOTES), HERE)
