"""The Fingerprint (schema 3): every setting a run used, in the settings records of :mod:`repaudit.settings`, and
the facts that identify what ran (hashes of the data, weights, tokenizer and templates; the machine; versions).

``settings`` holds the same record classes a :class:`~repaudit.run.config.RunConfig` composes, *resolved*: the
split, n-shot, few-shot pool, token budget and stop sequences the run used, the backend, device and dtype the
weights were loaded in — never "None means default" where a value was used (``None`` stays where a setting does
not apply: the sampling seed of a greedy run, the description override of a run that kept the task's own). The
replay is these records; ``compare`` reads them through the factor registry. Schema-2 files are read by
:mod:`repaudit.run.fingerprint_v2` and upgraded, keeping the digest they were written with.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr

from repaudit.backends.server import ServerFacts
from repaudit.backends.weights_format import StoredWeights, describe, quantisation
from repaudit.hashing import sha256_json
from repaudit.run.environment import GitState, Hardware, Software
from repaudit.run.protocol_record import ProtocolRecord
from repaudit.settings import (
    STAGES,
    DataSettings,
    FewshotSettings,
    GenerationSettings,
    PromptSettings,
    ScoringSettings,
    SeedSettings,
    ServingSettings,
    added_later,
)

FINGERPRINT_SCHEMA_VERSION: Final = 3


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=(), use_attribute_docstrings=True)


class RunSettings(_Record):
    """Every settings record of a run, as resolved (see the module docstring)."""

    data: DataSettings
    """Which docs: the split used and the limit."""
    seeds: SeedSettings
    """The seeds set before the run."""
    prompt: PromptSettings
    """The prompt format, labels, separators, description override, chat template and system prompt."""
    fewshot: FewshotSettings
    """n-shot used, the split its examples came from, the order seed."""
    serving: ServingSettings
    """The backend, device and dtype the model ran in, batching, vLLM's engine options as asked."""
    generation: GenerationSettings | None
    """generate_until settings as used (stop sequences without the EOS added for them); None: no generation."""
    scoring: ScoringSettings
    """acc_norm's normalisation, answer matching and its options, score normalisation."""


class DataIdentity(_Record):
    """The task and the docs: where they were read from, and hashes that tell the same docs from any source."""

    task: str
    """The task's name."""
    task_version: float
    """The task definition's version."""
    output_type: str
    """multiple_choice, loglikelihood or generate_until."""
    source: str
    """Where the rows came from: data_dir, env ($REPAUDIT_DATA_DIR), package or hub."""
    origin: str
    """The option or variable that chose the source."""
    location: str
    """The file or dataset read."""
    revision: str | None
    """The hub revision of a hub dataset, else None."""
    file_sha256: str | None
    """sha256 of the bytes read (None for a hub dataset read by the datasets library)."""
    content_sha256: str
    """sha256 of the rows: the same for the same docs from any source."""
    n_docs_split: int
    """Docs in the split before any limit."""
    n_docs: int
    """Docs evaluated."""
    docs_sha256: str
    """sha256 of the processed docs evaluated."""
    doc_ids_sha256: str | None = None
    """sha256 of the evaluated doc ids when only a subset ran (a round of --precision), else None."""


class WeightsFormat(_Record):
    """The weights as stored and as run: a GGUF's quantisation de-quantised to a dtype, a checkpoint's dtype loaded
    as another."""

    stored: StoredWeights
    """The files' format, file type and tensor types (:mod:`repaudit.backends.weights_format`)."""
    dtype: str
    """The dtype the weights were run in (de-quantised or cast to on load)."""
    summary: str
    """One line: ``Q4_1 GGUF de-quantised to float32``, ``safetensors bfloat16 loaded as float32``."""
    quantisation: str | None = None
    """The weights' quantisation as stored (:func:`repaudit.backends.weights_format.quantisation`): ``Q4_1``, or
    ``none`` where every tensor is a float type. Apart from ``dtype``: de-quantised weights are computed in ``dtype``
    but carry the quantisation's rounding. Not a serving setting (``serving.quantization`` is a quantisation the
    engine applies). None in files written before it was recorded (left out of the digest while None)."""


