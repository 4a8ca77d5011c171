"""An inspect_ai log's settings as the vocabulary's record (:mod:`repaudit.vocabulary`): every value with its key in
the log, inspect's behaviour where the log is silent shown as its default, nothing guessed.

The settings fields declare their inspect keys (:func:`repaudit.settings.harness_map`); this reader builds the
sources they name (:data:`SOURCES`: the generate config, ``eval.model_args``, ``eval.config``) and executes that map.
By hand: ``max_connections`` is the ``hf/`` provider's batch size; few-shot examples are counted where a solver put
them — solved turns in a sample's input, or demonstration turns a solver added to the conversation the model saw
(``sample.messages``); decoding (the hf provider samples unless ``do_sample`` is false; other providers are greedy at
temperature 0); the plan's solvers, the system message, scorers and epochs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repaudit.hashing import sha256_text
from repaudit.importers.comparable import DocOutcome
from repaudit.importers.declared import HarnessDefault, Source, apply_defaults, read_declared, source
from repaudit.importers.inspectai.schema import EvalLog, EvalSample, EvalSpec, GenerateConfig
from repaudit.vocabulary import Recorded, apply_conditions, derived, setting_paths

HARNESS = "inspect_ai"
#: the sources this reader builds for the inspect keys of the settings fields
SOURCES = ("generate_config", "model_args", "eval_config")
#: metrics that describe another metric's spread, not a score
SPREAD_METRICS = ("stderr", "std", "var")
#: inspect's behaviour where a log is silent (its version is the log's ``packages.inspect_ai``)
DEFAULTS: dict[str, HarnessDefault] = {
    "data.limit": HarnessDefault(None, "inspect_ai/_eval/eval.py eval(limit=None)", note="every sample"),
    "generation.do_sample": HarnessDefault(True, "inspect_ai/model/_providers/hf.py HuggingFaceAPI.__init__: "
                                           "do_sample True unless -M do_sample=False",
                                           applies=lambda r: r.value("serving.backend") == "hf"),
}


def _short(v: Any) -> Any:
    """A parameter value for the factor table: long texts by their sha256."""
    if isinstance(v, str) and len(v) > 120:
        return f"sha256 {sha256_text(v)[:12]} ({len(v)} chars)"
    return v


def _pathlike(v: Any) -> bool:
    return isinstance(v, str) and ("/" in v or "\\" in v) and len(v) < 4096


def _generate(header: EvalLog) -> tuple[GenerateConfig | None, str]:
    spec = header.eval
    if spec.model_generate_config is not None:
        return spec.model_generate_config, "eval.model_generate_config."
    if header.plan is not None and header.plan.config is not None:
        return header.plan.config, "plan.config."
    return None, ""


def task_record(header: EvalLog, docs: dict[int, DocOutcome], by_id: dict[str, dict[int, EvalSample]]) -> Recorded:
    """The record of an inspect run (see the module docstring). Paths in task arguments are volatile and kept by
    their file name only."""
    spec = header.eval
    gen, prefix = _generate(header)
    rec = Recorded()
    sources: dict[str, Source] = {
        "generate_config": source(gen.model_dump() if gen else None, prefix),
        "model_args": source(spec.model_args, "eval.model_args."),
        "eval_config": source(spec.config.model_dump() if spec.config else None, "eval.config.")}
    read_declared("inspect", sources, rec)
    _serving(rec, spec, gen, prefix)
    _prompt(rec, header)
    _fewshot(rec, header, by_id)
    _decoding(rec, spec)
    _scoring(rec, header)
    _model(rec, spec)
    _data(rec, spec, docs)
    version = (spec.packages or {}).get("inspect_ai")
    apply_defaults(rec, HARNESS, version, DEFAULTS)
    return apply_conditions(rec.fill(setting_paths())).sorted()


def _provider(spec: EvalSpec) -> str | None:
    return (spec.model or "").split("/", 1)[0] or None


def _serving(rec: Recorded, spec: EvalSpec, gen: GenerateConfig | None, prefix: str) -> None:
    """The provider as backend; ``max_connections`` is the hf provider's batch size."""
    provider = _provider(spec)
    if provider:
        rec.put("serving.backend", provider, "eval.model (its provider)")
    conn = gen.max_connections if gen else None
    if conn is not None:
        rec.put("other.max_connections", conn, f"{prefix}max_connections")
        if provider == "hf":
            rec.put("serving.batch_size", conn, f"{prefix}max_connections",
                    note="the hf provider batches max_connections requests")
    if provider == "hf":
        rec["prompt.chat_template"] = derived(True, "inspect's hf provider applies the tokenizer's chat template")


def _prompt(rec: Recorded, header: EvalLog) -> None:
    """The plan's solvers (their parameters, long texts by hash) and its system message."""
    steps = (header.plan.steps or []) if header.plan else []
    if steps:
        rec.put("prompt.solver_plan", [f"{s.solver}(" + ", ".join(
            f"{k}={_short(v)!r}" for k, v in (s.params or {}).items() if not s.solver.endswith("system_message"))
            + ")" for s in steps], "plan.steps")
    for i, s in enumerate(steps):
        if s.solver.endswith("system_message") and s.params and s.params.get("template") is not None:
            rec.put("prompt.system_prompt", s.params["template"], f"plan.steps[{i}].params.template")


