"""Option groups, declared once: each is a dataclass whose fields are typer options, and a command takes the
group as one parameter (``report: ReportOptions``). :func:`grouped` spreads each group's fields into the command's
signature for typer and packs what typer parsed back into the group before the command runs — so a command
function names a handful of groups, and an option shared by several commands is written in one place.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

from repaudit.cli.common import (
    DocTextOption,
    ExecutorOption,
    Format,
    FormatOption,
    JsonOption,
    MkdirOption,
    NameAOption,
    NameBOption,
    OutputOption,
    PrecisionOption,
    PrecisionSeedOption,
    RayAddressOption,
    RoundDocsOption,
    WorkersOption,
    base_config,
    check_outputs,
    make_executor,
    report_format,
)
from repaudit.importers.detect import run_files

DataDirOption = Annotated[Optional[Path], typer.Option(help="Local data the runs read (laid out as the packaged "
                                                            "data: <task>/…).")]
CacheDirOption = Annotated[Optional[Path], typer.Option(help="Model and batch cache (default: the user cache dir).")]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Print the configurations, the batches already in the "
                                                              "store, the tokens still to compute and a time "
                                                              "estimate, then exit.")]


@dataclass
class ReportOptions:
    """Where a report goes and in which format."""

    fmt: FormatOption = Format.rich
    output: OutputOption = None
    mkdir: MkdirOption = False
    as_json: JsonOption = False

    def check(self, plot: Optional[Path] = None, **kinds: bool) -> None:
        """Refuse unwritable outputs before any work (see :func:`repaudit.cli.common.check_outputs`)."""
        check_outputs(self.output, plot, self.fmt, self.as_json, mkdir=self.mkdir, **kinds)

    def format(self, **kinds: bool) -> Format:
        """The format the report is written in (see :func:`repaudit.cli.common.report_format`)."""
        return report_format(self.fmt, self.output, self.as_json, **kinds)


@dataclass
class SourceOptions:
    """Where the model, the data and the caches are (a replay's or a grid's)."""

    model: Annotated[Optional[str], typer.Option(help="Override the model location recorded in the runs: 'default' "
                                                      "(the packaged SmolLM2-135M-Instruct), a local directory or a "
                                                      "hub id.")] = None
    data_dir: DataDirOption = None
    cache_dir: CacheDirOption = None


@dataclass
class EndpointOptions:
    """Where a served model is (``--backend openai``): its endpoint(s), the variable holding the key, limits."""

    base_url: Annotated[Optional[list[str]], typer.Option(
        help="--backend openai: the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (vLLM, SGLang, "
             "llama.cpp servers); grid commands take it repeated (replicas of one deployment: configurations are "
             "spread over them); a replay without it uses the URL the run records.")] = None
    api_key_env: Annotated[Optional[str], typer.Option(
        help="The environment variable holding the endpoint's API key (never the key itself: it is read from the "
             "environment and written nowhere).")] = None
    timeout: Annotated[float, typer.Option(help="Seconds one request to the endpoint may take.")] = 600.0
    max_retries: Annotated[int, typer.Option(help="Further tries of a request after a refused connection, a "
                                                  "timeout, 429 or 5xx (exponential back-off, Retry-After "
                                                  "honoured).")] = 4
    tokenizer: Annotated[Optional[str], typer.Option(
        help="A local tokenizer (model directory or hub id) for an endpoint without /tokenize; checked against the "
             "server's own tokenisation where it has one.")] = None

    def settings(self, one: bool = False) -> list:
        """One :class:`~repaudit.backends.endpoint.EndpointSettings` per ``--base-url`` (empty: none given).

        Raises:
            UsageError: a bad URL, variable name or limit; several URLs where ``one`` endpoint is taken.
        """
        from pydantic import ValidationError

        from repaudit.backends.endpoint import EndpointSettings
        from repaudit.errors import UsageError

        urls = self.base_url or []
        if one and len(urls) > 1:
            raise UsageError(f"--base-url: this command takes one endpoint, got {len(urls)}")
        out = []
        for url in urls:
            try:
                out.append(EndpointSettings(base_url=url, api_key_env=self.api_key_env, timeout_s=self.timeout,
                                            max_retries=self.max_retries, tokenizer=self.tokenizer))
            except ValidationError as exc:
                e = exc.errors(include_url=False)[0]
                name = {"timeout_s": "timeout"}.get(str(e["loc"][0]), str(e["loc"][0])).replace("_", "-")
                msg = str(e.get("msg", "invalid value")).removeprefix("Value error, ")
                raise UsageError(msg if msg.startswith("--") else f"--{name}: {msg}") from None
        if not urls and (self.api_key_env or self.tokenizer):
            raise UsageError("--api-key-env and --tokenizer belong to an endpoint: give --base-url")
        return out


@dataclass
class ReplayEndpointOptions(EndpointOptions):
    """A served model's endpoint for commands that re-execute recorded runs."""

    allow_model_mismatch: Annotated[bool, typer.Option(
        "--allow-model-mismatch", help="Re-execute a served run on the model the endpoint serves even where it is "
                                       "not the model id the run records (the difference is reported).")] = False

    def point(self, sources: list, model: Optional[str] = None) -> list:
        """``sources`` (replay sources) of served runs pointed at these endpoints (see
        :func:`repaudit.audit.replay.serve_from`).

        Raises:
            UsageError: as :meth:`EndpointOptions.settings` and ``serve_from`` raise.
        """
        from repaudit.audit.replay import serve_from

        return serve_from(sources, self.settings(), self.allow_model_mismatch, model)


