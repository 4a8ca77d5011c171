"""Truth of case neox_pythia19m_intervention_series: GPT-NeoX evaluate.py outputs (lm-eval 0.3 format, config.model
"neox") of the Pythia-19M-deduped "intervention" run at five checkpoints; the step is config.model_args.iteration
(model_args is the whole NeoX config as a dict). Kendall tau-b per task and metric = scipy's, metrics with a constant
value skipped.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "config.model_args is a 192-key dict (the NeoX training config): iteration (the step), load/save paths, "
    "train_iters 143000, precision fp16, seed 1234, eval_tasks; config.batch_size 32, device cuda:0, num_fewshot 0.",
    "The step is also in the file name (-step134000_) and in model_args.eval_results_prefix; the truth reads "
    "model_args.iteration.",
    "lambada_openai ppl is lower-is-better; crows_pairs likelihood_difference and pct_stereotype have no direction "
    "in the file.",
]


def main():
    files = sorted((p.name for p in HERE.glob("*.json") if p.name != "truth.json"),
                   key=lambda f: T.load_json(HERE / f)["config"]["model_args"]["iteration"])
    steps = [T.load_json(HERE / f)["config"]["model_args"]["iteration"] for f in files]
    truth = T.series(HERE, files, steps, "config.model_args.iteration",
                     "GPT-NeoX evaluate.py (lm-eval 0.3 format; config.model \"neox\")",
                     lambda d: T.lmeval_scores(d["results"]), notes=NOTES)
    T.dump(truth, HERE)


if __name__ == "__main__":
    main()
