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
    model_config = ConfigDict(extra="forbid", protected_namespaces=(), use_attribute_docstrings=True)


def later() -> Any:
    """A field added after schema 2 shipped: ``None`` by default, and left out of the digest while ``None`` so
    that older run files keep their digest (:meth:`Fingerprint.canonical`)."""
    return Field(None, json_schema_extra={"later": True})


class Seeds(_Strict):
    """Seeds set before the run (lm-eval's ``--seed`` order: python, numpy, torch, few-shot)."""

    python: int
    """Python ``random`` seed."""
    numpy: int
    """numpy seed."""
    torch: int
    """torch seed (also the sampling seed of generations without their own)."""
    fewshot: int
    """Seed of the few-shot sampler."""


class ModelIdentity(_Strict):
    """Which weights and tokenizer: hashes, not just names."""

    name: str
    """The model as named on the command line (a local path, a hub id, or the default's name)."""
    source: str
    """Where the weights came from: gguf-package (the default model), local or hub."""
    revision: str | None
    """hub: the commit the downloaded snapshot holds; local: the ``--revision`` given, if any; None otherwise."""
    weights_sha256: str
    """sha256 over the weight files loaded."""
    gguf_sha256: str | None
    """sha256 of the GGUF the weights were de-quantised from; None for other weights."""
    tokenizer_sha256: str
    """sha256 of the serialised tokenizer (vocabulary, merges, normaliser, pre-tokeniser) and its bos, eos and pad
    tokens."""
    special_tokens: dict[str, str | None]
    """The tokenizer's ``bos``, ``eos`` and ``pad`` token strings (None: the tokenizer has none)."""
    architecture: str
    """The model class (hf: the transformers class loaded; vLLM: the config's first architecture)."""
    num_parameters: int
    """Parameters of the loaded model (0 where a vLLM engine in another process could not be asked)."""
    trust_remote_code: bool
    """Whether the repository's own code was allowed to run."""


class BackendConfig(_Strict):
    """How inference ran. ``padding_side`` and ``scoring_strategy`` are the requested values; the vllm backend does
    not use them."""

    name: str
    """The backend: hf or vllm."""
    device: str
    """The torch device the model ran on."""
    dtype: str
    """The dtype the weights were loaded in."""
    batch_size: int
    """The batch size asked for (rows per forward pass)."""
    batch_sizes_used: dict[str, int]
    """Batch size → number of batches of that size actually run."""
    padding_side: str
    """The side batches are padded on, as asked: right or left."""
    max_length: int
    """The context window requests were cut to (tokens)."""
    add_special_tokens: bool
    """Whether the tokenizer adds special tokens (a BOS) when encoding by default."""
    scoring_strategy: str
    """As asked: full_sequence or shared_prefix."""
    engine: dict[str, Any] | None = None
    """The backend's own settings that can change numbers (transformers: attention implementation; vLLM: version,
    attention backend, scheduler limits, prefix caching, eager mode, engine seed, batch-invariant mode); None: none
    recorded."""
    add_bos_token: bool | None = None
    """As asked: every request starts with BOS (True), never (False); None: as the tokenizer does."""
    bos_first: bool | str | None = None
    """Whether the token ids sent started with BOS, read from the ids: True, False or ``"mixed"``; None: not
    recorded."""


class PromptConfig(_Strict):
    """Prompt format, its template hash, delimiters, chat template and system prompt. The fields added later are
    left out of the digest while ``None`` (older files keep their digest)."""

    format: str
    """The prompt format: lmeval, lettered or cloze."""
    template_sha256: str
    """sha256 of the prompt template source."""
    target_delimiter: str
    """Text between a question and its answer."""
    fewshot_delimiter: str
    """Text between examples."""
    chat_template: bool
    """Whether prompts were wrapped in the model's chat template."""
    chat_template_sha256: str | None
    """sha256 of the chat template applied; None without one."""
    system_prompt: str | None
    """The system message; None: none."""
    label_style: str | None = later()
    """Lettered prompts: the choice labels (``A.``); None for other formats."""
    choice_separator: str | None = later()
    """Lettered prompts: the text between question and choices; None for other formats."""
    description: str | None = later()
    """The text before the examples when one text served every doc; None when it varies by doc (MMLU's subject)."""
    description_sha256: str | None = later()
    """sha256 of every evaluated doc's description, in doc order; None in files written before it existed."""
    description_override: bool | None = later()
    """True when the description was set by ``--description``; None: the task's own."""
    fewshot_as_multiturn: bool | None = later()
    """True when each few-shot example was a user/assistant turn pair of the chat template; None: not."""


class FewshotConfig(_Strict):
    """n-shot and how examples were chosen (the sampler's seed is ``Seeds.fewshot``)."""

    num_fewshot: int
    """Few-shot examples per prompt."""
    split: str | None
    """The split the examples were drawn from (``samples``: the task's fixed list); None for 0-shot."""
    sampler: str
    """How examples were chosen: the task's sampler (random, first_n), explicit (``--fewshot-ids``), replayed
    (from another run) or none."""
    ids_sha256: str
    """sha256 of every doc's few-shot ids, in order (the ids are in the run's per-doc results)."""
    order_seed: int | None = None
    """Seed of the per-doc permutation applied after selection (:func:`repaudit.tasks.fewshot.permute`); None:
    examples stay in the sampler's order."""


