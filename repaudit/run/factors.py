"""The factor registry: one record per factor that can move a score, and every command is a view of it.

A :class:`Factor` says, once: its name (the one used on the command line, in ``sweep --factor``, in
protocol files, by ``compare`` and in reports), the :class:`~repaudit.run.config.RunConfig` field(s) it
sets, how one value is parsed and which values are allowed, how the value *actually used* is read back
from a fingerprint (what replay and attribution set), its path in the vocabulary every reader fills and
``compare`` diffs (:mod:`repaudit.vocabulary`: the settings field, or the fact a protocol states), whether it
changes inference or only scoring (scoring-only factors reuse every stored batch), how a protocol
states it, the moves ``reproduce`` tries, and — for every command that cannot use it — why.

Views derived here: :func:`sweepable`, :func:`replayable`, :func:`protocol_factors`, :func:`moves`,
:func:`support` (the table ``repaudit factors`` prints and the README carries), and the closed sets and
ranges :class:`~repaudit.run.config.RunConfig` validates itself against.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from repaudit.settings import ScoreNormalisation, choices, field_info, get_path, stage_of

if TYPE_CHECKING:
    from repaudit.run.config import RunConfig
    from repaudit.run.fingerprint import Fingerprint

Stage = Literal["inference", "scoring", "none"]
#: what a factor can take part in (the columns of ``repaudit factors``)
COMMANDS = ("recorded", "compared", "option", "protocol", "conformance", "replay", "sweep", "reproduce")


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


def _int_or(word: str) -> Callable[[str], Any]:
    """A number, or ``word`` (``--batch-size auto``)."""
    def parse(s: str) -> Any:
        if s.strip().lower() == word:
            return word
        try:
            return int(s)
        except ValueError:
            raise ValueError(f"expected a whole number or '{word}'") from None

    return parse


@dataclass(frozen=True)
class Factor:
    """One factor (see the module docstring). ``why_not`` gives, per command of :data:`COMMANDS` the
    factor cannot take part in, the one-line reason. A factor that is a setting names its ``path`` in the
    settings records (``generation.temperature``); its type, allowed values, range and meaning come from that
    field (:func:`setting` builds such a row)."""

    name: str
    doc: str
    fields: tuple[str, ...] = ()
    parse: Callable[[str], Any] | None = None
    values: tuple | None = None
    fingerprint: Callable[[Fingerprint], tuple] | None = None
    stage: Stage = "inference"
    protocol: Any = None
    protocol_names: tuple[str, ...] = ()
    protocol_values: dict[str, Any] = field(default_factory=dict)
    moves: Callable[[RunConfig, Any], list] | None = None
    #: rank among the moves reproduce tries without --moves (0: not one of them)
    default_move: int = 0
    why_not: dict[str, str] = field(default_factory=dict)
    #: serving settings only: how the engine takes it ("engine": a vLLM engine argument, also in lm-eval's
    #: ``model_args``; "env": a vLLM environment variable; "both": vLLM and transformers); where a run does not set
    #: it, the field's default (what a replay asks for, so that the engine picks its own again)
    serving: Literal["engine", "env", "both"] | None = None
    #: where the vocabulary holds it (:mod:`repaudit.vocabulary`): the settings field the factor is
    #: (``stage.field``), or the fact a protocol states (``fewshot.sampler``); None: no run records it
    path: str | None = None

    def supports(self, command: str) -> bool:
        """Whether the factor takes part in ``command`` (one of :data:`COMMANDS`)."""
        if command in self.why_not:
            return False
        return {"recorded": self.path is not None, "compared": self.path is not None,
                "option": bool(self.fields) and self.parse is not None, "protocol": self.protocol is not None,
                "conformance": self.protocol is not None and (self.path is not None or self.name in
                                                              ("metric", "aggregation", "formulation")),
                "replay": self.fingerprint is not None and bool(self.fields),
                "sweep": self.parse is not None and bool(self.fields),
                "reproduce": self.moves is not None}[command]


def _parser(path: str) -> Callable[[str], Any]:
    """How one command-line value of a settings field is read: by the field's type (``none`` = None where the field
    takes None; true/false for booleans, ``default`` = None for a tri-state one)."""
    ann = field_info(path).annotation
    args = set(typing.get_args(ann)) if isinstance(ann, types.UnionType) else {ann}
    optional = type(None) in args
    base = next(iter(args - {type(None)}), ann)
    if base is bool:
        return optional_flag if optional else flag
    if base is int:
        return _none_or(int) if optional else int
    if base is float:
        return _none_or(float) if optional else float
    return _none_or(str) if optional else str


def _reader(path: str) -> Callable[[Fingerprint], tuple]:
    """The value a run used, from its fingerprint's settings; the field's default where the record does not apply
    (no generation settings in a log-likelihood run)."""
    def read(fp: Fingerprint) -> tuple:
        record = getattr(fp.settings, path.partition(".")[0])
        value = field_info(path).get_default() if record is None else get_path(fp.settings, path)
        return (list(value) if isinstance(value, tuple) else value,)
    return read


def setting(name: str, **kw: Any) -> Factor:
    """The registry row of a settings field called ``name``: its path, option field, parser, allowed values, doc
    and fingerprint reader come from the field (:mod:`repaudit.settings`); ``kw`` adds or overrides the rest."""
    stage = stage_of(name)
    path = f"{stage}.{name}"
    base: dict[str, Any] = dict(doc=" ".join((field_info(path).description or "").split()), fields=(name,),
                                parse=_parser(path), values=choices(path), fingerprint=_reader(path), path=path)
    base.update(kw)
    return Factor(name, **base)


def _gen_moves(values: tuple, field_name: str) -> Callable[[RunConfig, Any], list]:
    return lambda c, t: ([x for x in values if x != getattr(c.generation, field_name)]
                         if t.output_type.value == "generate_until" else [])


def _until(fp: Fingerprint) -> tuple:
    g = fp.settings.generation
    return (None, True) if g is None else (list(g.until or []), g.stop_at_eos)


def _shots(cfg: RunConfig, task) -> int:
    return cfg.fewshot.num_fewshot if cfg.fewshot.num_fewshot is not None else task.default_num_fewshot


_NOT_HERE = "a setting of the machine, not of the run: recorded and compared, never set by repaudit"
_SERVING = "vLLM engine setting"
_NUMERIC_PATH = "a numerical path, not a protocol choice: attribute and sweep measure it"
_LETTERED = "only lettered prompts use it: try prompt_format first"
_OTHER_DOCS = {"sweep": "other docs: compare reports them as not comparable",
               "replay": "other docs: attribution needs the same docs",
               "reproduce": "other docs cannot reproduce a number on these"}
_EM_OPTION = {"protocol": "protocols state the metric, not lm-eval's option", "reproduce": "a metric option"}


def _serving(name: str, parse=None, how: Literal["engine", "env", "both"] = "engine") -> Factor:
    """A vLLM engine setting. ``compare`` shows the value the engine used (its facts in the fingerprint); a replay
    asks for what the run asked for (``serving.<name>``; the unset value where it asked for nothing, so that the
    engine picks its default again and a transformers/vLLM pair differs in ``backend`` alone). A value this machine
    cannot run (two GPUs) stops the run with one line."""
    why = {"protocol": "published protocols do not state serving settings",
           "reproduce": "a serving setting moves numerics, not the protocol a number was reported under"}
    row = setting(name, why_not=why, serving=how, **({"parse": parse} if parse else {}))
    return dataclasses.replace(row, doc=f"{row.doc.rstrip('.')} ({_SERVING})")


def _stated(name: str, doc: str, path: str | None, typ: Any, why: str, stage: Stage) -> Factor:
    """A factor protocols state and runs record (``path``: the fact in the vocabulary) or not, which repaudit does
    not set."""
    never = {"option": why, "replay": why, "sweep": why, "reproduce": why}
    if path is None:
        never.update(recorded=why, compared=why)
    return Factor(name, doc, (), None, None, None, stage, protocol=typ, why_not=never, path=path)


FACTORS: tuple[Factor, ...] = (
    # ---------------------------------------------------------------- inference numerics
    setting("backend", protocol=str,
            why_not={"reproduce": "the vllm backend needs its own install: a search tries protocol settings"}),
    setting("dtype", protocol=str,
            moves=lambda c, t: [d for d in ("bfloat16", "float16", "float32") if d != c.serving.dtype]),
    setting("batch_size", protocol=int | Literal["auto"], parse=_int_or("auto"),
            moves=lambda c, t: [b for b in (1, 32) if b != c.serving.batch_size]),
    setting("padding_side", protocol=str,
            moves=lambda c, t: ["left" if c.serving.padding_side == "right" else "right"]),
    # the resolved value: a run that got BOS from its tokenizer's default replays as True
    setting("add_bos_token", protocol=bool, default_move=6,
            doc="start every request with BOS (true), never (false), or as the tokenizer does (default)",
            fingerprint=lambda fp: (fp.backend.bos_first if isinstance(fp.backend.bos_first, bool)
                                    else fp.settings.serving.add_bos_token,),
            moves=lambda c, t: [v for v in (True, False) if v != c.serving.add_bos_token]),
    setting("scoring_strategy", protocol=str,
            why_not={"reproduce": _NUMERIC_PATH}),
    setting("generation_strategy", protocol=str,
            why_not={"reproduce": _NUMERIC_PATH}),
    setting("device", fields=(), parse=None,
            why_not={"option": "set with run --device (where it can run, not what it computes)",
                     "replay": "a replay runs where it is: the device is this machine's",
                     "sweep": "a replay runs where it is: the device is this machine's",
                     "protocol": _NOT_HERE, "reproduce": _NOT_HERE}),
    # ---------------------------------------------------------------- serving (vLLM engine)
    _serving("tensor_parallel_size"),
    _serving("pipeline_parallel_size"),
    _serving("attention_backend", _none_or(str, "auto"), how="both"),
    _serving("enable_prefix_caching"),
    _serving("kv_cache_dtype"),
    _serving("batch_invariant", how="env"),
    _serving("max_num_seqs"),
    _serving("quantization"),
    # ---------------------------------------------------------------- serving (a served model)
    setting("max_concurrency",
            why_not={"protocol": "published protocols do not state how many requests were in flight",
                     "reproduce": "a serving setting moves numerics, not the protocol a number was reported under"}),
    # ---------------------------------------------------------------- prompt
    setting("prompt_format", fields=("prompt_format", "task_config"), protocol=str,
            doc="lmeval (lm-eval's templates), lettered (choices with letters) or cloze; a task built from a "
                "recorded lm-eval configuration replays with its own templates",
            fingerprint=lambda fp: (fp.settings.prompt.prompt_format, fp.task_config),
            moves=lambda c, t: [f for f in t.formats if f != c.prompt.prompt_format], default_move=2),
    setting("label_style", protocol=str, why_not={"reproduce": _LETTERED}),
    setting("choice_separator", parse=unescape, protocol=str,
            why_not={"reproduce": _LETTERED}),
    setting("description", protocol=str | None,
            parse=lambda s: None if s == "task" else "" if s == "none" else unescape(s),
            doc="text before the examples (task = the task's own, none = no description)",
            why_not={"reproduce": "free text: no finite set of moves"}),
    setting("chat_template", protocol=bool,
            moves=lambda c, t: [not c.prompt.chat_template], default_move=3),
    setting("system_prompt", parse=_none_or(unescape), protocol=str | None,
            why_not={"reproduce": "free text: no finite set of moves"}),
    setting("fewshot_as_multiturn", protocol=bool,
            why_not={"reproduce": "needs a chat template: try chat_template first"}),
    # ---------------------------------------------------------------- few-shot
    setting("num_fewshot", parse=int, protocol=int,
            moves=lambda c, t: [n for n in (0, 5, 10, 25) if n != _shots(c, t)], default_move=1),
    setting("fewshot_split", parse=str, protocol=str,
            why_not={"replay": "the split is recorded as used and comes with the task definition",
                     "reproduce": "a task's splits are few: pick one with run --fewshot-split"}),
    setting("fewshot_seed", protocol=int,
            moves=lambda c, t: [c.seeds.fewshot_seed + 1], default_move=4),
    dataclasses.replace(
        setting("fewshot_order_seed", default_move=5,
                moves=lambda c, t: [1] if c.fewshot.fewshot_order_seed is None else [None],
                doc="seed of a per-doc permutation of the selected examples (none = sampler order)",
                why_not={"protocol": "no protocol fixes an order beyond its sampler's"}), name="fewshot_order"),
    # ---------------------------------------------------------------- generation and sampling
    setting("until", fields=("until", "stop_at_eos"), protocol=list[str],
            parse=lambda s: [] if s.lower() == "none" else [unescape(x) for x in s.split("|")],
            doc="stop sequences, '|'-separated (none = only EOS); the tokenizer's EOS is added", fingerprint=_until,
            why_not={"reproduce": "free text: no finite set of moves"}),
    setting("max_gen_toks", parse=int, protocol=int,
            moves=lambda c, t: [b for b in (256, 1024) if b != (c.generation.max_gen_toks or t.max_gen_toks)]
            if t.output_type.value == "generate_until" else []),
    setting("do_sample", protocol=bool,
            moves=lambda c, t: [not c.generation.do_sample] if t.output_type.value == "generate_until" else []),
    setting("temperature", protocol=float,
            moves=_gen_moves((0.0, 0.7, 1.0), "temperature")),
    setting("top_p", protocol=float, moves=_gen_moves((0.9, 1.0), "top_p")),
    setting("top_k", protocol=int, moves=_gen_moves((0, 50), "top_k")),
    setting("repetition_penalty", protocol=float,
            moves=_gen_moves((1.0, 1.1), "repetition_penalty")),
    setting("sampling_seed", parse=_none_or(int, "torch"), protocol=int,
            doc="seed of sampled generations (default: the torch seed)",
            moves=lambda c, t: [(c.generation.sampling_seed if c.generation.sampling_seed is not None
                                 else c.seeds.torch_seed) + 1]
            if t.output_type.value == "generate_until" and c.generation.do_sample else []),
    # ---------------------------------------------------------------- seeds
    setting("seed", protocol=int,
            why_not={"reproduce": "moves nothing once the few-shot and sampling seeds are fixed"}),
    setting("numpy_seed", protocol=int,
            why_not={"reproduce": "moves nothing once the few-shot and sampling seeds are fixed"}),
    setting("torch_seed", protocol=int,
            why_not={"reproduce": "sampling_seed is the move for sampled generations"}),
    # ---------------------------------------------------------------- scoring
    setting("acc_norm", stage="scoring", protocol=str,
            protocol_values={"bytes": "byte_length", "tokens": "token_length"},
            why_not={"reproduce": "read from the same inference: every variant is scored at once"}),
    setting("answer_match", stage="scoring", protocol=str,
            why_not={"reproduce": "a matching rule is a metric variant: compare reads it"}),
    setting("ignore_case", stage="scoring",
            doc="exact_match option (task = the task's own)", why_not=_EM_OPTION),
    setting("ignore_punctuation", stage="scoring",
            doc="exact_match option (task = the task's own)", why_not=_EM_OPTION),
    setting("regexes_to_ignore", stage="scoring",
            doc="exact_match option: patterns removed before matching, '|'-separated",
            parse=lambda s: None if s == "task" else [] if s == "none" else s.split("|"), why_not=_EM_OPTION),
    setting("score_normalisation", stage="scoring",
            protocol=ScoreNormalisation, protocol_names=("score",),
            why_not={"reproduce": "both forms are read from the same inference"}),
    # ---------------------------------------------------------------- data
    setting("split", parse=str, protocol=str, why_not=_OTHER_DOCS),
    setting("limit", parse=int, protocol=int, why_not=_OTHER_DOCS),
    # ---------------------------------------------------------------- stated by protocols, read, not set
    *(_stated(*row) for row in (
        ("metric", "the metric a protocol reports", None, str, "a scoring choice read from the run's metrics",
         "scoring"),
        ("aggregation", "micro or subject_macro (MMLU)", None, Literal["micro", "subject_macro"],
         "both aggregates are reported by every run", "scoring"),
        ("random_baseline", "chance score used to normalise", "metric.random_baseline", float,
         "computed from the docs' choices", "scoring"),
        ("fewshot_selection", "how examples are chosen (random, first_n, fixed samples)", "fewshot.sampler",
         str, "the task's sampler: set by the task definition", "inference"),
        ("formulation", "cloze vs multiple-choice formulation a protocol picks per model", None, str,
         "a protocol rule, not a single run's setting", "none"),
        ("max_length", "context window in tokens", "engine.max_length", int,
         "the model's own context window", "inference"))),
)

BY_NAME: dict[str, Factor] = {f.name: f for f in FACTORS}
#: RunConfig fields that are not factors: what is evaluated, where things are read and written
NON_FACTOR_FIELDS = ("task", "task_config", "model", "revision", "trust_remote_code", "data_dir", "doc_ids",
                     "fewshot_ids", "fewshot_from", "fewshot_by_doc", "cache_dir", "use_batch_cache", "protocol",
                     "endpoint")


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
             "compare": f.path,
             **{c: True if f.supports(c) else reason(f, c) for c in COMMANDS}}
            for f in FACTORS]


def by_path() -> dict[str, str]:
    """Vocabulary path -> the factor's name, for paths that belong to one factor only."""
    paths: dict[str, list[str]] = {}
    for f in FACTORS:
        if f.path is not None:
            paths.setdefault(f.path, []).append(f.name)
    return {p: names[0] for p, names in paths.items() if len(names) == 1}