def weights_format(stored: StoredWeights | None, dtype: str) -> WeightsFormat | None:
    """The weights as stored and as run in ``dtype``, with their stored quantisation; None where the stored format
    is not known."""
    return None if stored is None else WeightsFormat(stored=stored, dtype=dtype, summary=describe(stored, dtype),
                                                      quantisation=quantisation(stored))


class ModelIdentity(_Record):
    """Which weights and tokenizer: hashes, not just names."""

    name: str
    """The model as named on the command line (a local path, a hub id, or the default's name)."""
    source: str
    """gguf-package (the default model), local, hub, or endpoint (a served model)."""
    revision: str | None
    """The revision asked for with --revision (a hub model's commit, branch or tag; also recorded when given with
    a local directory), else None."""
    weights_sha256: str | None
    """sha256 over the weight files loaded; None: not told (a served model's weight files are not served)."""
    gguf_sha256: str | None
    """sha256 of the GGUF the weights were de-quantised from, else None."""
    tokenizer_sha256: str | None
    """sha256 of the serialised tokenizer (vocabulary, merges, normaliser, …) and its bos, eos and pad tokens; None:
    not told (a served model tokenised by its server)."""
    special_tokens: dict[str, str | None]
    """The tokenizer's bos, eos and pad tokens."""
    architecture: str | None
    """The model class transformers loaded; None: not told (a served model)."""
    num_parameters: int | None
    """Parameters of the loaded model; None: not told (a served model)."""
    trust_remote_code: bool
    """Whether the repository's own code was allowed."""
    weights_format: WeightsFormat | None = None
    """The weights as stored and as run; None in files written before repaudit recorded it (added after schema 3
    shipped: left out of the digest while None, so those files keep theirs) and where the headers cannot be read."""


class BackendFacts(_Record):
    """What the backend did, beyond the serving settings asked for."""

    batch_sizes_used: dict[str, int]
    """Batch size → number of batches of that size actually run."""
    max_length: int | None
    """The context window requests were cut to (tokens); None: not told (a served model whose server does not say:
    requests were sent uncut)."""
    add_special_tokens: bool
    """Whether the tokenizer adds special tokens (e.g. BOS) by default when it encodes text."""
    engine: dict[str, Any] | None = None
    """The engine's own facts that can change numbers (transformers: attention implementation; vLLM: version,
    attention backend, scheduler limits, prefix caching, engine seed, batch-invariant mode, what was requested) and,
    under ``determinism``, the determinism switches in force (:class:`repaudit.backends.determinism.DeterminismModes`:
    torch's deterministic algorithms, CUBLAS_WORKSPACE_CONFIG, batch_invariant_ops and its mode, VLLM_TP_INVARIANT;
    absent from files written before repaudit recorded them)."""
    bos_first: bool | str | None = None
    """Whether the ids sent started with BOS, from the ids themselves: True, False or "mixed"."""


class PromptFacts(_Record):
    """What the prompt settings produced: template and delimiter facts, the description used."""

    template_sha256: str
    """sha256 of the prompt template source."""
    target_delimiter: str
    """Text between a question and its answer."""
    fewshot_delimiter: str
    """Text between examples."""
    chat_template_sha256: str | None
    """sha256 of the chat template applied, else None."""
    description: str | None = None
    """The description the prompts used when one text served every doc (None when it varies by doc, e.g. MMLU's
    subject)."""
    description_sha256: str | None = None
    """sha256 of every evaluated doc's description, in doc order."""


class FewshotFacts(_Record):
    """How the few-shot examples were chosen (the settings say how many and from where)."""

    sampler: str
    """How the few-shot examples were chosen: the task's sampler (random, first_n), explicit (--fewshot-ids),
    replayed (another run's ids) or none (0-shot)."""
    ids_sha256: str
    """sha256 of every doc's few-shot ids, in order (the ids are in the run's per-doc results)."""
    pool_fallback: str | None = None
    """Why the examples were drawn from the evaluated split itself — the task's few-shot split is not in the data
    (``arc_easy's few-shot split 'train' is not in …``), or the task names none — so that a doc's neighbours, or the
    doc itself where the task's rule does not exclude it, are among its examples (``diagnostics.fewshot_leaked``
    counts the latter). None: drawn from the split the task names, or 0-shot, or a file written before it was
    recorded (left out of the digest while None)."""


