"""``repaudit compare``: which factors differ between two runs, which docs flipped, and whether the score
moved beyond noise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from repaudit.cli.attribution import attribute_runs
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
    RayAddressOption,
    WorkersOption,
    check_outputs,
    emit_report,
    make_executor,
    report_format,
    task_map_of,
    user_errors,
)

SamplesOption = Annotated[Optional[list[Path]], typer.Option(
    help="lm-eval samples_<task>_*.jsonl or lighteval details_*.parquet of A (default: found through the "
         "harness's output layout).")]
PairTasksOption = Annotated[Optional[list[str]], typer.Option(
    help="B_TASK=A_TASK: compare B's task under A's name (one benchmark, two harness names); '*' matches any "
         "text ('hendrycksTest-*=mmlu_*'); repeatable. lm-eval's own renames (0.3 to 0.4) are applied without "
         "it, and a one-task run is paired with a one-task run when their docs have the same content.")]
TokenizerOption = Annotated[Optional[str], typer.Option(
    help="The runs' tokenizer (a model folder, a hub id, or 'default'): counts the tokens of lm-eval "
         "generations, so truncation at max_gen_toks can be told.")]
DocsCsvOption = Annotated[Optional[Path], typer.Option(
    "--docs-csv", help="Also write every doc both runs scored, one row per task, doc and metric (A, B, Δ, "
                       "flipped, same doc/prompt hash), as CSV to this file.")]
AdjustOption = Annotated[str, typer.Option(help="Multiplicity adjustment of the rows' p-values: holm (family-wise "
                                                "error), bh (false discovery rate) or none.")]
AttributeFlag = Annotated[bool, typer.Option("--attribute", help="Also re-execute and attribute the delta to each "
                                                                 "factor (as repaudit attribute).")]
DataDirOption = Annotated[Optional[Path], typer.Option(help="With --attribute, or HTML of repaudit runs (their "
                                                            "prompts are rebuilt): local data the runs read.")]
ModelOption = Annotated[Optional[str], typer.Option(help="With --attribute: override the recorded model location "
                                                         "(HTML: where the chat template's tokenizer is).")]
CacheDirOption = Annotated[Optional[Path], typer.Option(help="With --attribute or HTML: model and batch cache.")]


def compare_command(
    run_a: Annotated[Path, typer.Argument(metavar="RUN_A", help="Run A: a repaudit run, an lm-eval or lighteval "
                                                               "results file, an inspect_ai log (.eval or .json), "
                                                               "or an output directory.")],
    run_b: Annotated[Path, typer.Argument(metavar="RUN_B", help="Run B, likewise.")],
    samples_a: SamplesOption = None,
    samples_b: Annotated[Optional[list[Path]], typer.Option(help="Samples or details of B.")] = None,
    name_a: NameAOption = None,
    name_b: NameBOption = None,
    pair_tasks: PairTasksOption = None,
    tokenizer: TokenizerOption = None,
    fmt: FormatOption = Format.rich,
    output: OutputOption = None,
    mkdir: MkdirOption = False,
    docs_csv: DocsCsvOption = None,
    doc_text: DocTextOption = True,
    top: Annotated[int, typer.Option(help="Flipped docs to show (all are in the JSON).")] = 10,
    tie_eps: Annotated[float, typer.Option(help="Near-tie: top-two log-likelihood gap at most this (nats).")] = 0.01,
    n_boot: Annotated[int, typer.Option(help="Bootstrap replicates.")] = 10_000,
    adjust: AdjustOption = "holm",
    attribute: AttributeFlag = False,
    data_dir: DataDirOption = None,
    model: ModelOption = None,
    cache_dir: CacheDirOption = None,
    plot: Annotated[Optional[Path], typer.Option(help="With --attribute: waterfall to PATH.png and PATH.pdf.")] = None,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    workers: WorkersOption = None,
    as_json: JsonOption = False,
) -> None:
    """Which factors differ between two runs, which docs flipped, and whether the score moved beyond noise.

    With a protocol file (fingerprints/*.yaml) as either side: which factors the run deviates from
    the protocol in, and which it cannot tell.

    Example: repaudit compare run.json ../shared/lmeval_runs/s1 --format markdown -o compare.md

    Example: repaudit compare run.json fingerprints/lmeval_0.4_defaults.yaml

    Example: repaudit compare a.json b.json -o scores.csv --docs-csv docs.csv

    Example: repaudit compare a.json b.json -o report.html
    """
    from repaudit.audit.compare import check_options, compare, load_run
    from repaudit.report.frames import paired_docs_frame, to_csv

    with user_errors():
        check_options(tie_eps, n_boot, 0.05, adjust, top)
        check_outputs(output, plot, fmt, as_json, csv=not attribute, html=not attribute, mkdir=mkdir)
        _check_docs_csv(docs_csv, mkdir)
        from repaudit.run.protocol import looks_like_protocol

        if looks_like_protocol(run_a) or looks_like_protocol(run_b):
            _conformance(run_a, run_b, samples_a if looks_like_protocol(run_b) else samples_b, fmt, output, as_json)
            return
        task_map = task_map_of(pair_tasks or [])
        tok = _tokenizer(tokenizer, cache_dir) if tokenizer else None
        ra, rb = load_run(run_a, samples_a, tok), load_run(run_b, samples_b, tok)
        comparison = compare(ra, rb, tie_eps=tie_eps, n_boot=n_boot, task_map=task_map, adjust=adjust,
                             names=(name_a, name_b))
        att = (attribute_runs(run_a, run_b, data_dir, model, None, 2000, cache_dir, plot,
                              make_executor(executor, ray_address, workers)) if attribute else None)
        _emit(comparison, att, report_format(fmt, output, as_json, csv=not attribute, html=not attribute), output,
              top, lambda: _html(comparison, (run_a, ra), (run_b, rb), task_map, data_dir, model, cache_dir,
                                 doc_text))
        if docs_csv is not None:
            from repaudit.run.records import write_atomic

            write_atomic(docs_csv, to_csv(paired_docs_frame(ra, rb, task_map)))


def _emit(comparison, att, fmt: Format, output: Optional[Path], top: int, html) -> None:
    """The comparison (and its attribution, with --attribute) in the report format asked for."""
    from repaudit.report.audit import attribution_latex, attribution_markdown, attribution_rich
    from repaudit.report.compare import render_json, render_latex, render_markdown, render_rich
    from repaudit.report.frames import scores_frame, to_csv

    def rich_view(console: Console) -> None:
        render_rich(comparison, console, top)
        if att is not None:
            attribution_rich(att, console)

    def as_json_text() -> str:
        if att is None:
            return render_json(comparison)
        return json.dumps({"comparison": comparison.model_dump(mode="json"),
                           "attribution": att.model_dump(mode="json")}, indent=1)

    emit_report(fmt, output, rich_view,
                lambda: render_markdown(comparison, top) + ("\n" + attribution_markdown(att) if att else ""),
                lambda: render_latex(comparison, top) + ("\n" + attribution_latex(att) if att else ""),
                as_json_text, lambda: to_csv(scores_frame(comparison)), html)


def _html(c, side_a, side_b, task_map, data_dir, model, cache_dir, doc_text: bool = True) -> str:
    """The HTML report with its per-doc browser."""
    from repaudit.report.docview import doc_browser
    from repaudit.report.html import render_compare_html

    return render_compare_html(c, *doc_browser(c, side_a, side_b, task_map, data_dir, model, cache_dir, doc_text))


def _check_docs_csv(path: Optional[Path], mkdir: bool = False) -> None:
    """``--docs-csv`` names a writable ``.csv`` file (checked before any work)."""
    if path is None:
        return
    from repaudit.errors import UsageError
    from repaudit.run.records import check_writable

    if path.suffix.lower() != ".csv":
        raise UsageError(f"--docs-csv '{path}': the file must end in .csv")
    check_writable(path, "--docs-csv", mkdir)


def _conformance(run_a: Path, run_b: Path, samples, fmt, output, as_json: bool) -> None:
    """``compare RUN PROTOCOL`` (either order): the run's conformance with the protocol."""
    from repaudit.audit.compare import load_run
    from repaudit.audit.conformance import conformance
    from repaudit.errors import RepauditError
    from repaudit.report.protocol import (
        render_conformance_latex,
        render_conformance_markdown,
        render_conformance_rich,
    )
    from repaudit.run.protocol import looks_like_protocol, read_protocol

    if looks_like_protocol(run_a) and looks_like_protocol(run_b):
        raise RepauditError("compare takes a run and a protocol, not two protocols")
    proto_path, run_path = (run_a, run_b) if looks_like_protocol(run_a) else (run_b, run_a)
    proto = read_protocol(proto_path)
    result = conformance(load_run(run_path, samples), proto)
    emit_report(report_format(fmt, output, as_json), output, lambda c: render_conformance_rich(result, c),
                lambda: render_conformance_markdown(result), lambda: render_conformance_latex(result),
                lambda: result.model_dump_json(indent=1))


def _tokenizer(name: str, cache_dir: Path | None):
    """A transformers tokenizer: ``default`` (the default model's), a local model folder, or a hub id."""
    import contextlib
    import io

    from transformers import AutoTokenizer

    from repaudit.backends.model_source import default_gguf_path, resolve_model
    from repaudit.run.config import default_cache_dir

    if name == "default":  # the tokenizer alone, from the GGUF: no need to de-quantise the model for it
        gguf = default_gguf_path()
        with contextlib.redirect_stderr(io.StringIO()):  # the GGUF reader's tqdm bar
            return AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    resolved = resolve_model(name, None, cache_dir or default_cache_dir())
    return AutoTokenizer.from_pretrained(str(resolved.path))
