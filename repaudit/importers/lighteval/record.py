"""One task of a lighteval results file as the vocabulary's record (:mod:`repaudit.vocabulary`): every setting the
file holds with its key, lighteval's own behaviour where the file is silent (shown as its default, never as
recorded: lighteval records no version number, so a default is shown as not recorded), and nothing else.

The settings fields declare their lighteval keys (:func:`repaudit.settings.harness_map`); this reader builds the
sources they name (:data:`SOURCES`) and executes that map. By hand: the backend (told by ``model_config``'s
fields), BOS, the chat template, n-shot (the task key's ``|k``), the few-shot pool where ``few_shots_split`` is unset,
decoding (lighteval samples when the temperature is above 0), metrics and their per-doc functions.
"""

from __future__ import annotations

from typing import Any

from repaudit.hashing import sha256_json
from repaudit.importers.comparable import DocOutcome
from repaudit.importers.declared import HarnessDefault, Source, apply_defaults, read_declared, source
from repaudit.importers.lighteval.schema import LightevalResults, ModelConfig, TaskConfig
from repaudit.importers.lmeval.fields import QUANT_ARGS, quantisation
from repaudit.settings import harness_map
from repaudit.vocabulary import Recorded, apply_conditions, derived, setting_paths

HARNESS = "lighteval"
#: the sources this reader builds for the lighteval keys of the settings fields
SOURCES = ("model_config", "generation_parameters", "config_general", "task")
_MC = "config_general.model_config."
_TASK = "lighteval/tasks/lighteval_task.py"
#: lighteval's behaviour where its files are silent; its files record no version number, so these are shown as
#: lighteval's default with the version not recorded (never as a value)
DEFAULTS: dict[str, HarnessDefault] = {
    "seeds.fewshot_seed": HarnessDefault(42, f"{_TASK} LightevalTask.get_docs: random.Random(42) shuffles the docs "
                                         "and draws the few-shot examples"),
    "prompt.target_delimiter": HarnessDefault(" ", "lighteval/tasks/prompt_manager.py "
                                              "PromptManager._prepare_plain_text: query + ' ' + gold"),
    "prompt.fewshot_delimiter": HarnessDefault("\n\n", "lighteval/tasks/prompt_manager.py "
                                               "PromptManager._prepare_plain_text: examples joined by '\\n\\n'"),
    "fewshot.sampler": HarnessDefault("random", f"{_TASK}: few_shots_select unset → random"),
}


def split_task_key(key: str) -> tuple[str | None, str, int | None]:
    """``suite|task|k`` (≤0.12) or ``task|k`` (0.13) → (suite, task, k); k is ``None`` if absent."""
    parts = key.split("|")
    shots = int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else None
    if shots is not None:
        parts = parts[:-1]
    suite = parts[0] if len(parts) > 1 else None
    return suite, parts[-1], shots


def canonical_task(key: str) -> str:
    """The name a lighteval task key is compared under: suite and n-shot dropped, ``:`` → ``_``
    (``leaderboard|arc:challenge|25`` → ``arc_challenge``, ``mmlu:anatomy|5`` → ``mmlu_anatomy``), which is
    lm-eval's name for the same benchmark in the common cases."""
    return split_task_key(key)[1].replace(":", "_")


def backend(mc: ModelConfig | None) -> str | None:
    """The backend a ``model_config`` was for, told by its fields (vLLM's engine fields, transformers' parallelism,
    an endpoint's URL or provider); ``None`` where it cannot be told."""
    if mc is None:
        return None
    extra = mc.model_extra or {}
    if "gpu_memory_utilization" in extra or "tensor_parallel_size" in extra:
        return "vllm"
    if "model_parallel" in extra or "continuous_batching" in extra or "compile" in extra:
        return "hf"
    if "base_url" in extra or "provider" in extra:
        return "endpoint"
    return None


def is_logprob_task(tc: TaskConfig | None) -> bool:
    """Whether every metric of a task scores log-probabilities (a multiple-choice task) rather than generations."""
    cats = {m.category for m in (tc.metric_entries() if tc else [])}
    return bool(cats) and cats <= {"LOGPROBS", "MetricCategory.MULTICHOICE", "MULTICHOICE", "MetricCategory.LOGPROBS"}


def chat_applied(mc: ModelConfig) -> tuple[bool | None, str]:
    """Whether the run applied a chat template, and the key that says so: ``override_chat_template`` where set,
    else ``use_chat_template``."""
    if mc.override_chat_template is not None:
        return mc.override_chat_template, f"{_MC}override_chat_template"
    return mc.use_chat_template, f"{_MC}use_chat_template"


