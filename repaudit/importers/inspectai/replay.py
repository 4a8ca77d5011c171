"""Replay of an inspect_ai run whose solver chain is inspect's standard multiple choice on the ``hf/`` provider, or on
an OpenAI-compatible provider (``openai-api/…``, ``vllm/…``, ``ollama/…``; :data:`SERVED_PROVIDERS`) re-executed
through an endpoint with repaudit's ``openai`` backend (the conversation sent to its chat completions, as inspect
sends it).

What an inspect run did is rebuilt as a recorded lm-eval-style task (:class:`~repaudit.tasks.lmeval_config.ConfigTask`)
and a :class:`~repaudit.run.config.RunConfig`, so that ``attribute`` and ``sweep --base`` re-execute it like any
other run:

* **docs** — the samples the log records (epoch 1), in the run's order, written as JSON lines under the cache
  (``<cache>/inspect/<sha256>.jsonl``, content-addressed): each sample's user prompt after the solvers, its
  choices and target letter;
* **solvers** — ``system_message(template)`` is the system prompt; ``prompt_template(template)`` (a template
  with ``{prompt}`` only) and ``multiple_choice()`` (inspect's single-answer template, or the one the plan
  records; no chain of thought, one correct answer) rewrite the last user message; any other solver, or another
  order, is refused in one line that names it;
* **earlier turns** — the solved questions a sample's input carries as user/assistant turns are few-shot
  examples rendered as chat turns (the same for every sample, else refused);
* **generation** — the tokenizer's chat template with the generation prompt (inspect's ``hf/`` provider),
  greedy (a sampled run is refused: its draws cannot be replayed doc by doc), ``max_tokens`` new tokens, stopped
  at EOS, the batch size ``max_connections``;
* **scoring** — ``choice()``'s reading of the ``ANSWER: X`` line as a regex filter (``choice``) and exact match
  with the target letter: the replay's ``exact_match,choice`` is compared with the log's ``accuracy``.

Every sample's rebuilt conversation is checked against the messages the log records before anything runs; one
that differs (another template, a solver's effect not understood) stops the replay naming the sample.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from repaudit.errors import RepauditError
from repaudit.hashing import sha256_text
from repaudit.importers.inspectai.factors import SERVED_PROVIDERS, served_model_id
from repaudit.importers.inspectai.schema import EvalPlan, EvalSpec
from repaudit.run.config import RunConfig
from repaudit.tasks.filters import INVALID
from repaudit.vocabulary import Recorded

#: the solvers whose effect is rebuilt
SOLVERS = ("system_message", "prompt_template", "multiple_choice", "generate")
#: inspect's single-answer multiple-choice template (``inspect_ai.solver._multiple_choice``), the default of
#: ``multiple_choice()``; a plan that records another template carries it in its params
SINGLE_ANSWER = ("Answer the following multiple choice question. The entire content of your response should be of "
                 "the following format: 'ANSWER: $LETTER' (without quotes) where LETTER is one of {letters}.\n\n"
                 "{question}\n\n{choices}")
#: multiple_choice()'s reading of the answer line as one regex: ``ANSWER:`` then a run of letters, digits, spaces and
#: commas that holds exactly one letter (``ANSWER: C``, ``ANSWER: c.``, ``ANSWER: C,``; not ``ANSWER: Cesium``
#: nor ``ANSWER: A, B``), read from the uppercased text. Not covered: its unwrapping of ``$C$``, ``**C**`` and
#: ``(C)``, and its check that the letter is one of the choices (a letter beyond them is kept here; it scores 0
#: either way).
ANSWER_PATTERN = r"(?i)ANSWER\s*:\s*([A-Za-z])[ ,]*(?=[^A-Za-z\d ,]|$)"
#: the replay's per-doc metric, compared with the log's accuracy
METRIC = "exact_match,choice"


def _solver(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _plan(path: Path, steps) -> tuple[str | None, list[str], str]:
    """``(system template, prompt templates in order, multiple-choice template)`` of a plan inspect can be rebuilt
    from, else RepauditError naming what cannot."""
    names = [_solver(s.solver) for s in steps]
    other = [n for n in names if n not in SOLVERS]
    if other:
        raise RepauditError(f"'{path}': the inspect solver(s) {', '.join(other)} cannot be replayed (replayable: "
                            f"{', '.join(SOLVERS)}, with multiple_choice last)")
    if names.count("multiple_choice") != 1 or names[-1] != "multiple_choice":
        raise RepauditError(f"'{path}': the plan {' → '.join(names)} is not replayable yet (multiple_choice must "
                            "be its last solver; generative inspect runs are not replayed)")
    system, prompts, mc = None, [], SINGLE_ANSWER
    for s, name in zip(steps, names):
        params = s.params or {}
        if name == "system_message":
            if system is not None or names.index(name) != 0:
                raise RepauditError(f"'{path}': only one system_message, first in the plan, is replayed")
            system = str(params.get("template") or "")
        elif name == "prompt_template":
            template = str(params.get("template") or "")
            if template.replace("{prompt}", "").count("{"):
                raise RepauditError(f"'{path}': prompt_template's template uses fields other than {{prompt}}")
            prompts.append(template)
        elif name == "multiple_choice":
            if params.get("cot") or params.get("multiple_correct"):
                raise RepauditError(f"'{path}': multiple_choice with cot or multiple_correct is not replayed")
            if params.get("template"):
                mc = str(params["template"])
        elif name == "generate":
            raise RepauditError(f"'{path}': generate before multiple_choice is not replayed")
    return system, prompts, mc


def _letters(n: int) -> list[str]:
    return [chr(ord("A") + i) for i in range(n)]


def _rows(path: Path, samples, prompts: list[str], mc: str) -> tuple[list[dict[str, Any]], list[list[str]]]:
    """One row per sample (its final user prompt, letters, target) and the earlier turns every sample shares."""
    from repaudit.importers.inspectai.log import messages_of

    rows, turns_seen = [], set()
    turns: list[list[str]] = []
    for s in samples:
        msgs = messages_of(s.input, s.attachments or {})
        roles = [r for r, _ in msgs]
        if not msgs or roles[-1] != "user" or roles[:-1] != ["user", "assistant"] * ((len(msgs) - 1) // 2):
            raise RepauditError(f"'{path}': sample {s.id}'s input is not user/assistant turns ending with the "
                                "question (system messages in an input are not replayed)")
        pairs = [[msgs[i][1], msgs[i + 1][1]] for i in range(0, len(msgs) - 1, 2)]
        turns_seen.add(json.dumps(pairs))
        turns = pairs
        if not s.choices or len(s.choices) > 26 or not isinstance(s.target, str) or len(s.target) != 1:
            raise RepauditError(f"'{path}': sample {s.id} is not single-answer multiple choice (choices and one "
                                "target letter)")
        question = msgs[-1][1]
        for template in prompts:
            question = template.replace("{prompt}", question)
        letters = _letters(len(s.choices))
        text = mc.replace("{letters}", ",".join(letters)).replace("{question}", question).replace(
            "{choices}", "\n".join(f"{x}) {c}" for x, c in zip(letters, s.choices)))
        rows.append({"id": str(s.id), "prompt": text, "choices": list(s.choices), "target": s.target})
    if len(turns_seen) > 1:
        raise RepauditError(f"'{path}': samples carry different earlier turns; only turns shared by every sample "
                            "are replayed (as few-shot examples)")
    return rows, turns


def _check_rebuilt(path: Path, samples, rows, turns, system: str | None) -> int:
    """Samples whose recorded conversation equals the rebuilt one (those that record one); RepauditError at the
    first that differs."""
    from repaudit.importers.inspectai.log import prompt_messages

    checked = 0
    for s, row in zip(samples, rows):
        recorded = prompt_messages(s, s.attachments or {})
        if recorded is None:
            continue
        rebuilt = ([("system", system)] if system else []) + [
            (r, t) for u, a in turns for r, t in (("user", u), ("assistant", a))] + [("user", row["prompt"])]
        if [tuple(m) for m in recorded] != rebuilt:
            raise RepauditError(f"'{path}': sample {s.id}'s conversation as rebuilt from the plan differs from the "
                                "one the log records (another template or solver effect): not replayed")
        checked += 1
    return checked


def _write_rows(rows: list[dict[str, Any]], cache: Path) -> Path:
    """The docs as JSON lines under ``cache/inspect/<sha256 of the text>.jsonl`` (written once, atomically)."""
    body = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    file = cache / "inspect" / f"{sha256_text(body)}.jsonl"
    if not file.is_file():
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_suffix(".tmp")
        tmp.write_text(body, encoding="utf-8")
        tmp.replace(file)
    return file


def _replayable_plan(path: Path, spec: EvalSpec, plan: EvalPlan | None, rec: Recorded
                     ) -> tuple[str | None, list[str], str]:
    """The plan's templates (:func:`_plan`), once provider, scorer, solvers and greedy generation are replayable."""
    provider = (spec.model or "").split("/", 1)[0]
    if provider != "hf" and provider not in SERVED_PROVIDERS:
        raise RepauditError(f"'{path}' ran on inspect's '{spec.model}' provider; re-executed here: hf/ and the "
                            f"OpenAI-compatible providers ({', '.join(SERVED_PROVIDERS)}) through --base-url")
    scorers = [s.name for s in spec.scorers or []]
    if scorers != ["choice"]:
        raise RepauditError(f"'{path}': scorer(s) {', '.join(scorers) or 'none'}; only choice() is replayed")
    system, prompts, mc = _plan(Path(path), (plan.steps or []) if plan else [])
    sampled = rec.value("generation.do_sample")
    if sampled is not False:
        why = "sampled its generations" if sampled is True else "does not record greedy generation (do_sample)"
        raise RepauditError(f"'{path}' {why}: sampled draws cannot be replayed doc by doc")
    return system, prompts, mc


