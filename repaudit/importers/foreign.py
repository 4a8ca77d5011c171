"""Other evaluation tools' files that repaudit does not read, named by what they are — so that the one ``error:`` line
says "an OpenCompass summary" instead of "not an evaluation file". Each is told by its content, from the tools' own
writers:

* **OpenCompass** (``opencompass/summarizers/default.py``, ``opencompass/openicl/icl_inferencer``): the summary
  table (``summary_<time>.csv``/``.txt``/``.md``, its header ``dataset, version, metric, mode, <model>…``), a results
  file (``results/<model>/<dataset>.json``: metric values beside ``details``) and a predictions file (``{"0":
  {"origin_prompt": …, "prediction": …}, …}``);
* **OLMES / oe-eval / olmo-eval** (``oe_eval/run_eval.py``): a task's metrics file (``task-NNN-<task>-metrics.json``,
  ``metrics.json``: ``task_name``, ``metrics`` with ``task_config``/``model_config``/``task_hash``) and its
  predictions (JSON lines of ``doc_id``, ``native_id``, ``model_output``);
* **simple-evals** (openai's ``simple_evals.py``): the metrics file (``score`` beside ``<metric>:std``,
  ``:bootstrap_std`` or ``:n_samples`` statistics) and the full results (``score``, ``metrics``, ``htmls``,
  ``convos``).
"""

from __future__ import annotations

import re
from typing import Any

#: what every refusal adds: what repaudit reads instead
_READ = ("repaudit reads lm-evaluation-harness, lighteval, inspect_ai, HELM, Every Eval Ever, NeMo Evaluator and its "
         "own run files")
_STAT_SUFFIX = re.compile(r":(std|bootstrap_std|n_samples)$")


def _opencompass_predictions(obj: dict) -> bool:
    items = list(obj.items())[:5]
    return bool(items) and all(k.isdigit() and isinstance(v, dict) and "prediction" in v
                               and ("origin_prompt" in v or "gold" in v) for k, v in items)


def _opencompass_results(obj: dict) -> bool:
    metrics = [k for k, v in obj.items() if k != "details" and isinstance(v, (int, float)) and not isinstance(v, bool)]
    return "details" in obj and bool(metrics) and len(obj) <= 64 and all(
        k == "details" or isinstance(v, (int, float, str, list)) for k, v in obj.items())


def foreign_json(obj: Any) -> str:
    """What another tool's parsed JSON document is, as the end of a sentence (``an OpenCompass predictions file
    (…), which repaudit does not read: …``), or ``""``: none of these."""
    if isinstance(obj, dict):
        if {"task_name", "metrics"} <= obj.keys() and obj.keys() & {"task_config", "model_config", "task_hash"}:
            return (f"an OLMES / oe-eval metrics file (task '{str(obj.get('task_name'))[:60]}'), which repaudit does "
                    f"not read: {_READ}")
        if {"score", "metrics"} <= obj.keys() and obj.keys() & {"htmls", "convos"}:
            return (f"a simple-evals full results file (score, metrics, htmls, convos), which repaudit does not read: "
                    f"{_READ}")
        if isinstance(obj.get("score"), (int, float)) and any(_STAT_SUFFIX.search(str(k)) for k in obj):
            return (f"a simple-evals metrics file (score with ':std'/':bootstrap_std'/':n_samples' statistics), which "
                    f"repaudit does not read: {_READ}")
        if _opencompass_predictions(obj):
            return (f"an OpenCompass predictions file (origin_prompt, prediction per item), which repaudit does not "
                    f"read: {_READ}")
        if _opencompass_results(obj):
            return f"an OpenCompass results file (metrics beside details), which repaudit does not read: {_READ}"
    return ""


def foreign_line(obj: Any) -> str:
    """What one parsed JSON line of another tool's JSON-lines file is (as :func:`foreign_json`), or ``""``."""
    if isinstance(obj, dict) and {"doc_id", "native_id"} <= obj.keys() and obj.keys() & {"model_output", "metrics"}:
        return (f"JSON lines of OLMES / oe-eval predictions (doc_id, native_id, model_output), which repaudit does not "
                f"read: {_READ}")
    if isinstance(obj, dict) and {"task_name", "metrics"} <= obj.keys() and obj.keys() & {"task_config", "task_hash"}:
        return f"JSON lines of OLMES / oe-eval metrics (metrics-all.jsonl), which repaudit does not read: {_READ}"
    return ""


#: OpenCompass's summary, as its three formats begin their table (``summary_<time>.csv``, ``.txt``, ``.md``)
_SUMMARY = re.compile(r"^\s*(dataset,version,metric,mode,|\|\s*dataset\s*\|\s*version\s*\|\s*metric\s*\|\s*mode\s*\||"
                      r"dataset\s+version\s+metric\s+mode\s)", re.MULTILINE)


def foreign_text(head: str) -> str:
    """What a text file that is not JSON is, from its first kilobytes (an OpenCompass summary), or ``""``."""
    if _SUMMARY.search(head):
        return (f"an OpenCompass summary table (dataset, version, metric, mode, one column per model), which repaudit "
                f"does not read: {_READ}")
    return ""