def _fewshot(rec: Recorded, header: EvalLog, by_id: dict[str, dict[int, EvalSample]]) -> None:
    """n-shot, read from the samples: solved examples are assistant turns before the model's own answer, in the
    sample's input (a task that gives them) or in the conversation the model saw (a solver that added them)."""
    samples = [s for eps in by_id.values() for s in eps.values()]
    if not samples:
        return
    counts = {_turns(s) for s in samples}
    where = ("samples[].messages: assistant turns before the model's answer"
             if any(s.messages for s in samples) else "samples[].input: assistant turns")
    if len(counts) == 1:
        rec["fewshot.num_fewshot"] = derived(counts.pop(), where)
    else:
        rec["fewshot.num_fewshot"] = derived(f"varies by sample ({min(counts)}–{max(counts)})", where)
    if rec.value("fewshot.num_fewshot"):
        multiturn = any(isinstance(s.input, list) or s.messages for s in samples)
        rec["prompt.fewshot_as_multiturn"] = derived(multiturn, "examples as earlier user/assistant turns")


def _turns(s: EvalSample) -> int:
    """Solved examples one sample's model saw: assistant turns of the conversation before the model's answer (its
    recorded messages, else its input)."""
    if s.messages:
        msgs = list(s.messages)
        while msgs and msgs[-1].role == "assistant":  # the model's own answer (and any retries)
            msgs.pop()
        return sum(1 for m in msgs if m.role == "assistant")
    return sum(1 for m in s.input if m.role == "assistant") if isinstance(s.input, list) else 0


def _decoding(rec: Recorded, spec: EvalSpec) -> None:
    """Greedy or sampled: the hf provider samples unless ``do_sample`` is false; others are greedy at
    temperature 0."""
    if rec.known("generation.do_sample"):
        return
    t = rec.get("generation.temperature")
    if t is not None and t.known and isinstance(t.value, (int, float)) and _provider(spec) != "hf":
        rec["generation.do_sample"] = derived(t.value > 0, f"{t.key} {t.value}: greedy at 0")


def _scoring(rec: Recorded, header: EvalLog) -> None:
    """Scorers, their metrics, the epochs reducer."""
    scores = header.results.scores if header.results else []
    if scores:
        rec.put("metric.scorers", [s.scorer or s.name for s in scores], "results.scores[].scorer")
        rec.put("metric.metrics", sorted({m for s in scores for m in s.metrics if m not in SPREAD_METRICS}),
                "results.scores[].metrics")
    cfg = header.eval.config
    if cfg is not None and cfg.epochs_reducer:
        rec.put("metric.epochs_reducer", cfg.epochs_reducer, "eval.config.epochs_reducer")


def _model(rec: Recorded, spec: EvalSpec) -> None:
    """The model (the hf provider's local path where it has one), provider, endpoint, other model arguments,
    package versions and the task's revision."""
    margs = dict(spec.model_args or {})
    path = margs.get("model_path")
    if _provider(spec) == "hf" and path:
        rec.put("model.name", path, "eval.model_args.model_path")
    elif spec.model:
        rec.put("model.name", spec.model, "eval.model")
    if spec.model:
        rec.put("model.provider", spec.model, "eval.model")
    if spec.model_base_url:
        rec.put("model.base_url", spec.model_base_url, "eval.model_base_url")
    mapped = {"model_path", "dtype", "torch_dtype", "device", "do_sample"}
    rec.put("model.args", {k: _short(v) for k, v in sorted(margs.items()) if k not in mapped}, "eval.model_args")
    for name, ver in sorted((spec.packages or {}).items()):
        rec.put(f"software.{name}", ver, f"eval.packages.{name}")
    rev = spec.revision
    if rev is not None and rev.commit:
        rec.put("software.task_revision", rev.commit + ("+dirty" if rev.dirty else ""), "eval.revision.commit")


def _data(rec: Recorded, spec: EvalSpec, docs: dict[int, DocOutcome]) -> None:
    """The task, its version and arguments (paths by file name), the dataset, shuffling, epochs, docs."""
    ds, cfg = spec.dataset, spec.config
    rec.put("data.task", spec.task, "eval.task")
    if spec.task_version is not None:
        rec.put("data.task_version", spec.task_version, "eval.task_version")
    args = {k: (Path(v).name if _pathlike(v) else _short(v)) for k, v in sorted((spec.task_args or {}).items())}
    rec.put("data.task_args", args, "eval.task_args")
    if ds and ds.name:
        rec.put("data.dataset", ds.name, "eval.dataset.name")
    if ds is not None and ds.shuffled is not None:
        rec.put("data.shuffled", ds.shuffled, "eval.dataset.shuffled")
    if cfg is not None:
        if cfg.sample_shuffle is not None:
            rec.put("data.sample_shuffle", cfg.sample_shuffle, "eval.config.sample_shuffle")
        if cfg.epochs:
            rec.put("data.epochs", cfg.epochs, "eval.config.epochs")
    rec["data.n_docs"] = derived(len(docs), "the log's samples")