@dataclass
class BaseOptions(ReplayEndpointOptions):
    """The base configuration of a grid command: a run given with ``--base``, or the factor options with these; a
    served model's endpoint(s) (the options it inherits)."""

    base_run: Annotated[Optional[Path], typer.Option(
        "--base", help=f"Take the base configuration from this run ({run_files(replayed=True)}); the factor "
                       "options are then ignored.", readable=False)] = None
    task: Annotated[str, typer.Option(help="Task of the base configuration.")] = "arc_easy"
    model: Annotated[str, typer.Option(help="'default' (the packaged SmolLM2-135M-Instruct), a local directory or "
                                            "a hub id; with --base, replaces the run's model unless 'default'.")
                     ] = "default"
    data_dir: DataDirOption = None
    cache_dir: CacheDirOption = None

    def config(self, **fields: Any):
        """The base RunConfig: the ``--base`` run replayed, else one built from ``fields`` (see
        :func:`repaudit.cli.common.base_config`, whose errors it raises); a served base pointed at these options'
        endpoint."""
        return base_config(self.base_run, self.model, self.data_dir, self.cache_dir, served=self, task=self.task,
                           **fields)


@dataclass
class GridOptions:
    """Where a grid's configurations run, or only what they would cost."""

    executor: ExecutorOption = "local"
    ray_address: RayAddressOption = None
    workers: WorkersOption = None
    dry_run: DryRunOption = False

    def open_executor(self, served: Optional[EndpointOptions] = None):
        """The executor these options name (see :func:`repaudit.cli.common.make_executor`); over the replicas of a
        served deployment where ``served`` names several endpoints."""
        return make_executor(self.executor, self.ray_address, self.workers,
                             served.settings() if served is not None else None)


@dataclass
class PrecisionOptions:
    """``--precision``: seeded doc rounds shared by all configurations, stopped once every interval is narrow."""

    precision: PrecisionOption = None
    precision_seed: PrecisionSeedOption = 0
    round_docs: RoundDocsOption = None


@dataclass
class PairOptions:
    """How two runs are read and paired, and named in reports."""

    samples_a: Annotated[Optional[list[Path]], typer.Option(
        help="lm-eval samples files of A, whatever their names (each placed by its content; TASK=PATH names its "
             "task), or lighteval details_*.parquet (default: found beside the results, renamed ones by content).",
        readable=False)] = None
    samples_b: Annotated[Optional[list[Path]], typer.Option(help="Samples or details of B.", readable=False)] = None
    pair_tasks: Annotated[Optional[list[str]], typer.Option(
        help="B_TASK=A_TASK: compare B's task under A's name (one benchmark, two harness names); '*' matches any "
             "text ('hendrycksTest-*=mmlu_*'); repeatable. lm-eval's own renames (0.3 to 0.4) are applied without "
             "it, and a one-task run is paired with a one-task run when their docs have the same content.")] = None
    name_a: NameAOption = None
    name_b: NameBOption = None


@dataclass
class DocTextOptions:
    """What an HTML report's per-doc browser shows."""

    doc_text: DocTextOption = True


@dataclass
class StatOptions:
    """A command's statistics options, generated from :class:`~repaudit.audit.stat_settings.StatSettings`: one
    option per field the command takes (:data:`~repaudit.audit.stat_settings.COMMANDS`), named, typed, documented and
    defaulted from the record (:func:`stat_parameters`); a field the command does not take stays None here.
    :meth:`settings` validates them into the command's record, with the one message a bad value gets on every
    command."""

    command: str = ""
    alpha: Optional[float] = None
    adjust: Optional[str] = None
    n_boot: Optional[int] = None
    boot_seed: Optional[int] = None
    tie_eps: Optional[float] = None
    multiplicity: Optional[str] = None
    """gate: the old name of ``--adjust`` (hidden; ``gate --multiplicity bh`` in CI scripts keeps working)."""

    def settings(self, command: Optional[str] = None):
        """The :class:`~repaudit.audit.stat_settings.StatSettings` of ``command`` (default: this group's; ``series``
        for ``variance --across``) with the values given.

        Raises:
            UsageError: a value out of range (:func:`~repaudit.audit.stat_settings.refusal`), or ``--multiplicity``
                with another ``--adjust``.
        """
        from repaudit.audit.stat_settings import COMMANDS, for_command
        from repaudit.errors import UsageError

        values = {k: getattr(self, k) for k in COMMANDS[self.command].options if getattr(self, k) is not None}
        if self.multiplicity is not None:
            if values.get("adjust", self.multiplicity) not in (self.multiplicity,
                                                                COMMANDS[self.command].defaults.adjust):
                raise UsageError("--multiplicity is the old name of --adjust: give one of them")
            values["adjust"] = self.multiplicity
        return for_command(command or self.command, **values)


