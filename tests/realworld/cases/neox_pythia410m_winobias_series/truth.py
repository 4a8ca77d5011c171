"""Truth of case neox_pythia410m_winobias_series: GPT-NeoX evaluate.py outputs of Pythia-410M-deduped ("intervene_7")
at ten checkpoints, written by the promptsource-style (BigScience) lm-eval fork: no "results"/"config" keys but
"table_results" (one row per task+prompt, metric "em") and a two-key "model_args" dict whose "iteration" is the step.
Kendall tau-b per task+prompt and metric = scipy's, constant metrics skipped.

Reads only the raw files beside this script (json/scipy via ../../truth_lib.py; no repaudit) and writes truth.json.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import truth_lib as T  # noqa: E402

NOTES = [
    "The file has only table_results and model_args {'iteration': N, 'config_files': {'410m-deduped': null}}: no "
    "config, no model name, no batch size, no device, no few-shot count, no harness version.",
    "A task here is a table_results key '<task_name>+<prompt_name>' (e.g. 'wino_bias_type1_pro+refers_to'); the "
    "same task_name appears under two prompts.",
    "The step is also in the file name (eval_results_410m-deduped_<N>.json).",
]


def scores_of(d):
    """{table_results key: {metric: value}} without *_stderr and the task_name/prompt_name strings."""
    out = {}
    for key, row in d["table_results"].items():
        out[key] = {m: v for m, v in row.items() if T.is_num(v) and "_stderr" not in m}
    return out


def main():
    files = sorted((p.name for p in HERE.glob("eval_results_*.json")),
                   key=lambda f: T.load_json(HERE / f)["model_args"]["iteration"])
    steps = [T.load_json(HERE / f)["model_args"]["iteration"] for f in files]
    truth = T.series(HERE, files, steps, "model_args.iteration",
                     "GPT-NeoX evaluate.py (promptsource-style lm-eval fork: table_results)", scores_of, notes=NOTES)
    T.dump(truth, HERE)


if __name__ == "__main__":
    main()