def _task_config(path: Path, spec: EvalSpec, file: Path, turns: list[list[str]], max_gen_toks: int) -> dict[str, Any]:
    """The lm-eval-style task config that replays the run: its docs, turns as few-shot examples, choice()'s regex."""
    return {
        "task": f"inspect_{spec.task}", "dataset_path": "json", "dataset_kwargs": {"data_files": {"test": str(file)}},
        "test_split": "test", "output_type": "generate_until", "doc_to_text": "{{prompt}}",
        "doc_to_target": "{{target}}", "target_delimiter": "", "fewshot_delimiter": "\n\n",
        "fewshot_config": {"sampler": "first_n", "samples": [{"prompt": u, "target": a} for u, a in turns]},
        "num_fewshot": len(turns), "generation_kwargs": {"until": [], "max_gen_toks": max_gen_toks},
        "filter_list": [{"name": "choice", "filter": [{"function": "uppercase"},
                                                      {"function": "regex", "regex_pattern": ANSWER_PATTERN},
                                                      {"function": "take_first"}]}],
        "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True,
                         "ignore_case": True}],
        "metadata": {"version": 0, "inspect_task": spec.task, "inspect_log": Path(path).name}}


def _recorded_outcomes(path: Path, docs: dict[int, Any]) -> dict[int, Any]:
    """The log's per-doc outcomes with choice()'s accuracy under the replay's metric name (:data:`METRIC`)."""
    metric = next((k for k in ("accuracy", "accuracy,choice") if all(k in d.metrics for d in docs.values())), None)
    if metric is None:
        raise RepauditError(f"'{path}' does not record choice()'s accuracy for every sample")
    # the docs are the log's own samples, so content needs no check by hash: the replay's doc_hash is of its rows
    # an answer choice() could not read is empty in the log and the regex filter's "[invalid]" here
    return {i: dataclasses.replace(d, doc_hash=None, metrics={METRIC: d.metrics[metric]},
                                   prediction=d.prediction or INVALID) for i, d in docs.items()}