#: a sentence a command adds to a statistics option's help, where the command uses it in its own way
STAT_NOTES = {("gate", "alpha"): "With --policy: the policy file's alpha.",
              ("gate", "adjust"): "With --policy: the policy file's multiplicity."}
#: an old name a command keeps taking for a statistics option (hidden from --help; see :class:`StatOptions`)
STAT_ALIASES = {("gate", "adjust"): "multiplicity"}


def stat_parameters(command: str) -> list[inspect.Parameter]:
    """One keyword parameter per statistics field ``command`` takes, from the record's declaration: the option's
    name (:func:`~repaudit.audit.stat_settings.option_name`), its type, the command's default and the field's
    docstring as its help (a closed set's values added; :data:`STAT_NOTES`); the hidden old names
    (:data:`STAT_ALIASES`) after them."""
    from repaudit.audit.stat_settings import COMMANDS, StatSettings, base_type, choices, option_name

    spec, out = COMMANDS[command], []
    for name in spec.options:
        info = StatSettings.model_fields[name]
        text = " ".join((info.description or "").split()).partition(" None: ")[0]  # a command always sets it
        if choices(name):
            text += f" (one of {', '.join(choices(name))})"
        if (command, name) in STAT_NOTES:
            text += " " + STAT_NOTES[(command, name)]
        out.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=getattr(spec.defaults, name),
                                     annotation=Annotated[base_type(name), typer.Option(option_name(name),
                                                                                        help=text)]))
        if (command, name) in STAT_ALIASES:
            alias = STAT_ALIASES[(command, name)]
            hidden = typer.Option(option_name(alias), hidden=True, help=f"Old name of {option_name(name)}.")
            out.append(inspect.Parameter(alias, inspect.Parameter.KEYWORD_ONLY, default=None,
                                         annotation=Annotated[Optional[str], hidden]))
    return out


def _is_group(annotation: Any) -> bool:
    return inspect.isclass(annotation) and dataclasses.is_dataclass(annotation)


def _fields(cls: type[DataclassInstance], command: str) -> list[inspect.Parameter]:
    """A group's fields as keyword parameters, with their resolved ``Annotated`` types and defaults; a field that is
    a group in turn is spread too (:class:`StatOptions`: the options ``command`` takes)."""
    if issubclass(cls, StatOptions):
        return stat_parameters(command)
    hints = typing.get_type_hints(cls, include_extras=True)
    out = []
    for f in dataclasses.fields(cls):
        if _is_group(hints[f.name]):
            out += _fields(hints[f.name], command)
            continue
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = inspect.Parameter.empty  # a required option
        out.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                     annotation=hints[f.name]))
    return out


def _pack(cls: type[DataclassInstance], kwargs: dict[str, Any], command: str) -> Any:
    """The group ``cls`` from the parsed options in ``kwargs`` (popped), nested groups included."""
    if issubclass(cls, StatOptions):
        return cls(command=command, **{p.name: kwargs.pop(p.name) for p in stat_parameters(command)})
    hints = typing.get_type_hints(cls, include_extras=True)
    return cls(**{f.name: _pack(hints[f.name], kwargs, command) if _is_group(hints[f.name]) else kwargs.pop(f.name)
                  for f in dataclasses.fields(cls)})


def grouped(fn: Callable) -> Callable:
    """Decorator: spread every parameter annotated with an option group into the group's fields (for typer), and
    pack them back into the group when the command is called (see the module docstring). The command's name
    (``compare`` for ``compare_command``) picks its statistics options (:class:`StatOptions`)."""
    sig = inspect.signature(fn, eval_str=True)
    name_of_command = fn.__name__.removesuffix("_command")
    groups = {name: p.annotation for name, p in sig.parameters.items() if _is_group(p.annotation)}
    plain, spread, var = [], [], []
    for name, p in sig.parameters.items():
        if name in groups:
            spread += _fields(groups[name], name_of_command)
        elif p.kind is inspect.Parameter.VAR_KEYWORD:
            var.append(p)
        else:
            plain.append(p)

    @functools.wraps(fn)
    def command(**kwargs: Any) -> Any:
        for name, cls in groups.items():
            kwargs[name] = _pack(cls, kwargs, name_of_command)
        return fn(**kwargs)

    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
              else p for p in plain] + spread + var
    command.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    del command.__wrapped__  # typer reads the signature set here, not the function's own
    return command
