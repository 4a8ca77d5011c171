"""Truth of case lmeval_masakhaner_p2_0v5shot: lm-eval 0.4.10.dev0 (vllm, google/gemma-2b), masakhaner_luo_prompt_2 0-shot (A) vs 5-shot (B); generate_until with a flexible-extract filter that empties many answers; samples trimmed to the first 100 of 185 docs.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "config.batch_size is the int 1 in A and the string \"1\" in B: the same setting, not a difference.",
    "Both files record fewshot_split 'train' and fewshot_config.sampler 'default'; on the 0-shot side they do not apply (not_applicable), so the only differing setting is n-shot 0 -> 5.",
    "generation_kwargs: do_sample false and until ['</s>', '<|im_end|>'] only; no max_gen_toks and no temperature is recorded (lm-eval's default max_gen_toks 256 is not in the file).",
    "The scored answer (filtered_resps[0][0], a list inside a list) is the empty string on 40 (A) and 41 (B) of the 100 docs while no raw answer (resps) is empty: the flexible-extract filter empties them. f1 is a corpus-level metric: its per-doc values are [gold, prediction] pairs, not numbers, so there are no 0/1 flips.",
    "model_args is a dict (pretrained, dtype, gpu_memory_utilization 0.7); config.model_args is not a string.",
]

if __name__ == "__main__":
    T.dump(T.lmeval_pair(HERE, notes=NOTES), HERE)