def config_from_inspect(path: Path, rec: Recorded, docs: dict[int, Any], model: str | None,
                        cache_dir: Path | None, log: tuple | None = None) -> tuple[RunConfig, dict[int, Any]]:
    """The RunConfig that replays an inspect_ai multiple-choice run (see the module docstring), and the recorded
    per-doc outcomes with the log's ``accuracy`` under the replay's metric name (:data:`METRIC`).

    Args:
        path: the ``.eval`` / ``.json`` log; rec, docs: what :mod:`repaudit.importers.inspectai.log` read;
            ``log``: its header and samples as :func:`~repaudit.importers.inspectai.log.read_log` returned them
            (read again when ``None``).
        model: a model to use instead of the log's ``model_path`` (``default``: the packaged one).
        cache_dir: where the docs file is written (default: repaudit's cache).

    Raises:
        RepauditError: another provider, a solver or scorer not rebuilt, sampled generation, a setting the log does
            not record, or a sample whose rebuilt conversation differs from the recorded one.
    """
    from repaudit.backends.model_source import default_cache_dir
    from repaudit.importers.inspectai.log import doc_order, read_log

    header, loaded = log if log is not None else read_log(Path(path))[:2]
    spec = header.eval
    system, prompts, mc = _replayable_plan(path, spec, header.plan, rec)
    by_key = {str(s.id): s for s, _ in loaded if s.epoch == 1}
    order = doc_order(header, list(by_key), {k: s.id for k, s in by_key.items()})
    samples = [by_key[k] for k in order]
    rows, turns = _rows(Path(path), samples, prompts, mc)
    _check_rebuilt(Path(path), samples, rows, turns, system)

    def need(p: str) -> Any:
        value = rec.need(p, path)
        if value is None:
            raise RepauditError(f"'{path}' records {p} as none: it cannot be replayed")
        return value

    margs = dict(spec.model_args or {})
    recorded_path = margs.get("model_path")
    file = _write_rows(rows, Path(cache_dir or default_cache_dir()))
    task_config = _task_config(path, spec, file, turns, int(need("generation.max_gen_toks")))
    common = dict(task=task_config["task"], task_config=task_config, cache_dir=cache_dir, chat_template=True,
                  fewshot_as_multiturn=bool(turns), num_fewshot=len(turns), system_prompt=system or None,
                  do_sample=False, stop_at_eos=True)
    if (spec.model or "").split("/", 1)[0] in SERVED_PROVIDERS:  # through the endpoint: the conversation as sent
        from repaudit.backends.endpoint import EndpointSettings

        # backend, dtype, device, batch_size, max_concurrency: factor names, routed to their records by RunConfig's
        # wrap validator (the pydantic plugin's __init__ knows only the model's own fields)
        cfg = RunConfig(**common, model=model or served_model_id(spec.model or ""),  # type: ignore[call-arg]
                        backend="openai", dtype=None, device=None, batch_size=1,
                        max_concurrency=int(rec.value("serving.max_concurrency", 8)),
                        endpoint=EndpointSettings(base_url=spec.model_base_url) if spec.model_base_url else None)
        return cfg, _recorded_outcomes(path, docs)
    if model is None and recorded_path and not Path(str(recorded_path)).is_dir():
        raise RepauditError(f"'{path}' ran on the local model '{recorded_path}' (model_args.model_path), which is not "
                            f"a folder here (paths resolve against {Path.cwd()}): pass --model DIR, or --model default "
                            "for the packaged SmolLM2-135M-Instruct")
    cfg = RunConfig(**common, model=model or str(margs.get("model_path") or need("model.name")),  # type: ignore[call-arg]
                    dtype=str(need("serving.dtype")).removeprefix("torch."), batch_size=int(need("serving.batch_size")),
                    device="cpu", backend="hf")
    return cfg, _recorded_outcomes(path, docs)
