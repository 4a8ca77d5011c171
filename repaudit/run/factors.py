"""The factor registry: one record per factor that can move a score, and every command is a view of it.

A :class:`Factor` says, once: its name (the one used on the command line, in ``sweep --factor``, in
protocol files, by ``compare`` and in reports), the :class:`~repaudit.run.config.RunConfig` field(s) it
sets, how one value is parsed and which values are allowed, how the value *actually used* is read back
from a fingerprint (what replay and attribution set), where ``compare`` shows it (group and field of
:mod:`repaudit.importers.factors`, filled by each importer from what its files record), whether it
changes inference or only scoring (scoring-only factors reuse every stored batch), how a protocol
states it, the moves ``reproduce`` tries, and — for every command that cannot use it — why.

Views derived here: :func:`sweepable`, :func:`replayable`, :func:`protocol_factors`, :func:`moves`,
:func:`support` (the table ``repaudit factors`` prints and the README carries), and the closed sets and
ranges :class:`~repaudit.run.config.RunConfig` validates itself against.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from repaudit.backends.hf import DTYPES, GENERATION_STRATEGIES, PADDING_SIDES, SCORING_STRATEGIES
from repaudit.tasks.filters import ANSWER_MATCHES
from repaudit.tasks.prompts import FORMATS, LABEL_STYLES

if TYPE_CHECKING:
    from repaudit.run.config import RunConfig
    from repaudit.run.fingerprint import Fingerprint

Stage = Literal["inference", "scoring", "none"]
#: what a factor can take part in (the columns of ``repaudit factors``)
COMMANDS = ("recorded", "compared", "option", "protocol", "conformance", "replay", "sweep", "reproduce")
#: serving settings vLLM's engine takes; the transformers backend takes only the attention backend
ATTENTION_BACKENDS = ("eager", "sdpa", "flash_attention_2", "TORCH_SDPA", "FLASH_ATTN", "FLASHINFER", "XFORMERS",
                      "TRITON_ATTN", "FLEX_ATTENTION", "CPU_ATTN")
KV_CACHE_DTYPES = ("auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16", "float16", "float32")
QUANTIZATIONS = ("awq", "gptq", "fp8", "bitsandbytes", "gguf", "compressed-tensors", "marlin", "awq_marlin",
                 "gptq_marlin")


def flag(s: str) -> bool:
    """``true``/``1``/``on``/``yes`` (any case) → True; anything else False."""
    return s.lower() in ("1", "true", "on", "yes")


def optional_flag(s: str) -> bool | None:
    """``task``/``default`` = the task's or tokenizer's own behaviour (None); true / false."""
    return None if s.lower() in ("task", "default") else flag(s)


def unescape(text: str) -> str:
    r"""A command-line value with ``\n``, ``\t`` and ``\\`` escapes turned into the characters (non-ASCII kept)."""
    if "\\" not in text:
        return text
    return text.encode("latin-1", "backslashreplace").decode("unicode_escape")


def _none_or(parse: Callable[[str], Any], none: str = "none") -> Callable[[str], Any]:
    return lambda s: None if s.lower() == none else parse(s)


@dataclass(frozen=True)
class Factor:
    """One factor (see the module docstring). ``why_not`` gives, per command of :data:`COMMANDS` the
    factor cannot take part in, the one-line reason."""

    name: str
    doc: str
    fields: tuple[str, ...] = ()
    parse: Callable[[str], Any] | None = None
    values: tuple | None = None
    fingerprint: Callable[[Fingerprint], tuple] | None = None
    compare: tuple[str, str] | None = None
    stage: Stage = "inference"
    protocol: Any = None
    protocol_names: tuple[str, ...] = ()
    protocol_values: dict[str, Any] = field(default_factory=dict)
    moves: Callable[[RunConfig, Any], list] | None = None
    #: rank among the moves reproduce tries without --moves (0: not one of them)
    default_move: int = 0
    why_not: dict[str, str] = field(default_factory=dict)
    #: serving settings only: how the engine takes it ("engine": a vLLM engine argument, also in lm-eval's
    #: ``model_args``; "env": a vLLM environment variable; "both": vLLM and transformers) and its value
    #: where a run does not set it
    serving: Literal["engine", "env", "both"] | None = None
    unset: Any = None

    def supports(self, command: str) -> bool:
        """Whether the factor takes part in ``command`` (one of :data:`COMMANDS`)."""
        if command in self.why_not:
            return False
        return {"recorded": self.compare is not None, "compared": self.compare is not None,
                "option": bool(self.fields) and self.parse is not None, "protocol": self.protocol is not None,
                "conformance": self.protocol is not None and (self.compare is not None or self.name in
                                                              ("metric", "aggregation", "formulation")),
                "replay": self.fingerprint is not None and bool(self.fields),
                "sweep": self.parse is not None and bool(self.fields),
                "reproduce": self.moves is not None}[command]


def _gen(attr: str, default: Any) -> Callable[[Fingerprint], tuple]:
    """A generation setting as used; ``default`` where the run generated nothing (it does not apply)."""
    return lambda fp: (default if fp.generation is None else getattr(fp.generation, attr),)


def _until(fp: Fingerprint) -> tuple:
    g = fp.generation
    if g is None:
        return None, True
    eos = g.eos_token in g.until
    return [u for u in g.until if not (eos and u == g.eos_token)], eos


def _answer_option(key: str) -> Callable[[Fingerprint], tuple]:
    def read(fp: Fingerprint) -> tuple:
        o = fp.metric.options.get("exact_match") or {}
        v = o.get(key)
        return (list(v) if key == "regexes_to_ignore" and v is not None else v,)
    return read


def _shots(cfg: RunConfig, task) -> int:
    return cfg.num_fewshot if cfg.num_fewshot is not None else task.default_num_fewshot


_NOT_HERE = "a setting of the machine, not of the run: recorded and compared, never set by repaudit"
_SERVING = "vLLM engine setting"


def _requested(fp: Fingerprint) -> dict[str, Any]:
    return (fp.backend.engine or {}).get("requested") or {}


def _serving(name: str, doc: str, parse, values=None, unset: Any = None, compare: tuple | None = None,
             how: Literal["engine", "env", "both"] = "engine") -> Factor:
    """A vLLM engine setting. ``compare`` shows the value the engine used (its facts in the fingerprint);
    a replay asks for what the run asked for (``engine.requested``; ``unset`` where it asked for nothing, so
    that the engine picks its default again and a transformers/vLLM pair differs in ``backend`` alone). A
    value this machine cannot run (two GPUs) stops the run with one line."""
    why = {"protocol": "published protocols do not state serving settings",
           "reproduce": "a serving setting moves numerics, not the protocol a number was reported under"}
    return Factor(name, f"{doc} ({_SERVING})",
                  (name,), parse, values, lambda fp, n=name, u=unset: (_requested(fp).get(n, u),),
                  compare or ("serving", name), why_not=why, serving=how, unset=unset)


def _stated(name: str, doc: str, path: tuple[str, str] | None, typ: Any, why: str, stage: Stage) -> Factor:
    """A factor protocols state and runs record (or not), which repaudit does not set."""
    never = {"option": why, "replay": why, "sweep": why, "reproduce": why}
    if path is None:
        never.update(recorded=why, compared=why)
    return Factor(name, doc, (), None, None, None, path, stage, protocol=typ, why_not=never)


FACTORS: tuple[Factor, ...] = (
    # ---------------------------------------------------------------- inference numerics
    Factor("backend", "inference backend: hf (transformers) or vllm", ("backend",), str, ("hf", "vllm"),
           lambda fp: (fp.backend.name,), ("backend", "name"), protocol=str,
           why_not={"reproduce": "the vllm backend needs its own install: a search tries protocol settings"}),
    Factor("dtype", "weights and activations dtype", ("dtype",), str, DTYPES, lambda fp: (fp.backend.dtype,),
           ("dtype", "dtype"), protocol=str,
           moves=lambda c, t: [d for d in ("bfloat16", "float16", "float32") if d != c.dtype]),
    Factor("batch_size", "rows per forward pass (vllm: prompts per engine call)", ("batch_size",), int, None,
           lambda fp: (fp.backend.batch_size,), ("batch_size", "batch_size"), protocol=int | Literal["auto"],
           moves=lambda c, t: [b for b in (1, 32) if b != c.batch_size]),
    Factor("padding_side", "side the batch is padded on: right (lm-eval) or left", ("padding_side",), str,
           PADDING_SIDES, lambda fp: (fp.backend.padding_side,), ("padding", "padding_side"), protocol=str,
           moves=lambda c, t: ["left" if c.padding_side == "right" else "right"]),
    Factor("add_bos_token", "start every request with BOS (true), never (false), or as the tokenizer does "
                            "(default)", ("add_bos_token",), optional_flag, None,
           # the resolved value: a run that got BOS from its tokenizer's default replays as True
           lambda fp: (fp.backend.bos_first if isinstance(fp.backend.bos_first, bool) else fp.backend.add_bos_token,),
           ("bos", "bos_first"), protocol=bool, moves=lambda c, t: [v for v in (True, False) if v != c.add_bos_token],
           default_move=6),
    Factor("scoring_strategy", "full_sequence (lm-eval's numerical path) or shared_prefix (each context once)",
           ("scoring_strategy",), str, SCORING_STRATEGIES, lambda fp: (fp.backend.scoring_strategy,),
           ("backend", "scoring_strategy"), protocol=str,
           why_not={"reproduce": "a numerical path, not a protocol choice: attribute and sweep measure it"}),
    Factor("generation_strategy", "exact (lm-eval's model.generate on padded batches) or prefix_cache (the shared "
                                  "prefix once, rows replaced as they finish; greedy, hf backend)",
           ("generation_strategy",), str, GENERATION_STRATEGIES,
           lambda fp: ("exact" if fp.generation is None or fp.generation.strategy is None else fp.generation.strategy,),
           ("backend", "generation_strategy"), protocol=str,
           why_not={"reproduce": "a numerical path, not a protocol choice: attribute and sweep measure it"}),
    Factor("device", "torch device the model ran on", (), None, None, None, ("backend", "device"),
           why_not={"option": "set with run --device (where it can run, not what it computes)",
                    "replay": "a replay runs where it is: the device is this machine's",
                    "sweep": "a replay runs where it is: the device is this machine's",
                    "protocol": _NOT_HERE, "reproduce": _NOT_HERE}),
    # ---------------------------------------------------------------- serving (vLLM engine)
    _serving("tensor_parallel_size", "GPUs one model is split across", int, unset=1),
    _serving("pipeline_parallel_size", "pipeline stages across GPUs", int, unset=1),
    _serving("attention_backend", "attention kernel (vLLM backend name; transformers attn_implementation)",
             _none_or(str, "auto"), ATTENTION_BACKENDS, how="both"),
    _serving("enable_prefix_caching", "reuse the KV cache of shared prefixes", optional_flag),
    _serving("kv_cache_dtype", "dtype the KV cache is stored in", str, KV_CACHE_DTYPES, unset="auto"),
    _serving("batch_invariant", "vLLM's batch-invariant kernels (results independent of batch composition)", flag,
             unset=False, how="env"),
    _serving("max_num_seqs", "sequences scheduled in one engine step (vLLM's batch size)", int),
    _serving("quantization", "weight quantisation method the engine applies", _none_or(str), QUANTIZATIONS,
             compare=("quantisation", "method")),
    # ---------------------------------------------------------------- prompt
    Factor("prompt_format", "lmeval (lm-eval's templates), lettered (choices with letters) or cloze; a task built "
                            "from a recorded lm-eval configuration replays with its own templates",
           ("prompt_format", "task_config"), str, FORMATS,
           lambda fp: (fp.prompt.format, fp.task_config), ("prompt_format", "format"), protocol=str,
           moves=lambda c, t: [f for f in t.formats if f != c.prompt_format], default_move=2),
    Factor("label_style", "lettered prompts: A. (A) A) A: or none", ("label_style",), str, LABEL_STYLES,
           lambda fp: (fp.prompt.label_style or "A.",), ("prompt_format", "label_style"), protocol=str,
           why_not={"reproduce": "only lettered prompts use it: try prompt_format first"}),
    Factor("choice_separator", "lettered prompts: text between question and choices", ("choice_separator",),
           unescape, None, lambda fp: ("\n" if fp.prompt.choice_separator is None else fp.prompt.choice_separator,),
           ("prompt_format", "choice_separator"), protocol=str,
           why_not={"reproduce": "only lettered prompts use it: try prompt_format first"}),
    Factor("description", "text before the examples (task = the task's own, none = no description)",
           ("description",), lambda s: None if s == "task" else "" if s == "none" else unescape(s), None,
           lambda fp: (fp.prompt.description if fp.prompt.description_override else None,),
           ("prompt_format", "description"), protocol=str | None,
           why_not={"reproduce": "free text: no finite set of moves"}),
    Factor("chat_template", "wrap prompts in the model's chat template", ("chat_template",), flag, None,
           lambda fp: (fp.prompt.chat_template,), ("chat_template", "applied"), protocol=bool,
           moves=lambda c, t: [not c.chat_template], default_move=3),
    Factor("system_prompt", "system message (with or without a chat template)", ("system_prompt",),
           _none_or(unescape), None, lambda fp: (fp.prompt.system_prompt,), ("chat_template", "system_prompt"),
           protocol=str | None, why_not={"reproduce": "free text: no finite set of moves"}),
    Factor("fewshot_as_multiturn", "with the chat template, each example its own user/assistant turns",
           ("fewshot_as_multiturn",), flag, None, lambda fp: (bool(fp.prompt.fewshot_as_multiturn),),
           ("chat_template", "fewshot_as_multiturn"), protocol=bool,
           why_not={"reproduce": "needs a chat template: try chat_template first"}),
    # ---------------------------------------------------------------- few-shot
    Factor("num_fewshot", "few-shot examples per prompt (n-shot)", ("num_fewshot",), int, None,
           lambda fp: (fp.fewshot.num_fewshot,), ("fewshot", "num_fewshot"), protocol=int,
           moves=lambda c, t: [n for n in (0, 5, 10, 25) if n != _shots(c, t)], default_move=1),
    Factor("fewshot_split", "split few-shot examples are drawn from", ("fewshot_split",), str, None,
           lambda fp: (fp.fewshot.split,), ("fewshot", "split"), protocol=str,
           why_not={"replay": "the split is recorded as used and comes with the task definition",
                    "reproduce": "a task's splits are few: pick one with run --fewshot-split"}),
    Factor("fewshot_seed", "seed of the few-shot sampler", ("fewshot_seed",), int, None,
           lambda fp: (fp.seeds.fewshot,), ("seed", "fewshot"), protocol=int,
           moves=lambda c, t: [c.fewshot_seed + 1], default_move=4),
    Factor("fewshot_order", "seed of a per-doc permutation of the selected examples (none = sampler order)",
           ("fewshot_order_seed",), _none_or(int), None, lambda fp: (fp.fewshot.order_seed,),
           ("fewshot", "order_seed"), moves=lambda c, t: [1] if c.fewshot_order_seed is None else [None],
           default_move=5, why_not={"protocol": "no protocol fixes an order beyond its sampler's"}),
    # ---------------------------------------------------------------- generation and sampling
    Factor("until", "stop sequences, '|'-separated (none = only EOS); the tokenizer's EOS is added",
           ("until", "stop_at_eos"), lambda s: [] if s.lower() == "none" else [unescape(x) for x in s.split("|")],
           None, _until, ("stop", "until"), protocol=list[str],
           why_not={"reproduce": "free text: no finite set of moves"}),
    Factor("max_gen_toks", "token budget of a generation", ("max_gen_toks",), int, None,
           _gen("max_gen_toks", None), ("max_tokens", "max_gen_toks"), protocol=int,
           moves=lambda c, t: [b for b in (256, 1024) if b != (c.max_gen_toks or t.max_gen_toks)]
           if t.output_type.value == "generate_until" else []),
    Factor("do_sample", "sample instead of greedy decoding (with temperature 0 it stays greedy)", ("do_sample",),
           flag, None, _gen("do_sample", False), ("sampling", "do_sample"), protocol=bool,
           moves=lambda c, t: [not c.do_sample] if t.output_type.value == "generate_until" else []),
    Factor("temperature", "sampling temperature (0 = greedy)", ("temperature",), float, None,
           _gen("temperature", 0.0), ("sampling", "temperature"), protocol=float,
           moves=lambda c, t: [x for x in (0.0, 0.7, 1.0) if x != c.temperature]
           if t.output_type.value == "generate_until" else []),
    Factor("top_p", "nucleus sampling mass", ("top_p",), float, None, _gen("top_p", 1.0), ("sampling", "top_p"),
           protocol=float, moves=lambda c, t: [x for x in (0.9, 1.0) if x != c.top_p]
           if t.output_type.value == "generate_until" else []),
    Factor("top_k", "top-k sampling (0 = off)", ("top_k",), int, None, _gen("top_k", 0), ("sampling", "top_k"),
           protocol=int, moves=lambda c, t: [x for x in (0, 50) if x != c.top_k]
           if t.output_type.value == "generate_until" else []),
    Factor("sampling_seed", "seed of sampled generations (default: the torch seed)", ("sampling_seed",),
           _none_or(int, "torch"), None, lambda fp: (fp.generation.seed if fp.generation else None,),
           ("sampling", "seed"), protocol=int,
           moves=lambda c, t: [(c.sampling_seed if c.sampling_seed is not None else c.torch_seed) + 1]
           if t.output_type.value == "generate_until" and c.do_sample else []),
    # ---------------------------------------------------------------- seeds
    Factor("seed", "Python random seed", ("seed",), int, None, lambda fp: (fp.seeds.python,), ("seed", "python"),
           protocol=int, why_not={"reproduce": "moves nothing once the few-shot and sampling seeds are fixed"}),
    Factor("numpy_seed", "numpy seed", ("numpy_seed",), int, None, lambda fp: (fp.seeds.numpy,), ("seed", "numpy"),
           protocol=int, why_not={"reproduce": "moves nothing once the few-shot and sampling seeds are fixed"}),
    Factor("torch_seed", "torch seed (and the sampling seed unless sampling_seed is set)", ("torch_seed",), int,
           None, lambda fp: (fp.seeds.torch,), ("seed", "torch"), protocol=int,
           why_not={"reproduce": "sampling_seed is the move for sampled generations"}),
    # ---------------------------------------------------------------- scoring
    Factor("acc_norm", "what acc_norm divides by: char_length (lm-eval), token_length, byte_length, or pmi",
           ("acc_norm",), str, ("char_length", "token_length", "byte_length", "pmi"),
           lambda fp: (fp.metric.acc_norm_normalisation or "char_length",), ("metric_variant", "acc_norm"),
           stage="scoring", protocol=str, protocol_values={"bytes": "byte_length", "tokens": "token_length"},
           why_not={"reproduce": "read from the same inference: every variant is scored at once"}),
    Factor("answer_match", "generate_until: exact (lm-eval), quasi_exact (HELM), prefix or suffix (lighteval)",
           ("answer_match",), str, ANSWER_MATCHES,
           lambda fp: (fp.metric.answer_match or "exact",), ("metric_variant", "answer_match"), stage="scoring",
           protocol=str, why_not={"reproduce": "a matching rule is a metric variant: compare reads it"}),
    Factor("ignore_case", "exact_match option (task = the task's own)", ("ignore_case",), optional_flag, None,
           _answer_option("ignore_case"), ("metric_variant", "exact_match_options"), stage="scoring",
           why_not={"protocol": "protocols state the metric, not lm-eval's option", "reproduce": "a metric option"}),
    Factor("ignore_punctuation", "exact_match option (task = the task's own)", ("ignore_punctuation",),
           optional_flag, None, _answer_option("ignore_punctuation"), ("metric_variant", "exact_match_options"),
           stage="scoring", why_not={"protocol": "protocols state the metric, not lm-eval's option",
                                     "reproduce": "a metric option"}),
    Factor("regexes_to_ignore", "exact_match option: patterns removed before matching, '|'-separated",
           ("regexes_to_ignore",), lambda s: None if s == "task" else [] if s == "none" else s.split("|"), None,
           _answer_option("regexes_to_ignore"), ("metric_variant", "exact_match_options"), stage="scoring",
           why_not={"protocol": "protocols state the metric, not lm-eval's option", "reproduce": "a metric option"}),
    Factor("score_normalisation", "raw, or leaderboard_normalised (Open LLM Leaderboard v2)",
           ("score_normalisation",), str, ("raw", "leaderboard_normalised"),
           lambda fp: (fp.metric.score_normalisation,),
           ("metric_variant", "score"), stage="scoring", protocol=Literal["raw", "leaderboard_normalised"],
           protocol_names=("score",),
           why_not={"reproduce": "both forms are read from the same inference"}),
    # ---------------------------------------------------------------- data
    Factor("split", "evaluation split", ("split",), str, None, lambda fp: (fp.data.split,), ("data", "split"),
           protocol=str, why_not={"sweep": "other docs: compare reports them as not comparable",
                                  "replay": "other docs: attribution needs the same docs",
                                  "reproduce": "other docs cannot reproduce a number on these"}),
    Factor("limit", "evaluate only the first N docs", ("limit",), int, None, lambda fp: (fp.data.limit,),
           ("data", "limit"), protocol=int,
           why_not={"sweep": "other docs: compare reports them as not comparable",
                    "replay": "other docs: attribution needs the same docs",
                    "reproduce": "other docs cannot reproduce a number on these"}),
    # ---------------------------------------------------------------- stated by protocols, read, not set
    *(_stated(*row) for row in (
        ("metric", "the metric a protocol reports", None, str, "a scoring choice read from the run's metrics",
         "scoring"),
        ("aggregation", "micro or subject_macro (MMLU)", None, Literal["micro", "subject_macro"],
         "both aggregates are reported by every run", "scoring"),
        ("random_baseline", "chance score used to normalise", ("metric_variant", "random_baseline"), float,
         "computed from the docs' choices", "scoring"),
        ("fewshot_selection", "how examples are chosen (random, first_n, fixed samples)", ("fewshot", "sampler"),
         str, "the task's sampler: set by the task definition", "inference"),
        ("formulation", "cloze vs multiple-choice formulation a protocol picks per model", None, str,
         "a protocol rule, not a single run's setting", "none"),
        ("max_length", "context window in tokens", ("max_tokens", "max_length"), int,
         "the model's own context window", "inference"))),
)

BY_NAME: dict[str, Factor] = {f.name: f for f in FACTORS}
#: RunConfig fields that are not factors: what is evaluated, where things are read and written
NON_FACTOR_FIELDS = ("task", "model", "revision", "trust_remote_code", "data_dir", "doc_ids",
                     "fewshot_ids", "fewshot_from", "fewshot_by_doc", "device", "cache_dir", "use_batch_cache",
                     "protocol")


def get(name: str) -> Factor:
    """The factor called ``name`` (or an older protocol name of it).

    Raises:
        KeyError: no such factor.
    """
    if name in BY_NAME:
        return BY_NAME[name]
    for f in FACTORS:
        if name in f.protocol_names:
            return f
    raise KeyError(name)


def sweepable() -> dict[str, Factor]:
    """Factors ``sweep --factor`` takes."""
    return {f.name: f for f in FACTORS if f.supports("sweep")}


def replayable() -> dict[str, Factor]:
    """Factors ``attribute`` re-executes (their RunConfig fields, read back from a fingerprint)."""
    return {f.name: f for f in FACTORS if f.supports("replay")}


def protocol_factors() -> dict[str, Factor]:
    """Factors a protocol file may state, under their names and older names."""
    out = {f.name: f for f in FACTORS if f.protocol is not None}
    out.update({n: f for f in out.copy().values() for n in f.protocol_names})
    return out


def moves(default_only: bool = False) -> tuple[str, ...]:
    """Factors ``reproduce`` can move, the default ones first in their search order (``default_only``: only
    those, the moves it tries without ``--moves``)."""
    can = [f for f in FACTORS if f.supports("reproduce")]
    first = sorted((f for f in can if f.default_move), key=lambda f: f.default_move)
    return tuple(f.name for f in first + ([] if default_only else [f for f in can if not f.default_move]))


def reason(f: Factor, command: str) -> str | None:
    """Why ``f`` does not take part in ``command`` (``None`` when it does): its own word, or the reason of the
    command it depends on (conformance checks what a protocol states; a sweep sets an option)."""
    if f.supports(command):
        return None
    if command in f.why_not:
        return f.why_not[command]
    depends = {"conformance": "protocol", "sweep": "option", "compared": "recorded", "replay": "option"}
    if command in depends and not f.supports(depends[command]):
        return reason(f, depends[command])
    return None


def support() -> list[dict[str, Any]]:
    """Per factor: its doc, stage, compare path and, per command, ``True`` or the reason it is not supported."""
    return [{"factor": f.name, "doc": f.doc, "stage": f.stage,
             "compare": ".".join(f.compare) if f.compare else None,
             **{c: True if f.supports(c) else reason(f, c) for c in COMMANDS}}
            for f in FACTORS]


def by_compare() -> dict[tuple[str, str], str]:
    """Compare path (group, field) -> the factor's name, for paths that belong to one factor only."""
    paths: dict[tuple[str, str], list[str]] = {}
    for f in FACTORS:
        if f.compare is not None:
            paths.setdefault(f.compare, []).append(f.name)
    return {p: names[0] for p, names in paths.items() if len(names) == 1}


def serving_unset(vllm_only: bool = False, group: str | None = None) -> dict[str, Any]:
    """Serving settings (RunConfig field → its value where a run does not set it), in registry order;
    ``vllm_only`` leaves out those transformers also takes, ``group`` keeps those compared in that group."""
    return {f.name: f.unset for f in FACTORS if f.serving and not (vllm_only and f.serving == "both")
            and (group is None or f.compare[0] == group)}


def serving_model_args() -> tuple[str, ...]:
    """Serving settings lm-eval and lighteval pass through ``model_args`` under their own name."""
    return tuple(f.name for f in FACTORS if f.serving in ("engine", "both") and f.compare[0] == "serving")
