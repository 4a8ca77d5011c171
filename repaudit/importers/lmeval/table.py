"""The ``table_results`` files of the promptsource (BigScience) fork of lm-evaluation-harness, as GPT-NeoX's
``evaluate.py`` wrote them with that fork (Pythia's bias evaluations): no ``results``/``config``, but

* ``table_results``: one row per task and prompt, keyed ``<task>+<prompt>``, with ``task_name``, ``prompt_name`` and
  the metrics (``em``, ``em_stderr``, ``acc``, …);
* ``model_args``: NeoX's arguments as a dict — ``iteration`` is the checkpoint's training step, ``config_files`` the
  NeoX configuration files by name (``{"410m-deduped": null}``), ``load`` the checkpoint folder where recorded.

Each row is a task (its key: the same task under two prompts is two tasks); its numeric values are its reported
scores (``<metric>_stderr`` the metric's standard error). The record holds ``model.step`` (recorded),
``model.name`` (``model_args.load`` or ``pretrained`` where recorded; else derived from the one configuration file
named, the only name such a file gives its model), the prompt's name and every other model argument, and the number
of docs where the 0/1 means and their standard errors tell it (:func:`binomial_n`, derived); everything else —
few-shot count, batch size, device, the harness's version — is not recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repaudit.boundary import validate
from repaudit.importers.comparable import ComparableRun, TaskOutcome
from repaudit.importers.lmeval.fields import int_or
from repaudit.importers.lmeval.schema import TableResults, TableRow
from repaudit.vocabulary import Recorded, apply_conditions, derived, setting_paths

#: the run's source as compare names it
SOURCE = "lm-eval promptsource fork (table_results)"


def is_table(obj: Any) -> bool:
    """Whether a parsed JSON document is a ``table_results`` file (and no lm-eval results file)."""
    return isinstance(obj, dict) and isinstance(obj.get("table_results"), dict) and not isinstance(
        obj.get("results"), dict)


def load_table(path: Path, obj: Any) -> ComparableRun:
    """The run of a ``table_results`` file (see the module docstring).

    Raises:
        InputError: the file fails the boundary or the model (an empty table, a row that is not an object).
    """
    res, notes = validate(TableResults, obj, path, schema="promptsource-fork table_results")
    run = ComparableRun(path=str(path), source=SOURCE, factors={}, notes=[f"'{path}': {n}" for n in notes])
    for key, row in res.table_results.items():
        scores = {}
        for name, value in (row.model_extra or {}).items():
            if name.endswith("_stderr") or not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            err = (row.model_extra or {}).get(f"{name}_stderr")
            scores[name] = (float(value), float(err) if isinstance(err, (int, float)) and not isinstance(err, bool)
                            else None)
        rec = _record(res, key, row)
        n = binomial_n(scores)
        if n is not None:
            rec["data.n_docs"] = derived(n, "from a 0/1 mean p and its standard error s as lm-eval computes it "
                                            "(s² = p(1 − p)/(n − 1)): n = p(1 − p)/s² + 1, p·n whole")
        run.factors[key] = rec
        run.tasks[key] = TaskOutcome(task=key, reported=scores, docs=None, n_docs=n)
    return run


def binomial_n(scores: dict[str, tuple[float, float | None]]) -> int | None:
    """The docs behind a row's 0/1 means, told by their standard errors: lm-eval's stderr of a mean is the sample
    standard deviation over √n, p(1 − p)/(n − 1) for 0/1 values, so n = p(1 − p)/s² + 1 — taken only where it is
    within 0.01 of a whole number, p·n is whole (p is a count over n), and every metric of the row gives the same
    n; ``None`` otherwise (a mean of 0 or 1 has no spread to tell it by)."""
    found = set()
    for p, s in scores.values():
        if s is None or not (0 < p < 1) or not s > 0:
            continue
        n = p * (1 - p) / (s * s) + 1
        if abs(n - round(n)) > 0.01 or abs(p * round(n) - round(p * round(n))) > 1e-6 * round(n):
            return None
        found.add(round(n))
    return found.pop() if len(found) == 1 else None


def _record(res: TableResults, key: str, row: TableRow) -> Recorded:
    rec = Recorded()
    at = f"table_results.{key}"
    if row.task_name:
        rec.put("data.task", row.task_name, f"{at}.task_name")
    if row.prompt_name:
        rec.put("other.prompt_name", row.prompt_name, f"{at}.prompt_name")
    margs = res.model_args or {}
    if "iteration" in margs:
        rec.put("model.step", int_or(margs["iteration"]), "model_args.iteration")
    for name in ("load", "pretrained"):
        if isinstance(margs.get(name), str) and margs[name]:
            rec.put("model.name", margs[name], f"model_args.{name}")
            break
    else:
        files = margs.get("config_files")
        if isinstance(files, dict) and len(files) == 1:
            rec["model.name"] = derived(str(next(iter(files))), "the one NeoX configuration file named in "
                                                                "model_args.config_files")
    rest = {k: v for k, v in sorted(margs.items()) if k not in ("iteration", "load", "pretrained")}
    if rest:
        rec.put("model.args", rest, "model_args")
    return apply_conditions(rec.fill(setting_paths())).sorted()