def task_record(res: LightevalResults, key: str, name: str, docs: dict[int, DocOutcome] | None) -> Recorded:
    """The record of one task (``key`` as the results file spells it, ``name`` as compare pairs it)."""
    cg = res.config_general
    mc = cg.model_config_
    tc = (res.config_tasks or {}).get(key)
    rec = Recorded()
    _data(rec, res, key, name, tc, docs)
    read_declared(HARNESS, _sources(res, key, tc), rec)
    _serving(rec, mc)
    _prompt(rec, mc, tc)
    _fewshot(rec, key, tc, docs)
    _generation(rec, tc)
    _model(rec, res)
    apply_defaults(rec, HARNESS, None, DEFAULTS)
    return apply_conditions(rec.fill(setting_paths())).sorted()


def _sources(res: LightevalResults, key: str, tc: TaskConfig | None) -> dict[str, Source]:
    """The dicts the settings fields' lighteval keys name (:data:`SOURCES`)."""
    mc = res.config_general.model_config_
    model: Source = {}
    gen: Source = {}
    if mc is not None:
        model = source(mc.model_dump(exclude={"generation_parameters", "model_loading_kwargs"}), _MC)
        model.update(source(mc.model_loading_kwargs, f"{_MC}model_loading_kwargs."))
        if mc.generation_parameters is not None:
            gen = source(mc.generation_parameters.model_dump(), f"{_MC}generation_parameters.")
    general = source(res.config_general.model_dump(exclude={"model_config_"}), "config_general.")
    task = source(tc.model_dump() if tc else None, f"config_tasks.{key}.")
    return {"model_config": model, "generation_parameters": gen, "config_general": general, "task": task}


def _data(rec: Recorded, res: LightevalResults, key: str, name: str, tc: TaskConfig | None,
          docs: dict[int, DocOutcome] | None) -> None:
    """The task, its version, output type, dataset, split and doc count."""
    rec.put("data.task", name, f"results.{key}", note="" if name == key else f"lighteval's key '{key}'")
    version = (res.versions or {}).get(key)
    if version is not None:
        rec.put("data.task_version", version, f"versions.{key}")
    elif tc is not None and tc.version is not None:
        rec.put("data.task_version", tc.version, f"config_tasks.{key}.version")
    if docs:
        rec["data.n_docs"] = derived(len(docs), "rows of the details file")
    if tc is None:
        return
    rec["data.output_type"] = derived("multiple_choice" if is_logprob_task(tc) else "generate_until",
                                      f"the categories of config_tasks.{key}.metrics")
    if tc.hf_repo:
        rec.put("data.dataset", tc.hf_repo, f"config_tasks.{key}.hf_repo")
    if tc.hf_subset:
        rec.put("data.subset", tc.hf_subset, f"config_tasks.{key}.hf_subset")
    if tc.evaluation_splits:
        rec.put("data.split", tc.evaluation_splits[0], f"config_tasks.{key}.evaluation_splits[0]")
    names = [str(m.metric_name) for m in tc.metric_entries() if m.metric_name]
    rec.put("metric.metrics", names, f"config_tasks.{key}.metrics[].metric_name")
    norms = sorted({m.sample_level_fn for m in tc.metric_entries() if m.sample_level_fn})
    if norms:
        rec.put("metric.sample_level_fn", norms, f"config_tasks.{key}.metrics[].sample_level_fn")


def _serving(rec: Recorded, mc: ModelConfig | None) -> None:
    """Backend, quantisation and BOS from the model config."""
    if mc is None:
        return
    b = backend(mc)
    if b is not None:
        rec["serving.backend"] = derived(b, "told by config_general.model_config's fields")
    if mc.add_special_tokens is False:  # True (the default): whatever the tokenizer adds, not recorded
        rec.put("serving.add_bos_token", False, f"{_MC}add_special_tokens")
    if b in ("vllm", "hf"):
        method, q = quantisation({**(mc.model_loading_kwargs or {}), **(mc.model_extra or {})})
        if q:
            where = ", ".join(f"{_MC}{k}" for k in q)
            rec.put("serving.quantization", method, where)
            rec.put("model.quantization_args", q, where)
        else:
            rec["serving.quantization"] = derived("none", f"{_MC[:-1]} has no quantisation argument")
    if mc.max_length is not None:
        rec.put("engine.max_length", mc.max_length, f"{_MC}max_length")


