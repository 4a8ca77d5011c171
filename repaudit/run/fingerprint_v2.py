"""Fingerprint schema 2, as run files written before schema 3 hold it: read, digested as it was, and upgraded.

Schema 2 kept settings and facts together in groups (``backend.dtype`` beside ``backend.batch_sizes_used``);
schema 3 (:mod:`repaudit.run.fingerprint`) records the settings records of :mod:`repaudit.settings` as they were
resolved, and the facts apart. :func:`upgrade` turns a schema-2 fingerprint into a schema-3 one that keeps the
schema-2 digest, so a run file's ``fingerprint_digest`` stays what it was when it was written.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from repaudit.hashing import sha256_json
from repaudit.run.environment import GitState, Hardware, Software
from repaudit.run.protocol_record import ProtocolRecord


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())


def later() -> Any:
    """A field added after schema 2 shipped: ``None`` by default, and left out of the digest while ``None`` so
    that older run files keep their digest (:meth:`Fingerprint.canonical`)."""
    return Field(None, json_schema_extra={"later": True})


class Seeds(_Strict):
    """Seeds set before the run (lm-eval's ``--seed`` order: python, numpy, torch, few-shot)."""

    python: int
    numpy: int
    torch: int
    fewshot: int


class ModelIdentity(_Strict):
    """Which weights and tokenizer: hashes, not just names."""

    name: str
    source: str
    revision: str | None
    weights_sha256: str
    gguf_sha256: str | None
    tokenizer_sha256: str
    special_tokens: dict[str, str | None]
    architecture: str
    num_parameters: int
    trust_remote_code: bool


class BackendConfig(_Strict):
    """How inference ran. ``batch_sizes_used`` maps a batch size to the number of batches of it;
    ``engine`` holds the backend's own settings that can change numbers (transformers: attention
    implementation; vLLM: version, attention backend, scheduler limits, prefix caching, eager mode,
    engine seed, batch-invariant mode). ``padding_side`` and ``scoring_strategy`` are the requested
    values; the vllm backend does not use them."""

    name: str
    device: str
    dtype: str
    batch_size: int
    batch_sizes_used: dict[str, int]
    padding_side: str
    max_length: int
    add_special_tokens: bool
    scoring_strategy: str
    engine: dict[str, Any] | None = None
    #: requested (``None`` = the tokenizer's default) and resolved from the token ids sent: True/False/"mixed"
    add_bos_token: bool | None = None
    bos_first: bool | str | None = None


class PromptConfig(_Strict):
    """Prompt format, its template hash, delimiters, chat template and system prompt.

    Added later, left out of the digest when ``None`` (older files keep their digest):
    ``label_style`` and ``choice_separator`` (lettered prompts only), ``description`` (the text
    before the examples when one text served every doc; ``None`` when it varies by doc, e.g.
    MMLU's subject), ``description_sha256`` (sha256 of every evaluated doc's description, in doc
    order), ``description_override`` (``True`` when set by ``--description``, else ``None``: the
    task's own), ``fewshot_as_multiturn`` (``True`` or ``None``).
    """

    format: str
    template_sha256: str
    target_delimiter: str
    fewshot_delimiter: str
    chat_template: bool
    chat_template_sha256: str | None
    system_prompt: str | None
    label_style: str | None = later()
    choice_separator: str | None = later()
    description: str | None = later()
    description_sha256: str | None = later()
    description_override: bool | None = later()
    fewshot_as_multiturn: bool | None = later()


class FewshotConfig(_Strict):
    """n-shot and how examples were chosen (the sampler's seed is ``Seeds.fewshot``).

    ``ids_sha256`` hashes every doc's few-shot ids in order; the ids themselves are in the run's
    per-doc results. ``order_seed`` is None when examples stay in the sampler's order, else the
    seed of the per-doc permutation applied after selection (:func:`repaudit.tasks.fewshot.permute`)."""

    num_fewshot: int
    split: str | None
    sampler: str
    ids_sha256: str
    order_seed: int | None = None


class GenerationConfig(_Strict):
    """generate_until settings; stop sequences include the EOS handling."""

    until: list[str]
    eos_token: str | None
    stop_at_eos: bool
    max_gen_toks: int
    do_sample: bool
    temperature: float
    top_p: float
    top_k: int
    #: the seed of sampled generations (set only when sampling was on)
    seed: int | None = later()
    #: the hf backend's generation strategy when it is not ``exact`` (``prefix_cache``); None = exact, as every
    #: run before strategies existed
    strategy: str | None = later()


class MetricConfig(_Strict):
    """Metric variants: names, acc_norm's normalisation, answer filters, stderr formula, and the
    options of ``exact_match`` (``ignore_case``, ``regexes_to_ignore``, …) for generations."""

    metrics: list[str]
    acc_norm_normalisation: str | None
    filters: list[str]
    aggregation: str
    stderr: str
    options: dict[str, Any] = {}
    #: ``raw`` or ``leaderboard_normalised`` (Open LLM Leaderboard v2); the random-guess baseline used
    score_normalisation: str = "raw"
    random_baseline: float | None = None
    #: the metric a followed protocol reports (``acc_norm``), else None
    reported: str | None = None
    #: generate_until: how answers are matched (``exact``, ``quasi_exact``, ``prefix``, ``suffix``)
    answer_match: str | None = later()


class DataIdentity(_Strict):
    """Task and docs: where they were read from, split, hashes, ``limit`` and the docs actually evaluated.

    ``source`` is ``data_dir``, ``env`` (``$REPAUDIT_DATA_DIR``), ``package`` or ``hub``
    (:mod:`repaudit.tasks.data`); ``file_sha256`` hashes the bytes read; ``content_sha256`` hashes
    the rows and is the same for the same docs from any source; ``docs_sha256`` hashes the
    processed docs actually evaluated.
    """

    task: str
    task_version: float
    output_type: str
    source: str
    origin: str
    location: str
    split: str
    revision: str | None
    file_sha256: str | None
    content_sha256: str
    n_docs_split: int
    limit: int | None
    n_docs: int
    docs_sha256: str
    #: sha256 of the evaluated doc ids when only a subset ran (a round of ``--precision``); else None
    doc_ids_sha256: str | None = later()


class FingerprintV2(_Strict):
    """A schema-2 fingerprint (see the module docstring)."""

    schema_version: Literal[2] = 2
    data: DataIdentity
    model: ModelIdentity
    backend: BackendConfig
    prompt: PromptConfig
    fewshot: FewshotConfig
    generation: GenerationConfig | None
    metric: MetricConfig
    seeds: Seeds
    #: the recorded lm-eval task configuration a task was built from (``--task-config``), else None
    task_config: dict[str, Any] | None = None
    #: the published protocol followed (``run --protocol``): name, sha256, overrides
    protocol: ProtocolRecord | None = None
    hardware: Hardware
    software: Software
    git: GitState

    def canonical(self) -> dict:
        """The JSON-ready dict the digest is computed from."""
        d = self.model_dump(mode="json")
        if d.get("protocol") is None:  # runs without a protocol keep the digest they had before it existed
            d.pop("protocol", None)
        # likewise fields added after schema 2 shipped (marked with later()), while unset
        for group, part in d.items():
            sub = getattr(self, group, None)
            if not isinstance(part, dict) or not isinstance(sub, BaseModel):
                continue
            for key, info in type(sub).model_fields.items():
                if (info.json_schema_extra or {}).get("later") and part.get(key) is None:
                    part.pop(key, None)
        return d

    def digest(self) -> str:
        """sha256 of the canonical JSON of this fingerprint."""
        return sha256_json(self.canonical())


def _settings(v2: FingerprintV2) -> Any:
    """A schema-2 fingerprint's settings as :mod:`repaudit.settings` records, read as the schema-2 replay read them."""
    from repaudit.run import fingerprint as v3
    from repaudit.settings import (
        DataSettings,
        FewshotSettings,
        GenerationSettings,
        PromptSettings,
        ScoringSettings,
        SeedSettings,
        ServingSettings,
    )

    b, p, f, g, m = v2.backend, v2.prompt, v2.fewshot, v2.generation, v2.metric
    requested = (b.engine or {}).get("requested") or {}
    serving_fields = set(ServingSettings.model_fields)
    em = m.options.get("exact_match") or {}
    generation = None
    if g is not None:  # the stops as sent (the EOS appended for them included), as schema 3 records them
        generation = GenerationSettings(until=list(g.until), stop_at_eos=g.stop_at_eos,
                                        max_gen_toks=g.max_gen_toks, do_sample=g.do_sample, temperature=g.temperature,
                                        top_p=g.top_p, top_k=g.top_k, sampling_seed=g.seed,
                                        generation_strategy=g.strategy or "exact")
    return v3.RunSettings(
        data=DataSettings(split=v2.data.split, limit=v2.data.limit),
        seeds=SeedSettings(seed=v2.seeds.python, numpy_seed=v2.seeds.numpy, torch_seed=v2.seeds.torch,
                           fewshot_seed=v2.seeds.fewshot),
        prompt=PromptSettings(prompt_format=p.format, label_style=p.label_style or "A.",
                              choice_separator="\n" if p.choice_separator is None else p.choice_separator,
                              description=p.description if p.description_override else None,
                              chat_template=p.chat_template, fewshot_as_multiturn=bool(p.fewshot_as_multiturn),
                              system_prompt=p.system_prompt),
        fewshot=FewshotSettings(num_fewshot=f.num_fewshot, fewshot_split=f.split, fewshot_order_seed=f.order_seed),
        serving=ServingSettings(backend=b.name, device=b.device, dtype=b.dtype, batch_size=b.batch_size,
                                padding_side=b.padding_side, add_bos_token=b.add_bos_token,
                                scoring_strategy=b.scoring_strategy,
                                **{k: v for k, v in requested.items() if k in serving_fields}),
        generation=generation,
        scoring=ScoringSettings(acc_norm=m.acc_norm_normalisation or "char_length",
                                answer_match=m.answer_match or "exact", ignore_case=em.get("ignore_case"),
                                ignore_punctuation=em.get("ignore_punctuation"),
                                regexes_to_ignore=em.get("regexes_to_ignore"),
                                score_normalisation=m.score_normalisation))


def upgrade(v2: FingerprintV2) -> Any:
    """The schema-3 fingerprint of a schema-2 one: its settings into the records of :mod:`repaudit.settings` (as
    the schema-2 replay read them back), its facts apart; it digests as the schema-2 record did."""
    from repaudit.run import fingerprint as v3

    b, p, f, g, m, d = v2.backend, v2.prompt, v2.fewshot, v2.generation, v2.metric, v2.data
    fp = v3.Fingerprint(
        settings=_settings(v2),
        data=v3.DataIdentity(task=d.task, task_version=d.task_version, output_type=d.output_type, source=d.source,
                             origin=d.origin, location=d.location, revision=d.revision, file_sha256=d.file_sha256,
                             content_sha256=d.content_sha256, n_docs_split=d.n_docs_split, n_docs=d.n_docs,
                             docs_sha256=d.docs_sha256, doc_ids_sha256=d.doc_ids_sha256),
        model=v3.ModelIdentity(**v2.model.model_dump()),
        backend=v3.BackendFacts(batch_sizes_used=b.batch_sizes_used, max_length=b.max_length,
                                add_special_tokens=b.add_special_tokens, engine=b.engine, bos_first=b.bos_first),
        prompt=v3.PromptFacts(template_sha256=p.template_sha256, target_delimiter=p.target_delimiter,
                              fewshot_delimiter=p.fewshot_delimiter, chat_template_sha256=p.chat_template_sha256,
                              description=p.description, description_sha256=p.description_sha256),
        fewshot=v3.FewshotFacts(sampler=f.sampler, ids_sha256=f.ids_sha256),
        generation=v3.GenerationFacts(eos_token=g.eos_token, stops=list(g.until)) if g is not None else None,
        metric=v3.MetricFacts(metrics=m.metrics, filters=m.filters, aggregation=m.aggregation, stderr=m.stderr,
                              options=m.options, random_baseline=m.random_baseline, reported=m.reported),
        task_config=v2.task_config, protocol=v2.protocol, hardware=v2.hardware, software=v2.software, git=v2.git)
    return fp.with_legacy_digest(v2.digest())
