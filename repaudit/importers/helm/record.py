"""A HELM run's settings and facts as the vocabulary's record (:mod:`repaudit.vocabulary`), from its
``run_spec.json``.

HELM writes its whole ``AdapterSpec`` into ``run_spec.adapter_spec``, so nearly every adaptation setting is
*recorded*: the settings fields declare their ``helm`` keys (:func:`repaudit.settings.harness_map`: ``temperature``,
``max_tokens`` → ``generation.max_gen_toks``, ``stop_sequences`` → ``generation.until``, ``max_train_instances``
→ ``fewshot.num_fewshot``, ``max_eval_instances`` → ``data.limit``, ``instructions`` → ``prompt.description``) and
this reader executes them (:func:`repaudit.importers.declared.read_declared`). ``adapter_spec.model`` is the model;
every other adapter-spec field (the method, prompt affixes, ``num_outputs``, trials, ``model_deployment``) is kept
as ``other.<field>``, a setting only HELM records. HELM's own defaults (:data:`DEFAULTS`, the ``AdapterSpec``
dataclass's) stand only where a field is missing; HELM's run folders record no HELM version, so such a default is
shown as not recorded. A temperature of 0 is greedy decoding (HELM's clients send it as such), so sampling settings
do not apply.
"""

from __future__ import annotations

from typing import Any

from repaudit.importers.declared import HarnessDefault, apply_defaults, greedy_at_zero, read_declared, source
from repaudit.importers.helm.schema import RunSpec
from repaudit.settings import harness_map
from repaudit.vocabulary import Recorded, apply_conditions, derived, setting_paths

HARNESS = "HELM"
#: the sources this reader builds for the helm keys of the settings fields
SOURCES = ("adapter_spec",)
#: where each adapter-spec value sits in the run folder
AT = "run_spec.adapter_spec."
_SPEC = "helm/benchmark/adaptation/adapter_spec.py AdapterSpec"
#: HELM's AdapterSpec defaults, for a run_spec that omits a field (none of the published ones do)
DEFAULTS: dict[str, HarnessDefault] = {
    "generation.temperature": HarnessDefault(1.0, f"{_SPEC}.temperature = 1"),
    "generation.max_gen_toks": HarnessDefault(100, f"{_SPEC}.max_tokens = 100"),
    "generation.until": HarnessDefault([], f"{_SPEC}.stop_sequences = []"),
    "fewshot.num_fewshot": HarnessDefault(5, f"{_SPEC}.max_train_instances = 5"),
    "data.limit": HarnessDefault(None, f"{_SPEC}.max_eval_instances = None", note="every instance of the split"),
    "prompt.description": HarnessDefault("", f"{_SPEC}.instructions = ''"),
}


def task_name(run_name: str) -> str:
    """A run's task: its name without the ``model=`` entry (``bbq:subject=all,method=multiple_choice_joint``)."""
    head, colon, args = run_name.partition(":")
    kept = [a for a in args.split(",") if a and not a.startswith("model=")]
    return head + (":" + ",".join(kept) if kept else "") if colon else run_name


def task_record(spec: RunSpec, split: str | None, n_docs: int | None) -> Recorded:
    """The record of a HELM run's one task (see the module docstring); ``split``: the split its statistics are on,
    ``n_docs``: its instances (both derived by :mod:`.results`)."""
    ad = spec.adapter_spec
    rec = Recorded()
    if isinstance(ad.get("model"), str) and ad["model"]:
        rec.put("model.name", ad["model"], f"{AT}model")
    read_declared("helm", {"adapter_spec": source(ad, AT)}, rec)
    mapped = {key for places in harness_map("helm").values() for _, key in places} | {"model"}
    for key, value in ad.items():
        if key not in mapped and value is not None:
            rec.put(f"other.{key}", value, f"{AT}{key}")
    rec["data.task"] = derived(task_name(spec.name), "run_spec.name without its model= entry")
    _scenario(rec, spec)
    if split:
        rec["data.split"] = derived(split, "the split of the run's statistics (stats.json name.split)")
    if n_docs is not None:
        rec["data.n_docs"] = derived(n_docs, "the instances of per_instance_stats.json (or scenario_state.json)")
    greedy_at_zero(rec, "temperature 0: HELM's clients decode greedily")
    apply_defaults(rec, HARNESS, None, DEFAULTS)
    return apply_conditions(rec.fill(setting_paths())).sorted()


def _scenario(rec: Recorded, spec: RunSpec) -> None:
    """The scenario (its class and arguments) and the metrics the run computes."""
    sc = spec.scenario_spec
    if sc is not None:
        rec.put("data.dataset", sc.class_name, "run_spec.scenario_spec.class_name")
        if sc.args:
            rec.put("data.task_args", _plain(sc.args), "run_spec.scenario_spec.args")
    if spec.metric_specs:
        rec.put("metric.metrics", [m.class_name for m in spec.metric_specs],
                "run_spec.metric_specs[].class_name")


def _plain(value: Any) -> Any:
    return {str(k): v for k, v in value.items()} if isinstance(value, dict) else value