class GenerationFacts(_Record):
    """What the generation settings became for this model."""

    eos_token: str | None
    """The tokenizer's EOS string (added to the stop sequences when generation.stop_at_eos)."""
    stops: list[str]
    """The stop sequences generations were cut at, EOS included."""


class MetricFacts(_Record):
    """The metrics computed and how they aggregate (the scoring settings say which variant)."""

    metrics: list[str]
    """Metric names computed per doc."""
    filters: list[str]
    """Answer filters applied (generate_until), ["none"] otherwise."""
    aggregation: str
    """How per-doc values aggregate (mean)."""
    stderr: str
    """The standard error's formula."""
    options: dict[str, Any] = {}
    """The exact_match options as resolved (the task's, overridden by the scoring settings)."""
    random_baseline: float | None = None
    """The chance score used to normalise (leaderboard normalisation), else None."""
    reported: str | None = None
    """The metric a followed protocol reports, else None."""


class Fingerprint(_Record):
    """Everything that identifies a run's configuration (see the module docstring)."""

    schema_version: Literal[3] = FINGERPRINT_SCHEMA_VERSION
    """The fingerprint's schema (3; schema-2 files are upgraded when read)."""
    settings: RunSettings
    """Every setting as the run used it."""
    data: DataIdentity
    """The task and the docs."""
    model: ModelIdentity
    """The weights and tokenizer."""
    backend: BackendFacts
    """What the backend did."""
    prompt: PromptFacts
    """What the prompt settings produced."""
    fewshot: FewshotFacts
    """How the examples were chosen."""
    generation: GenerationFacts | None
    """Stop facts of generate_until (None: no generation)."""
    metric: MetricFacts
    """The metrics and their aggregation."""
    task_config: dict[str, Any] | None = None
    """The recorded lm-eval task configuration a task was built from (--task-config), else None."""
    protocol: ProtocolRecord | None = None
    """The published protocol followed (run --protocol): name, sha256, overrides."""
    server: ServerFacts | None = None
    """A served model's endpoint (--backend openai): what it said about itself, what was sent, what it could not
    tell (:mod:`repaudit.backends.server`); None for an in-process backend. Added after schema 3 shipped: left out of
    the digest while None."""
    hardware: Hardware
    """The machine."""
    software: Software
    """Python and library versions."""
    git: GitState
    """The repaudit checkout's commit, if any."""
    _legacy_digest: str | None = PrivateAttr(None)

    def canonical(self) -> dict:
        """The JSON-ready dict the digest is computed from: settings added after schema 3 are left out while at
        their default (so that a record keeps its digest when a later version adds a factor), as are an unset
        protocol and weights format (``model.weights_format``, a fact added after schema 3)."""
        d = self.model_dump(mode="json")
        if d.get("protocol") is None:
            d.pop("protocol", None)
        if d.get("server") is None:  # a fact added after schema 3 shipped
            d.pop("server", None)
        if d["model"].get("weights_format") is None:  # a fact added after schema 3 shipped
            d["model"].pop("weights_format", None)
        elif d["model"]["weights_format"].get("quantisation") is None:  # added later still: files keep their digest
            d["model"]["weights_format"].pop("quantisation", None)
        if isinstance(d.get("fewshot"), dict) and d["fewshot"].get("pool_fallback") is None:  # added later still
            d["fewshot"].pop("pool_fallback", None)
        for stage, part in d["settings"].items():
            if not isinstance(part, dict):
                continue
            for name, info in STAGES[stage].model_fields.items():
                if added_later(f"{stage}.{name}") and part.get(name) == info.get_default():
                    part.pop(name, None)
        return d

    def digest(self) -> str:
        """sha256 of the canonical JSON (a schema-2 file upgraded on reading keeps the digest it was written
        with)."""
        return self._legacy_digest or sha256_json(self.canonical())

    def with_legacy_digest(self, digest: str) -> Fingerprint:
        """This fingerprint, digesting as the schema-2 record it was upgraded from."""
        self._legacy_digest = digest
        return self
