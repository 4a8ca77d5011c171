"""Truth of case lmeval_asdiv_cot_peft_epoch_series: lm-eval (0.4.3 era, git 59170e85) results of
asdiv_cot_llama for three PEFT adapters of Meta-Llama-3-8B-Instruct trained for 5, 20 and 62 epochs. No key holds
the step: it is only in the adapter path, config.model_args peft=../prompt-pursuit/results/aug17/..._epoch_<N>
(and in model_name / the folder name). The truth takes N from that path, ordered by N.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "model_args: pretrained=meta-llama/Meta-Llama-3-8B-Instruct,peft=../prompt-pursuit/results/aug17/"
    "gsm8k_8shot_pursue_numq_1000_r16_lr1e-6/epoch_<N>; model_name is the adapter path; model_name_sanitized "
    "starts with '..__'; peft_sha is ''.",
    "The three samples files (each over 4 MB) were never in the mirror; the series has results only.",
]


def step_of(d):
    ma = T.parse_kv_string(d["config"]["model_args"])
    return int(re.search(r"epoch_(\d+)", ma["peft"]).group(1))


def main():
    files = sorted((str(p.relative_to(HERE)) for p in HERE.glob("epoch_*/*.json")),
                   key=lambda f: step_of(T.load_json(HERE / f)))
    steps = [step_of(T.load_json(HERE / f)) for f in files]
    truth = T.series(HERE, files, steps, "config.model_args.peft (the _epoch_<N> suffix of the adapter path)",
                     "lm-eval 0.4 (format; no version recorded, git_hash 59170e85)",
                     lambda d: T.lmeval_scores(d["results"]), notes=NOTES)
    T.dump(truth, HERE)


if __name__ == "__main__":
    main()