class GenerationConfig(_Strict):
    """generate_until settings; stop sequences include the EOS handling."""

    until: list[str]
    """The stop sequences sent, the EOS appended for ``stop_at_eos`` included."""
    eos_token: str | None
    """The tokenizer's EOS string; None: it has none."""
    stop_at_eos: bool
    """Whether the EOS string was added to the stop sequences (lm-eval does)."""
    max_gen_toks: int
    """Token budget of a generation (tokens)."""
    do_sample: bool
    """Whether generations were sampled (False with temperature 0: greedy)."""
    temperature: float
    """Sampling temperature (0 = greedy)."""
    top_p: float
    """Nucleus sampling mass (1 = off)."""
    top_k: int
    """Top-k sampling (0 = off)."""
    seed: int | None = later()
    """The seed of sampled generations; None for greedy runs."""
    strategy: str | None = later()
    """The hf backend's generation strategy when it is not ``exact`` (``prefix_cache``); None: exact, as every run
    before strategies existed."""


class MetricConfig(_Strict):
    """Metric variants: names, acc_norm's normalisation, answer filters, stderr formula, and the options of
    ``exact_match`` for generations."""

    metrics: list[str]
    """Metric names computed per doc."""
    acc_norm_normalisation: str | None
    """What acc_norm divided by (char_length, token_length, byte_length, pmi); None when acc_norm was not
    computed."""
    filters: list[str]
    """Answer filters applied (generate_until); ``["none"]`` otherwise."""
    aggregation: str
    """How per-doc values aggregate (``mean``)."""
    stderr: str
    """The standard error's formula (``sample_stdev_ddof1/sqrt(n)``)."""
    options: dict[str, Any] = {}
    """generate_until: ``{"exact_match": its options as resolved}`` (ignore_case, ignore_punctuation,
    regexes_to_ignore, …); empty otherwise."""
    score_normalisation: str = "raw"
    """``raw`` or ``leaderboard_normalised`` (Open LLM Leaderboard v2)."""
    random_baseline: float | None = None
    """The random-guess score (fraction 0–1, rounded to 6 places; 0 for generation) the normalisation uses; None
    in files written before it existed."""
    reported: str | None = None
    """The metric a followed protocol reports (``acc_norm``); None without one."""
    answer_match: str | None = later()
    """generate_until: how answers are matched (exact, quasi_exact, prefix, suffix); None otherwise."""


class DataIdentity(_Strict):
    """Task and docs: where they were read from (:mod:`repaudit.tasks.data`), split, hashes, ``limit`` and the docs
    actually evaluated."""

    task: str
    """The task's name."""
    task_version: float
    """The task definition's version."""
    output_type: str
    """multiple_choice, loglikelihood or generate_until."""
    source: str
    """Where the rows came from: data_dir, env ($REPAUDIT_DATA_DIR), package or hub."""
    origin: str
    """The option or variable that chose the source, the package and version, or ``hub``."""
    location: str
    """The file(s) or folder read, relative to the data root, or the hub dataset."""
    split: str
    """The evaluation split."""
    revision: str | None
    """The revision asked of a hub dataset (``--revision``); None for other sources or when none was given."""
    file_sha256: str | None
    """sha256 of the bytes read; None for a hub dataset."""
    content_sha256: str
    """sha256 of the rows: the same for the same docs from any source."""
    n_docs_split: int
    """Docs in the split before any limit."""
    limit: int | None
    """The ``--limit`` asked for (docs); None: all."""
    n_docs: int
    """Docs evaluated."""
    docs_sha256: str
    """sha256 of the processed docs evaluated."""
    doc_ids_sha256: str | None = later()
    """sha256 of the evaluated doc ids when only a subset ran (a round of ``--precision``); None otherwise."""


class FingerprintV2(_Strict):
    """A schema-2 fingerprint (see the module docstring)."""

    schema_version: Literal[2] = 2
    """The fingerprint's schema (2)."""
    data: DataIdentity
    """The task and the docs."""
    model: ModelIdentity
    """The weights and tokenizer."""
    backend: BackendConfig
    """How inference ran."""
    prompt: PromptConfig
    """How prompts were built."""
    fewshot: FewshotConfig
    """The few-shot examples."""
    generation: GenerationConfig | None
    """generate_until settings; None for log-likelihood tasks."""
    metric: MetricConfig
    """The metrics and their aggregation."""
    seeds: Seeds
    """The seeds set before the run."""
    task_config: dict[str, Any] | None = None
    """The recorded lm-eval task configuration a task was built from (``--task-config``); None otherwise."""
    protocol: ProtocolRecord | None = None
    """The published protocol followed (``run --protocol``): name, sha256, overrides; None without one."""
    hardware: Hardware
    """The machine."""
    software: Software
    """Python and library versions."""
    git: GitState
    """The git state of the directory the run was started from."""

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
                extra = info.json_schema_extra  # a dict where later() set it (a callable is pydantic's other form)
                if isinstance(extra, dict) and extra.get("later") and part.get(key) is None:
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