def _prompt(rec: Recorded, mc: ModelConfig | None, tc: TaskConfig | None) -> None:
    """The prompt function, the chat template."""
    if tc is not None and tc.prompt_function:
        rec.put("prompt.prompt_function", tc.prompt_function, "config_tasks.*.prompt_function")
        rec["prompt.prompt_format"] = derived("lighteval", "a lighteval run builds prompts with its task's prompt "
                                                          "function")
    if mc is not None:
        applied, key = chat_applied(mc)
        if applied is not None:
            rec.put("prompt.chat_template", applied, key)


def _fewshot(rec: Recorded, key: str, tc: TaskConfig | None, docs: dict[int, DocOutcome] | None) -> None:
    """n-shot from the task key (``|k``) or the task config; the pool, the sampler, the examples each doc got."""
    _, _, shots = split_task_key(key)
    if shots is not None:
        rec.put("fewshot.num_fewshot", shots, f"results.{key} (the key's |{shots})")
    elif tc is not None and tc.num_fewshots is not None:
        rec.put("fewshot.num_fewshot", tc.num_fewshots, f"config_tasks.{key}.num_fewshots")
    if tc is None:
        return
    if rec.value("fewshot.fewshot_split") is None and tc.evaluation_splits:  # unset (null): the eval split
        rec["fewshot.fewshot_split"] = derived(tc.evaluation_splits[0], "lighteval draws examples from the "
                                               "evaluation split when few_shots_split is unset (fewshot_docs)")
    if tc.few_shots_select:
        rec.put("fewshot.sampler", tc.few_shots_select, f"config_tasks.{key}.few_shots_select")
    if docs:
        ids = sorted({i for d in docs.values() for i in d.fewshot_ids or []})
        rec["fewshot.ids_sha256"] = derived(sha256_json(ids), "the few-shot ids of the details' rows")


def _generation(rec: Recorded, tc: TaskConfig | None) -> None:
    """Decoding: lighteval samples when generation_parameters.temperature > 0."""
    t = rec.get("generation.temperature")
    if t is not None and t.known and isinstance(t.value, (int, float)):
        rec["generation.do_sample"] = derived(t.value > 0, f"{t.key} {t.value}: lighteval samples when it is "
                                                           "above 0")


def _model(rec: Recorded, res: LightevalResults) -> None:
    """The model (``model_config`` where the file has one, ≥0.8; else ``config_general``'s fields), lighteval's
    commit."""
    cg, mc = res.config_general, res.config_general.model_config_
    if mc is not None and mc.model_name:
        rec.put("model.name", mc.model_name, f"{_MC}model_name")
    elif cg.model_name:
        rec.put("model.name", cg.model_name, "config_general.model_name")
    if mc is not None and mc.revision:
        rec.put("model.revision", mc.revision, f"{_MC}revision")
    if cg.model_sha:
        rec.put("model.sha", cg.model_sha, "config_general.model_sha")
    if mc is not None:
        if mc.trust_remote_code is not None:
            rec.put("model.trust_remote_code", mc.trust_remote_code, f"{_MC}trust_remote_code")
        mapped = {k for places in harness_map(HARNESS).values() for src, k in places if src == "model_config"}
        args = {k: v for k, v in (mc.model_loading_kwargs or {}).items() if k not in QUANT_ARGS and k not in mapped}
        rec.put("model.args", args, f"{_MC}model_loading_kwargs")
    if cg.lighteval_sha and cg.lighteval_sha != "?":
        rec.put("software.lighteval_commit", cg.lighteval_sha, "config_general.lighteval_sha")


def metric_directions(tc: TaskConfig | None, scores: dict[str, Any]) -> dict[str, bool]:
    """Metric key → higher is better, where the task's config states it (``metrics[].higher_is_better``: a bool,
    or a dict by sub-metric name)."""
    out: dict[str, bool] = {}
    for m in tc.metric_entries() if tc else []:
        hib = m.higher_is_better
        names = m.metric_name if isinstance(m.metric_name, list) else [m.metric_name]
        for name in names:
            if isinstance(hib, bool) and name:
                out.update({k: hib for k in scores if k == name or k.partition(",")[0] == name})
            elif isinstance(hib, dict):
                out.update({k: bool(v) for k, v in hib.items() if isinstance(v, bool) and k in scores})
    return out
