"""Independent truth for the real-world corpus: reads the raw files with json/zipfile(+zstandard)/scipy only.

Nothing here imports repaudit. Each case's ``truth.py`` calls one function of this module on its own folder and
writes ``truth.json`` beside the raw files; ``make_truth.py`` runs them all.

RULES (what the truth says, and why)
====================================
Settings use repaudit's vocabulary (``data.split`` … ``generation.sampling_seed``, plus the facts ``model.name``,
``model.revision``). For every path and side the truth says whether the file *records* it:

* A value is ``recorded`` only when the file literally holds it; the JSON path where it is goes in ``*_key``.
  A harness default (lm-eval's ``max_gen_toks`` 256 when ``generation_kwargs`` lacks it, lighteval's seed 42 in
  code, HELM's defaults) is NOT recorded: ``*_recorded`` false and value null.
* A key that is present with the value null (lm-eval ``"device": null``) is recorded, value null.
* Values are normalised minimally: integer strings become ints (``"8"`` → 8; ``"auto"``, ``"auto:4"`` stay
  strings), a limit of ``20.0`` becomes 20, dtypes lose a ``torch.`` prefix, ``"True"``/``"false"`` strings of
  lm-eval's ``model_args`` become booleans, stop sequences become a list of strings, temperatures floats.
* ``differs`` lists a path only when both sides record it, it applies on both sides, and the values differ.
* ``not_applicable`` (side ``"a"``, ``"b"`` or ``"both"``, the reason in ``not_applicable_reason``):
  - ``fewshot.fewshot_split`` and ``seeds.fewshot_seed`` on a side that is 0-shot (for the run-wide
    ``seeds.fewshot_seed``: every task of that side is 0-shot);
  - ``generation.temperature``/``top_p``/``top_k`` on a side that decodes greedily (``do_sample: false``
    recorded, or a recorded temperature of 0);
  - every ``generation.*`` path on a task whose recorded ``output_type`` is not ``generate_until``
    (a ``--gen_kwargs`` given to a log-likelihood task is recorded but does nothing).
  A path is listed only when at least one side records it.

lm-evaluation-harness (0.3 and 0.4.x) — where each value comes from
--------------------------------------------------------------------
* ``model.name``: ``config.model_args`` ``pretrained=`` (``model=`` for API backends); when model_args holds
  neither, the top-level ``model_name`` if present, else not recorded (e.g. ``model_args: ""``).
  ``model.revision``: model_args ``revision=``.
* ``serving.backend``: ``config.model``. ``serving.device``: model_args ``device=`` when present (lm-eval passes
  model_args before the CLI ``--device``, which is dropped when None), else ``config.device`` (null recorded
  as null). ``serving.dtype``: model_args ``dtype=`` (or ``config.model_dtype``). ``serving.batch_size``:
  ``config.batch_size``. ``serving.add_bos_token``/``serving.tensor_parallel_size``: model_args.
* ``seeds.*``: ``config.random_seed``/``numpy_seed``/``torch_seed``/``fewshot_seed``. ``data.limit``:
  ``config.limit``.
* ``prompt.chat_template``: top-level ``chat_template`` when the key exists (applied = not null); a model_args
  ``use_chat_template=True`` (a fork's argument) is recorded as it stands. ``prompt.fewshot_as_multiturn``: the
  top-level key. ``prompt.system_prompt``: the top-level ``system_instruction`` key.
* per task (``settings_by_task``): ``fewshot.num_fewshot`` from ``n-shot.<task>``, else
  ``configs.<task>.num_fewshot``, else 0.3's ``config.num_fewshot`` (an int, or a list in the order of the
  ``versions`` keys); ``fewshot.fewshot_split`` from ``configs.<task>.fewshot_split``; ``data.split`` from
  ``configs.<task>.test_split`` (else ``validation_split``: the split lm-eval evaluates); ``generation.*`` from
  ``configs.<task>.generation_kwargs`` overridden by the CLI ``config.gen_kwargs`` (a dict, or a ``k=v,…`` string)
  when that records the key. ``do_sample: false`` is recorded greedy decoding.
* ``scores``: every numeric value of ``results.<task>``, its name minus lm-eval's ``,none`` filter suffix (other
  filter suffixes kept: ``exact_match,strict-match``); ``*_stderr*``, ``alias``, ``name``, ``sample_len``,
  ``sample_count`` and non-numbers (``"N/A"``) left out. Infinity/NaN are kept as JSON ``Infinity``/``NaN``.
* ``per_doc``: samples files ``samples_<task>_<timestamp>.jsonl`` of each side, docs paired by ``doc_id``;
  ``n_a``/``n_b`` distinct doc ids in each (trimmed) file, ``n_shared`` in both.
* ``flips``: per-doc metrics whose values on the shared docs are all 0/1 on both sides (metric name
  ``<metric>,<filter>`` minus ``,none``, as in the results); ``right_to_wrong`` = 1 in A and 0 in B.
* ``filtered`` (generate_until tasks): the scored answer is ``filtered_resps[0]`` (its first element again when
  it is a list), the raw answer ``resps[0][0]``; ``changed`` = shared docs whose scored answers differ as strings;
  ``empty_*`` = scored answer empty after ``strip()``; ``raw_empty_*`` likewise for the raw answer.

HELM run folders
----------------
* settings from ``run_spec.adapter_spec`` only: ``model`` (model.name), ``temperature``, ``max_tokens``
  (generation.max_gen_toks), ``stop_sequences`` (generation.until), ``max_train_instances`` (fewshot.num_fewshot),
  ``max_eval_instances`` (data.limit). ``model_deployment``, ``num_outputs``, the prompt affixes are not vocabulary.
* task = the run name without its ``model=`` entry; scores = the ``mean`` of every unperturbed stat of stats.json,
  named ``name.name`` (``@<split>`` appended unless the split is ``test``); per-doc = per_instance_stats' instance ids
  (trial 0); flips = per-instance stats (trial 0, unperturbed) whose values are all 0/1 on the shared instances,
  except HELM's statistics of the request itself (token counts, runtimes, batch size, finish reasons, truncation:
  ``HELM_REQUEST_STATS``) — a judge's 0/1 score flips like an exact match.

Every Eval Ever 0.1.x / 0.2.x
-----------------------------
* ``model.name`` = ``model_info.id``; ``serving.dtype`` = ``model_info.additional_details.precision`` when given;
  per result (``settings_by_task``) the ``generation_config`` (or ``generation_config.generation_args``) keys
  temperature/max_tokens/stop_sequences/top_p/top_k. Everything else (source, scaffold, effort) is not vocabulary.
* task = ``evaluation_name``; metric = ``metric_config.metric_id``, else ``score`` (see eee_results for repeats);
  value = ``score_details.score``.

inspect_ai
----------
* ``model.name`` = ``eval.model``; ``data.limit`` = ``eval.config.limit``; generation settings from
  ``eval.model_generate_config``, then ``plan.config``, then ``eval.config`` (temperature, top_p, top_k, max_tokens,
  stop_seqs, seed → generation.sampling_seed); ``prompt.system_prompt`` = the first ``system_message`` solver's
  template in ``plan.steps``.
* task = ``eval.task``; metric = ``<scorer>/<metric>`` of ``results.scores``; per-doc = sample ids (epoch 1);
  flips = per-sample score values ``"C"``/``"I"`` read as 1/0 (numbers as they are).

Series
------
* ``steps`` as each case's truth.py reads them from the files (NeoX: ``config.model_args.iteration``); ``scores``
  per task and metric present in every file, in step order; ``kendall_tau_b`` =
  ``scipy.stats.kendalltau(steps, values, variant="b").statistic``, metrics with one constant value skipped.
"""
from __future__ import annotations

import io
import json
import math
import re
import struct
import zipfile
from pathlib import Path

from scipy import stats as _stats

NONE_SUFFIX = ",none"
TS = re.compile(r"_(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d+)\.jsonl$")


# ----------------------------------------------------------------------------------------------- small helpers
def load_json(path) -> object:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def dump(truth: dict, case_dir) -> None:
    out = Path(case_dir) / "truth.json"
    out.write_text(json.dumps(truth, indent=1, ensure_ascii=False, allow_nan=True) + "\n", encoding="utf-8")


def rec(value, key):
    """A recorded value and the JSON path where the file holds it."""
    return {"value": value, "key": key}


def is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def as_int_or_str(v):
    """"8" -> 8; "auto", "auto:4" stay; ints stay."""
    if isinstance(v, str) and re.fullmatch(r"-?\d+", v.strip()):
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def as_bool(v):
    if isinstance(v, str) and v.strip().lower() in ("true", "false"):
        return v.strip().lower() == "true"
    return v


def as_float(v):
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return v
    return float(v) if is_num(v) else v


def as_dtype(v):
    return v[len("torch."):] if isinstance(v, str) and v.startswith("torch.") else v


def as_list(v):
    if v is None:
        return None
    return [v] if isinstance(v, str) else list(v)


def as_limit(v):
    return int(v) if isinstance(v, float) and v.is_integer() else v


def parse_kv_string(s: str) -> dict:
    """lm-eval's ``k=v,k2=v2`` model_args/gen_kwargs string (values stay strings)."""
    out = {}
    if not s:
        return out
    for part in s.split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


# ------------------------------------------------------------------------------------------ settings algebra
SAMPLING = ("generation.temperature", "generation.top_p", "generation.top_k")


def combine(sa: dict, sb: dict, na_a: dict, na_b: dict, notes: dict | None = None) -> tuple[dict, list, dict, dict]:
    """The truth's ``settings``/``differs``/``not_applicable``/``not_applicable_reason`` of one scope."""
    settings, differs, na, why = {}, [], {}, {}
    for path in sorted(set(sa) | set(sb)):
        a, b = sa.get(path), sb.get(path)
        settings[path] = {"a": a["value"] if a else None, "b": b["value"] if b else None,
                          "a_recorded": a is not None, "b_recorded": b is not None,
                          "a_key": a["key"] if a else None, "b_key": b["key"] if b else None}
        sides = [s for s, n in (("a", na_a), ("b", na_b)) if path in n]
        if sides:
            na[path] = "both" if len(sides) == 2 else sides[0]
            why[path] = {s: (na_a if s == "a" else na_b)[path] for s in sides}
        elif a is not None and b is not None and a["value"] != b["value"]:
            differs.append(path)
    return settings, differs, na, why


def greedy_na(s: dict) -> dict:
    """Sampling parameters are n/a on a side that decodes greedily (do_sample false, or temperature 0)."""
    ds = s.get("generation.do_sample")
    t = s.get("generation.temperature")
    if ds is not None and ds["value"] is False:
        return {p: "greedy decoding (do_sample false)" for p in SAMPLING}
    if t is not None and is_num(t["value"]) and t["value"] == 0:
        return {p: "greedy decoding (temperature 0)" for p in SAMPLING}
    return {}


def pair_scores(sa: dict, sb: dict) -> dict:
    """{task: {metric: {a, b}}} over the union of tasks/metrics (null where a side lacks it)."""
    out = {}
    for task in sorted(set(sa) | set(sb)):
        ma, mb = sa.get(task, {}), sb.get(task, {})
        out[task] = {m: {"a": ma.get(m), "b": mb.get(m)} for m in sorted(set(ma) | set(mb))}
    return out


def flips_of(va: dict, vb: dict) -> dict | None:
    """Right→wrong / wrong→right doc ids of a 0/1 per-doc metric on the shared docs; None when not 0/1."""
    shared = sorted(set(va) & set(vb), key=_sort_key)
    if not shared:
        return None
    for d in shared:
        for v in (va[d], vb[d]):
            if not (is_num(v) and v in (0, 1)):
                return None
    return {"right_to_wrong": [d for d in shared if va[d] == 1 and vb[d] == 0],
            "wrong_to_right": [d for d in shared if va[d] == 0 and vb[d] == 1]}


def _sort_key(d):
    return (0, d, "") if isinstance(d, int) else (1, 0, str(d))


def kendall_b(steps, values) -> float | None:
    vals = [v for v in values]
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in vals) or len(set(vals)) < 2:
        return None
    return float(_stats.kendalltau(steps, vals, variant="b").statistic)


# ------------------------------------------------------------------------------------------- lm-eval reading
SKIP_RESULT_KEYS = {"alias", "name", "sample_len", "sample_count", " "}


def lmeval_scores(results: dict) -> dict:
    out = {}
    for task, row in results.items():
        if not isinstance(row, dict):
            continue
        m = {}
        for k, v in row.items():
            if k in SKIP_RESULT_KEYS or "_stderr" in k or not is_num(v):
                continue
            m[k[: -len(NONE_SUFFIX)] if k.endswith(NONE_SUFFIX) else k] = v
        if m:
            out[task] = m
    return out


def lmeval_results_file(folder: Path) -> Path:
    files = [p for p in sorted(folder.glob("*.json"))]
    if len(files) != 1:
        raise ValueError(f"{folder}: expected one results JSON, found {[p.name for p in files]}")
    return files[0]


def lmeval_model_args(cfg: dict) -> tuple[dict, str]:
    ma = cfg.get("model_args")
    if isinstance(ma, dict):
        return ma, "dict"
    return parse_kv_string(ma or ""), "string"


def lmeval_run_settings(d: dict) -> dict:
    cfg = d.get("config", {})
    ma, _ = lmeval_model_args(cfg)
    s = {}
    mk = "config.model_args"
    if "pretrained" in ma:
        s["model.name"] = rec(ma["pretrained"], f"{mk}.pretrained")
    elif "model" in ma:
        s["model.name"] = rec(ma["model"], f"{mk}.model")
    elif d.get("model_name"):
        s["model.name"] = rec(d["model_name"], "model_name")
    if "revision" in ma:
        s["model.revision"] = rec(ma["revision"], f"{mk}.revision")
    if "model" in cfg:
        s["serving.backend"] = rec(cfg["model"], "config.model")
    if "device" in ma:
        s["serving.device"] = rec(ma["device"], f"{mk}.device")
    elif "device" in cfg:
        s["serving.device"] = rec(cfg["device"], "config.device")
    if "dtype" in ma:
        s["serving.dtype"] = rec(as_dtype(ma["dtype"]), f"{mk}.dtype")
    elif "model_dtype" in cfg:
        s["serving.dtype"] = rec(as_dtype(cfg["model_dtype"]), "config.model_dtype")
    if "batch_size" in cfg:
        s["serving.batch_size"] = rec(as_int_or_str(cfg["batch_size"]), "config.batch_size")
    if "add_bos_token" in ma:
        s["serving.add_bos_token"] = rec(as_bool(ma["add_bos_token"]), f"{mk}.add_bos_token")
    if "tensor_parallel_size" in ma:
        s["serving.tensor_parallel_size"] = rec(as_int_or_str(ma["tensor_parallel_size"]),
                                                f"{mk}.tensor_parallel_size")
    for path, key in (("seeds.seed", "random_seed"), ("seeds.numpy_seed", "numpy_seed"),
                      ("seeds.torch_seed", "torch_seed"), ("seeds.fewshot_seed", "fewshot_seed")):
        if key in cfg:
            s[path] = rec(cfg[key], f"config.{key}")
    if "limit" in cfg:
        s["data.limit"] = rec(as_limit(cfg["limit"]), "config.limit")
    if "chat_template" in d:
        s["prompt.chat_template"] = rec(d["chat_template"] is not None, "chat_template")
    elif "use_chat_template" in ma:
        s["prompt.chat_template"] = rec(as_bool(ma["use_chat_template"]), f"{mk}.use_chat_template")
    if "fewshot_as_multiturn" in d:
        s["prompt.fewshot_as_multiturn"] = rec(d["fewshot_as_multiturn"], "fewshot_as_multiturn")
    if "system_instruction" in d:
        s["prompt.system_prompt"] = rec(d["system_instruction"], "system_instruction")
    return s


GEN_MAP = {"until": "generation.until", "max_gen_toks": "generation.max_gen_toks",
           "do_sample": "generation.do_sample", "temperature": "generation.temperature",
           "top_p": "generation.top_p", "top_k": "generation.top_k",
           "repetition_penalty": "generation.repetition_penalty"}


def _gen_value(path, v):
    if path == "generation.until":
        return as_list(v)
    if path == "generation.do_sample":
        return as_bool(v)
    if path in ("generation.temperature", "generation.top_p", "generation.repetition_penalty"):
        return as_float(v)
    if path in ("generation.max_gen_toks", "generation.top_k"):
        return as_int_or_str(v)
    return v


def lmeval_tasks(d: dict) -> list[str]:
    tasks = list(d.get("configs", {}) or {})
    for t in d.get("results", {}):
        if t not in tasks:
            tasks.append(t)
    return tasks


def lmeval_task_settings(d: dict, task: str) -> tuple[dict, dict]:
    """(settings, not-applicable) of one task."""
    cfg = d.get("config", {})
    tc = (d.get("configs") or {}).get(task)
    s, na = {}, {}
    nshot = d.get("n-shot") or {}
    if task in nshot:
        s["fewshot.num_fewshot"] = rec(as_int_or_str(nshot[task]), f"n-shot.{task}")
    elif tc is not None and "num_fewshot" in tc:
        s["fewshot.num_fewshot"] = rec(as_int_or_str(tc["num_fewshot"]), f"configs.{task}.num_fewshot")
    elif "num_fewshot" in cfg:
        nf = cfg["num_fewshot"]
        if isinstance(nf, list):
            order = list(d.get("versions", {}))
            if task in order and order.index(task) < len(nf):
                i = order.index(task)
                s["fewshot.num_fewshot"] = rec(nf[i], f"config.num_fewshot[{i}]")
        else:
            s["fewshot.num_fewshot"] = rec(as_int_or_str(nf), "config.num_fewshot")
    if tc is not None:
        if "fewshot_split" in tc:
            s["fewshot.fewshot_split"] = rec(tc["fewshot_split"], f"configs.{task}.fewshot_split")
        if tc.get("test_split") is not None:
            s["data.split"] = rec(tc["test_split"], f"configs.{task}.test_split")
        elif tc.get("validation_split") is not None:
            s["data.split"] = rec(tc["validation_split"], f"configs.{task}.validation_split")
        for k, v in (tc.get("generation_kwargs") or {}).items():
            if k in GEN_MAP:
                s[GEN_MAP[k]] = rec(_gen_value(GEN_MAP[k], v), f"configs.{task}.generation_kwargs.{k}")
    cli = cfg.get("gen_kwargs")
    if isinstance(cli, str):
        cli = parse_kv_string(cli)
    for k, v in (cli or {}).items():
        if k in GEN_MAP:
            s[GEN_MAP[k]] = rec(_gen_value(GEN_MAP[k], v), f"config.gen_kwargs.{k}")
    nf = s.get("fewshot.num_fewshot")
    if nf is not None and nf["value"] == 0:
        na["fewshot.fewshot_split"] = "0-shot"
    otype = tc.get("output_type") if tc else None
    if otype is not None and otype not in ("generate_until", "greedy_until"):
        for p in GEN_MAP.values():
            na[p] = f"output_type {otype} does not generate"
    else:
        na.update(greedy_na(s))
    return s, na


def lmeval_samples(folder: Path) -> dict:
    """{task: {(filter): {doc_id: row}}} from samples_<task>_<ts>.jsonl files."""
    out = {}
    for p in sorted(folder.glob("samples_*.jsonl")):
        m = TS.search(p.name)
        task = p.name[len("samples_"): m.start()] if m else p.stem[len("samples_"):]
        by_filter = out.setdefault(task, {})
        for row in read_jsonl(p):
            by_filter.setdefault(row.get("filter", "none"), {})[row["doc_id"]] = row
    return out


STD_SAMPLE_KEYS = {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics",
                   "doc_hash", "prompt_hash", "target_hash"}


def _metric_values(rows: dict, filt: str) -> dict:
    """{metric name as in results: {doc_id: value}} of the numeric per-doc metrics."""
    names = set()
    for r in rows.values():
        names |= set(r.get("metrics") or [k for k in r if k not in STD_SAMPLE_KEYS])
    out = {}
    for n in sorted(names):
        vals = {d: r.get(n) for d, r in rows.items() if n in r}
        if vals and all(is_num(v) for v in vals.values()):
            out[n if filt == "none" else f"{n},{filt}"] = vals
    return out


def _text(x):
    while isinstance(x, list):
        if not x:
            return ""
        x = x[0]
    return x if isinstance(x, str) else None


def lmeval_pair(case_dir, a="a", b="b", harness=None, notes=None) -> dict:
    case_dir = Path(case_dir)
    fa, fb = lmeval_results_file(case_dir / a), lmeval_results_file(case_dir / b)
    da, db = load_json(fa), load_json(fb)
    truth = {"case": case_dir.name, "kind": "pair"}
    ha, hb = lmeval_harness(da), lmeval_harness(db)
    if harness:
        truth["harness"] = harness
    elif ha == hb:
        truth["harness"] = ha
    else:
        truth["harness_a"], truth["harness_b"] = ha, hb
    truth["a"], truth["b"] = a, b
    truth["results_a"], truth["results_b"] = f"{a}/{fa.name}", f"{b}/{fb.name}"
    # run-wide settings
    ra, rb = lmeval_run_settings(da), lmeval_run_settings(db)
    tasks_a, tasks_b = lmeval_tasks(da), lmeval_tasks(db)
    per_a = {t: lmeval_task_settings(da, t) for t in tasks_a}
    per_b = {t: lmeval_task_settings(db, t) for t in tasks_b}
    na_ra = _run_na(ra, per_a)
    na_rb = _run_na(rb, per_b)
    settings, differs, na, why = combine(ra, rb, na_ra, na_rb)
    truth.update(settings=settings, differs=differs, not_applicable=na, not_applicable_reason=why)
    sbt, dbt, nabt, whybt = {}, {}, {}, {}
    for t in [x for x in tasks_a if x in tasks_b] + [x for x in tasks_a if x not in tasks_b] + \
             [x for x in tasks_b if x not in tasks_a]:
        sa, naa = per_a.get(t, ({}, {}))
        sb, nab = per_b.get(t, ({}, {}))
        if not sa and not sb:
            continue
        s, dif, n, w = combine(sa, sb, naa if t in per_a else {}, nab if t in per_b else {})
        sbt[t], dbt[t] = s, dif
        if n:
            nabt[t], whybt[t] = n, w
    truth.update(settings_by_task=sbt, differs_by_task=dbt, not_applicable_by_task=nabt,
                 not_applicable_reason_by_task=whybt)
    truth["scores"] = pair_scores(lmeval_scores(da.get("results", {})), lmeval_scores(db.get("results", {})))
    # per-doc
    sa_, sb_ = lmeval_samples(case_dir / a), lmeval_samples(case_dir / b)
    per_doc, flips, filtered = {}, {}, {}
    for task in sorted(set(sa_) & set(sb_)):
        ids_a = set().union(*[set(r) for r in sa_[task].values()])
        ids_b = set().union(*[set(r) for r in sb_[task].values()])
        per_doc[task] = {"n_a": len(ids_a), "n_b": len(ids_b), "n_shared": len(ids_a & ids_b),
                         "prompts_a": _lmeval_prompts(sa_[task]), "prompts_b": _lmeval_prompts(sb_[task])}
        for filt in sorted(set(sa_[task]) & set(sb_[task])):
            va, vb = _metric_values(sa_[task][filt], filt), _metric_values(sb_[task][filt], filt)
            for m in sorted(set(va) & set(vb)):
                f = flips_of(va[m], vb[m])
                if f is not None:
                    flips.setdefault(task, {})[m] = f
        otype_a = ((da.get("configs") or {}).get(task) or {}).get("output_type")
        otype_b = ((db.get("configs") or {}).get(task) or {}).get("output_type")
        if "generate_until" in (otype_a, otype_b) or "greedy_until" in (otype_a, otype_b):
            for filt in sorted(set(sa_[task]) & set(sb_[task])):
                key = task if len(set(sa_[task]) & set(sb_[task])) == 1 else f"{task},{filt}"
                filtered[key] = _filtered(sa_[task][filt], sb_[task][filt])
    truth["per_doc"], truth["flips"], truth["filtered"] = per_doc, flips, filtered
    if notes:
        truth["notes"] = notes
    return truth


def _lmeval_prompts(by_filter: dict) -> int:
    """Docs whose samples row holds its prompt: the first request's context (``arguments`` ``gen_args_0.arg_0`` in
    0.4.x, ``[[context, continuation], …]`` before) as a string."""
    docs = {}
    for rows in by_filter.values():
        for d, row in rows.items():
            args = row.get("arguments")
            if isinstance(args, dict) and args:
                first = next(iter(args.values()))
                ctx = first.get("arg_0") if isinstance(first, dict) else None
            elif isinstance(args, list) and args and isinstance(args[0], list) and args[0]:
                ctx = args[0][0]
            else:
                ctx = None
            docs[d] = docs.get(d) or isinstance(ctx, str)
    return sum(1 for v in docs.values() if v)


def _filtered(ra: dict, rb: dict) -> dict:
    shared = sorted(set(ra) & set(rb))
    fa = {d: _text(ra[d].get("filtered_resps")) for d in shared}
    fb = {d: _text(rb[d].get("filtered_resps")) for d in shared}
    xa = {d: _text(ra[d].get("resps")) for d in shared}
    xb = {d: _text(rb[d].get("resps")) for d in shared}
    return {"n_shared": len(shared),
            "changed": sum(1 for d in shared if fa[d] != fb[d]),
            "empty_a": sum(1 for d in shared if (fa[d] or "").strip() == ""),
            "empty_b": sum(1 for d in shared if (fb[d] or "").strip() == ""),
            "raw_empty_a": sum(1 for d in shared if (xa[d] or "").strip() == ""),
            "raw_empty_b": sum(1 for d in shared if (xb[d] or "").strip() == "")}


def _run_na(run: dict, per_task: dict) -> dict:
    nf = [s.get("fewshot.num_fewshot") for s, _ in per_task.values()]
    if nf and all(x is not None and x["value"] == 0 for x in nf):
        return {"seeds.fewshot_seed": "every task 0-shot"}
    return {}


def lmeval_harness(d: dict) -> str:
    if d.get("lm_eval_version"):
        return f"lm-eval {d['lm_eval_version']}"
    if "configs" not in d:
        return "lm-eval 0.3 (format; no version recorded)"
    gh = d.get("git_hash")
    return "lm-eval 0.4 (format; no version recorded" + (f", git_hash {gh})" if gh else ")")


# -------------------------------------------------------------------------------------------------- series
def series(case_dir, files: list[str], steps: list[int], step_key: str, harness: str, scores_of, notes=None):
    case_dir = Path(case_dir)
    docs = [load_json(case_dir / f) for f in files]
    per = [scores_of(d) for d in docs]
    tasks = sorted(set.intersection(*[set(p) for p in per]))
    scores, tau = {}, {}
    for t in tasks:
        metrics = sorted(set.intersection(*[set(p[t]) for p in per]))
        for m in metrics:
            vals = [p[t][m] for p in per]
            scores.setdefault(t, {})[m] = vals
            k = kendall_b(steps, vals)
            if k is not None:
                tau.setdefault(t, {})[m] = k
    truth = {"case": case_dir.name, "kind": "series", "harness": harness, "files": files, "steps": steps,
             "step_key": step_key, "scores": scores, "kendall_tau_b": tau}
    if notes:
        truth["notes"] = notes
    return truth


# ---------------------------------------------------------------------------------------------------- HELM
#: HELM's statistics of a request rather than of the model's answer (helm/benchmark/metrics/basic_metrics.py): no flips
HELM_REQUEST_STATS = re.compile(r"num_(references|train_trials|train_instances|prompt_tokens|completion_tokens|"
                                r"output_tokens|perplexity_tokens|bytes|instances)|inference_[a-z_]*runtime|"
                                r"batch_size|training_(co2_cost|energy_cost)|finish_reason_[a-z_]+|prompt_truncated")


def helm_run(folder: Path) -> dict:
    return {name: load_json(folder / f"{name}.json")
            for name in ("run_spec", "scenario", "scenario_state", "stats", "per_instance_stats")
            if (folder / f"{name}.json").exists()}


def helm_task(run_spec: dict) -> str:
    """The run's name without its ``model=`` entry (``bbq:subject=all,method=…``)."""
    name = run_spec["name"]
    head, _, args = name.partition(":")
    kept = [a for a in args.split(",") if a and not a.startswith("model=")]
    return head + (":" + ",".join(kept) if kept else "")


def helm_settings(run_spec: dict) -> tuple[dict, dict]:
    """HELM records its adapter_spec: model, temperature, max_tokens, stop_sequences, max_train_instances
    (the few-shot count) and max_eval_instances (the doc limit). Nothing else maps to the vocabulary."""
    ad = run_spec.get("adapter_spec", {})
    s = {}
    k = "run_spec.adapter_spec"
    if "model" in ad:
        s["model.name"] = rec(ad["model"], f"{k}.model")
    if "temperature" in ad:
        s["generation.temperature"] = rec(as_float(ad["temperature"]), f"{k}.temperature")
    if "max_tokens" in ad:
        s["generation.max_gen_toks"] = rec(ad["max_tokens"], f"{k}.max_tokens")
    if "stop_sequences" in ad:
        s["generation.until"] = rec(as_list(ad["stop_sequences"]), f"{k}.stop_sequences")
    if "max_train_instances" in ad:
        s["fewshot.num_fewshot"] = rec(ad["max_train_instances"], f"{k}.max_train_instances")
    if "max_eval_instances" in ad:
        s["data.limit"] = rec(ad["max_eval_instances"], f"{k}.max_eval_instances")
    na = greedy_na(s)
    return s, na


def helm_scores(stats: list) -> dict:
    """Every non-perturbed stat's ``mean``; the name is ``name.name`` (``@<split>`` appended unless test)."""
    out = {}
    for st in stats:
        n = st["name"]
        if n.get("perturbation") or not is_num(st.get("mean")):
            continue
        key = n["name"] if n.get("split") == "test" else f"{n['name']}@{n.get('split')}"
        out[key] = st["mean"]
    return out


def helm_per_instance(pis: list) -> dict:
    """{metric: {instance_id: value}} of trial 0 without perturbation; metric named as in helm_scores."""
    out = {}
    for row in pis:
        if row.get("train_trial_index", 0) != 0 or row.get("perturbation"):
            continue
        for st in row["stats"]:
            n = st["name"]
            if n.get("perturbation"):
                continue
            key = n["name"] if n.get("split") in (None, "test") else f"{n['name']}@{n.get('split')}"
            out.setdefault(key, {})[row["instance_id"]] = st.get("mean")
    return out


def helm_prompts(run: dict) -> int:
    """Instances whose prompt scenario_state.json records (train trial 0, no perturbation, a string prompt)."""
    seen = set()
    for st in (run.get("scenario_state") or {}).get("request_states") or []:
        inst = st.get("instance") or {}
        if st.get("train_trial_index", 0) == 0 and not inst.get("perturbation") and isinstance(
                (st.get("request") or {}).get("prompt"), str):
            seen.add(inst.get("id"))
    return len(seen)


def helm_pair(case_dir, a: str, b: str, notes=None) -> dict:
    case_dir = Path(case_dir)
    ra, rb = helm_run(case_dir / a), helm_run(case_dir / b)
    sa, naa = helm_settings(ra["run_spec"])
    sb, nab = helm_settings(rb["run_spec"])
    for s, na in ((sa, naa), (sb, nab)):
        nf = s.get("fewshot.num_fewshot")
        if nf is not None and nf["value"] == 0:
            na["fewshot.fewshot_split"] = "0-shot"
    settings, differs, na, why = combine(sa, sb, naa, nab)
    ta, tb = helm_task(ra["run_spec"]), helm_task(rb["run_spec"])
    scores_a = {ta: helm_scores(ra["stats"])}
    scores_b = {tb: helm_scores(rb["stats"])}
    pa, pb = helm_per_instance(ra["per_instance_stats"]), helm_per_instance(rb["per_instance_stats"])
    ids_a = {row["instance_id"] for row in ra["per_instance_stats"]}
    ids_b = {row["instance_id"] for row in rb["per_instance_stats"]}
    flips = {}
    for m in sorted(set(pa) & set(pb)):
        if not HELM_REQUEST_STATS.fullmatch(m.split("@")[0]):
            f = flips_of(pa[m], pb[m])
            if f is not None:
                flips[m] = f
    truth = {"case": case_dir.name, "kind": "pair", "harness": "HELM", "a": a, "b": b,
             "settings": settings, "differs": differs, "not_applicable": na, "not_applicable_reason": why,
             "scores": pair_scores(scores_a, scores_b),
             "per_doc": {ta: {"n_a": len(ids_a), "n_b": len(ids_b), "n_shared": len(ids_a & ids_b),
                              "prompts_a": helm_prompts(ra), "prompts_b": helm_prompts(rb)}},
             "flips": {ta: flips} if flips else {}}
    if notes:
        truth["notes"] = notes
    return truth


# ----------------------------------------------------------------------------------------------------- EEE
def eee_settings(d: dict) -> tuple[dict, dict]:
    s = {}
    mi = d.get("model_info", {})
    if "id" in mi:
        s["model.name"] = rec(mi["id"], "model_info.id")
    ad = mi.get("additional_details") or {}
    if "precision" in ad:
        s["serving.dtype"] = rec(as_dtype(ad["precision"]), "model_info.additional_details.precision")
    return s, {}


EEE_GEN = {"temperature": "generation.temperature", "max_tokens": "generation.max_gen_toks",
           "stop_sequences": "generation.until", "top_p": "generation.top_p", "top_k": "generation.top_k"}


def eee_results(d: dict) -> list[tuple[str, str, dict]]:
    """(task, metric, result) per evaluation result. The task is ``evaluation_name``; the metric is
    ``metric_config.metric_id`` when given, else ``score``; when one record repeats an evaluation_name, the metric
    is ``metric_config.evaluation_description`` and results of a perturbation (``score_details.details.
    perturbation`` not null) are left out, as for HELM's stats; a (task, metric) seen again is named
    ``"<metric> (2)"``."""
    res = d.get("evaluation_results", [])
    names = [r["evaluation_name"] for r in res]
    out, seen = [], {}
    for r in res:
        mc = r.get("metric_config") or {}
        if names.count(r["evaluation_name"]) > 1:
            det = (r.get("score_details") or {}).get("details") or {}
            if isinstance(det, dict) and det.get("perturbation"):
                continue
            metric = mc.get("metric_id") or mc.get("evaluation_description") or "score"
        else:
            metric = mc.get("metric_id") or "score"
        k = (r["evaluation_name"], metric)
        seen[k] = seen.get(k, 0) + 1
        if seen[k] > 1:  # a record that repeats a result: the repeat is named "<metric> (2)", "(3)", …
            metric = f"{metric} ({seen[k]})"
        out.append((r["evaluation_name"], metric, r))
    return out


def eee_scores(d: dict) -> dict:
    out = {}
    for task, metric, r in eee_results(d):
        v = (r.get("score_details") or {}).get("score")
        if is_num(v):
            out.setdefault(task, {})[metric] = v
    return out


def eee_task_settings(d: dict) -> dict:
    per = {}
    for task, _metric, r in eee_results(d):
        gc = r.get("generation_config") or {}
        ga = gc.get("generation_args") if isinstance(gc.get("generation_args"), dict) else gc
        s = per.setdefault(task, {})
        idx = d["evaluation_results"].index(r)
        for k, p in EEE_GEN.items():
            if k in ga and p not in s:
                base = "generation_config.generation_args" if "generation_args" in gc else "generation_config"
                v = ga[k]
                s[p] = rec(as_list(v) if p == "generation.until" else (as_float(v) if p in (
                    "generation.temperature", "generation.top_p") else v),
                    f"evaluation_results[{idx}].{base}.{k}")
    return per


def _norm_isf(p: float) -> float:
    return float(_stats.norm.isf(p))


def eee_stderr(r: dict) -> float | None:
    """A result's standard error as its record states it: ``uncertainty.standard_error.value``; else a confidence
    interval (``uncertainty.confidence_interval``, or early 0.2.0's ``score_details.confidence_interval``) as its
    half-width over z at its level (0.95 where none is stated) — a ± form (lower = −upper < 0, the score outside it)
    has half-width ``upper``, bounds the larger distance from the score; else ``standard_deviation`` / √``num_samples``."""
    sd = r.get("score_details") or {}
    u = sd.get("uncertainty") or {}
    se = (u.get("standard_error") or {}).get("value")
    if is_num(se):
        return float(se)
    ci = u.get("confidence_interval") or sd.get("confidence_interval")
    score = sd.get("score")
    if isinstance(ci, dict) and is_num(ci.get("lower")) and is_num(ci.get("upper")) and is_num(score):
        lo, hi = float(ci["lower"]), float(ci["upper"])
        level = ci.get("confidence_level") if is_num(ci.get("confidence_level")) else 0.95
        z = _norm_isf((1 - level) / 2)
        if lo < 0 and abs(lo + hi) < 1e-12 and not lo <= score <= hi:
            return hi / z
        if lo <= score <= hi:
            return max(hi - score, score - lo) / z
        return None
    if is_num(u.get("standard_deviation")) and isinstance(u.get("num_samples"), int) and u["num_samples"] > 0:
        return float(u["standard_deviation"]) / math.sqrt(u["num_samples"])
    return None


def eee_counts(d: dict) -> dict:
    """{task: docs} a record states: ``uncertainty.num_samples`` of any of the task's results, else the length of
    ``source_data.sample_ids``."""
    out, ids = {}, {}
    for task, _metric, r in eee_results(d):
        n = ((r.get("score_details") or {}).get("uncertainty") or {}).get("num_samples")
        if isinstance(n, int) and task not in out:
            out[task] = n
        sd = r.get("source_data")
        if isinstance(sd, dict) and isinstance(sd.get("sample_ids"), list) and sd["sample_ids"]:
            ids.setdefault(task, len(sd["sample_ids"]))
    return {**ids, **out}


def eee_version(d: dict) -> str:
    return f"Every Eval Ever {d.get('schema_version')}"


def eee_pair(case_dir, a: str, b: str, notes=None) -> dict:
    case_dir = Path(case_dir)
    da, db = load_json(case_dir / a), load_json(case_dir / b)
    sa, naa = eee_settings(da)
    sb, nab = eee_settings(db)
    settings, differs, na, why = combine(sa, sb, naa, nab)
    truth = {"case": case_dir.name, "kind": "pair"}
    va, vb = eee_version(da), eee_version(db)
    if va == vb:
        truth["harness"] = va
    else:
        truth["harness_a"], truth["harness_b"] = va, vb
    truth.update(a=a, b=b, settings=settings, differs=differs, not_applicable=na, not_applicable_reason=why)
    ta, tb = eee_task_settings(da), eee_task_settings(db)
    sbt, dbt, nabt = {}, {}, {}
    for t in sorted(set(ta) | set(tb)):
        x, y = ta.get(t, {}), tb.get(t, {})
        if not x and not y:
            continue
        s, dif, n, w = combine(x, y, greedy_na(x), greedy_na(y))
        sbt[t], dbt[t] = s, dif
        if n:
            nabt[t] = n
    if sbt:
        truth.update(settings_by_task=sbt, differs_by_task=dbt, not_applicable_by_task=nabt)
    truth["scores"] = pair_scores(eee_scores(da), eee_scores(db))
    unc = {}
    for side, d in (("a", da), ("b", db)):
        for task, metric, r in eee_results(d):
            se = eee_stderr(r)
            if se is not None:
                unc.setdefault(task, {}).setdefault(metric, {"a": None, "b": None})[side] = se
    counts = {}
    for side, d in (("a", da), ("b", db)):
        for task, n in eee_counts(d).items():
            counts.setdefault(task, {"a": None, "b": None})[side] = n
    if unc:
        truth["stderr"] = unc
    if counts:
        truth["n_docs"] = counts
    truth["per_doc"], truth["flips"] = {}, {}
    if notes:
        truth["notes"] = notes
    return truth


# ------------------------------------------------------------------------------------------------- inspect
ZSTD = 93


def _zip_member(z: zipfile.ZipFile, name: str) -> bytes:
    info = z.getinfo(name)
    if info.compress_type != ZSTD:
        return z.read(name)
    import zstandard  # inspect writes Zstandard members, which Python 3.11's zipfile cannot read
    z.fp.seek(info.header_offset)
    hdr = z.fp.read(30)
    n, m = struct.unpack("<HH", hdr[26:30])
    z.fp.seek(info.header_offset + 30 + n + m)
    data = z.fp.read(info.compress_size)
    return zstandard.ZstdDecompressor().decompressobj().decompress(data)


def inspect_log(path: Path) -> dict:
    """The log as one dict (``.json`` as is; ``.eval``: header.json plus samples/*.json)."""
    if path.suffix == ".json":
        return load_json(path)
    z = zipfile.ZipFile(io.BytesIO(path.read_bytes()))
    log = json.loads(_zip_member(z, "header.json"))
    names = sorted(n for n in z.namelist() if n.startswith("samples/") and n.endswith(".json"))
    log["samples"] = [json.loads(_zip_member(z, n)) for n in names]
    return log


INSPECT_GEN = {"temperature": "generation.temperature", "top_p": "generation.top_p",
               "top_k": "generation.top_k", "max_tokens": "generation.max_gen_toks",
               "stop_seqs": "generation.until", "seed": "generation.sampling_seed"}


def inspect_settings(log: dict) -> tuple[dict, dict]:
    e = log["eval"]
    s = {}
    if "model" in e:
        s["model.name"] = rec(e["model"], "eval.model")
    cfg = e.get("config") or {}
    if "limit" in cfg:
        s["data.limit"] = rec(cfg["limit"], "eval.config.limit")
    for where, src in (("eval.model_generate_config", e.get("model_generate_config") or {}),
                       ("plan.config", (log.get("plan") or {}).get("config") or {}),
                       ("eval.config", cfg)):
        for k, p in INSPECT_GEN.items():
            if k in src and p not in s:
                v = src[k]
                s[p] = rec(as_list(v) if p == "generation.until" else v, f"{where}.{k}")
    for i, step in enumerate((log.get("plan") or {}).get("steps") or []):
        if step.get("solver") == "system_message" and "template" in (step.get("params") or {}):
            s["prompt.system_prompt"] = rec(step["params"]["template"], f"plan.steps[{i}].params.template")
            break
    return s, greedy_na(s)


INSPECT_VALUE = {"C": 1, "I": 0}


def inspect_scores(log: dict) -> dict:
    task = log["eval"]["task"]
    out = {}
    for sc in (log.get("results") or {}).get("scores") or []:
        for mname, m in sc["metrics"].items():
            if is_num(m.get("value")):
                out[f"{sc['name']}/{mname}"] = m["value"]
    return {task: out}


def inspect_sample_values(log: dict) -> dict:
    """{scorer: {sample id: 0/1 (C/I) or the number}} of epoch 1 (logs here have one epoch)."""
    out = {}
    for smp in log.get("samples") or []:
        if smp.get("epoch", 1) != 1:
            continue
        for name, sc in (smp.get("scores") or {}).items():
            v = sc.get("value")
            v = INSPECT_VALUE.get(v, v) if isinstance(v, str) else v
            out.setdefault(name, {})[smp["id"]] = v
    return out


def inspect_prompts(log: dict) -> int:
    """Samples (epoch 1) whose input — the conversation the model was given — the log keeps: a string, or messages."""
    return sum(1 for smp in log.get("samples") or [] if smp.get("epoch", 1) == 1
               and isinstance(smp.get("input"), (str, list)) and smp["input"])


def inspect_pair(case_dir, a: str, b: str, notes=None) -> dict:
    case_dir = Path(case_dir)
    la, lb = inspect_log(case_dir / a), inspect_log(case_dir / b)
    sa, naa = inspect_settings(la)
    sb, nab = inspect_settings(lb)
    settings, differs, na, why = combine(sa, sb, naa, nab)
    va = f"inspect_ai {la['eval'].get('packages', {}).get('inspect_ai')}"
    vb = f"inspect_ai {lb['eval'].get('packages', {}).get('inspect_ai')}"
    truth = {"case": case_dir.name, "kind": "pair"}
    if va == vb:
        truth["harness"] = va
    else:
        truth["harness_a"], truth["harness_b"] = va, vb
    truth.update(a=a, b=b, settings=settings, differs=differs, not_applicable=na, not_applicable_reason=why,
                 scores=pair_scores(inspect_scores(la), inspect_scores(lb)))
    task = la["eval"]["task"]
    ids_a = {s["id"] for s in la.get("samples") or []}
    ids_b = {s["id"] for s in lb.get("samples") or []}
    truth["per_doc"] = {task: {"n_a": len(ids_a), "n_b": len(ids_b), "n_shared": len(ids_a & ids_b),
                               "prompts_a": inspect_prompts(la), "prompts_b": inspect_prompts(lb)}}
    pa, pb = inspect_sample_values(la), inspect_sample_values(lb)
    flips = {}
    for name in sorted(set(pa) & set(pb)):
        f = flips_of(pa[name], pb[name])
        if f is not None:
            flips[name] = f
    truth["flips"] = {task: flips} if flips else {}
    if notes:
        truth["notes"] = notes
    return truth


# ---------------------------------------------------------------------------------------------- NeMo Evaluator
def nemo_command(command: str | None) -> dict:
    """{flag: (value, key)} of the harness's command (the part after the last ``&&``): ``--temperature 0.0`` →
    ``temperature``; a flag followed by another flag is True."""
    import shlex

    if not command:
        return {}
    words = shlex.split(command.split("&&")[-1])
    out = {}
    for i, w in enumerate(words):
        if w.startswith("--") and len(w) > 2:
            nxt = words[i + 1] if i + 1 < len(words) else None
            out[w[2:].replace("-", "_")] = (nxt if nxt is not None and not nxt.startswith("--") else True,
                                            f"command: {w}")
    return out


def _num(v):
    if isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            return v
        return int(f) if f.is_integer() and "." not in v and "e" not in v.lower() else f
    return v


def nemo_settings(d: dict) -> dict:
    """NeMo Evaluator's results.yml settings: ``config.params`` where not null (``limit_samples`` null is no limit),
    else the command's flag; the model id; the system_message interceptor's text, or none where the interceptors are
    listed without one."""
    params = (d.get("config") or {}).get("params") or {}
    cmd = nemo_command(d.get("command"))
    s = {}
    for path, pkey, ckey in (("generation.max_gen_toks", "max_new_tokens", "max_tokens"),
                             ("generation.temperature", "temperature", "temperature"),
                             ("generation.top_p", "top_p", "top_p"), ("data.limit", "limit_samples", "first_n")):
        if pkey in params and (params[pkey] is not None or pkey == "limit_samples"):
            v = params[pkey]
            s[path] = rec(float(v) if path in ("generation.temperature", "generation.top_p") and v is not None
                          else v, f"config.params.{pkey}")
        elif ckey in cmd:
            v, key = cmd[ckey]
            v = _num(v)
            s[path] = rec(float(v) if path in ("generation.temperature", "generation.top_p") else v, key)
    ep = ((d.get("target") or {}).get("api_endpoint")) or {}
    if ep.get("model_id"):
        s["model.name"] = rec(ep["model_id"], "target.api_endpoint.model_id")
    for i, ic in enumerate(((ep.get("adapter_config") or {}).get("interceptors")) or []):
        if ic.get("name") == "system_message" and ic.get("enabled") is not False and "system_message" in (
                ic.get("config") or {}):
            s["prompt.system_prompt"] = rec(ic["config"]["system_message"], f"target.api_endpoint.adapter_config."
                                                                            f"interceptors[{i}].config.system_message")
    return s


def nemo_scores(d: dict) -> tuple[dict, dict]:
    """({task: {metric_score: value}}, {task: {metric_score: stderr}}) of results.tasks (and of groups that are not
    tasks); a score named as its metric is the metric alone."""
    res = d.get("results") or {}
    tasks = res.get("tasks") or {}
    both = {**tasks, **{g: r for g, r in (res.get("groups") or {}).items() if g not in tasks}}
    scores, errs = {}, {}
    for task, r in both.items():
        for metric, m in (r.get("metrics") or {}).items():
            for name, sc in (m.get("scores") or {}).items():
                key = metric if name == metric else f"{metric}_{name}"
                scores.setdefault(task, {})[key] = sc.get("value")
                se = (sc.get("stats") or {}).get("stderr")
                if is_num(se):
                    errs.setdefault(task, {})[key] = se
    return scores, errs


def nemo_results_pair(case_dir, a: str, b: str, notes=None) -> dict:
    import yaml

    case_dir = Path(case_dir)
    da, db = (yaml.safe_load((case_dir / x).read_text(encoding="utf-8")) for x in (a, b))
    sa, sb = nemo_settings(da), nemo_settings(db)
    settings, differs, na, why = combine(sa, sb, greedy_na(sa), greedy_na(sb))
    (ga, ea), (gb, eb) = nemo_scores(da), nemo_scores(db)
    stderr = {t: {m: {"a": ea.get(t, {}).get(m), "b": eb.get(t, {}).get(m)} for m in set(ea.get(t, {})) |
                  set(eb.get(t, {}))} for t in set(ea) | set(eb)}
    truth = {"case": case_dir.name, "kind": "pair", "harness": "NeMo Evaluator", "a": a, "b": b,
             "settings": settings, "differs": differs, "not_applicable": na, "not_applicable_reason": why,
             "scores": pair_scores(ga, gb), "stderr": stderr, "per_doc": {}, "flips": {}}
    if notes:
        truth["notes"] = notes
    return truth


def nemo_processed(d: dict) -> tuple[str, dict]:
    """(the model, {benchmark: {score name without the benchmark's prefix, a doubled name once: value}}) of a
    processed_results.json of one model and one invocation per benchmark."""
    models = {m for b in d["benchmarks"].values() for m in b["models"]}
    assert len(models) == 1, models
    (model,) = models
    out = {}
    for bench, b in d["benchmarks"].items():
        (entry,) = b["models"][model]
        for k, v in entry["scores"].items():
            key = k[len(bench) + 1:] if k.startswith(bench + "_") else k
            half = (len(key) - 1) // 2
            if len(key) % 2 == 1 and key[half] == "_" and key[:half] == key[half + 1:]:
                key = key[:half]
            out.setdefault(bench, {})[key] = v
    return model, out


def nemo_processed_pair(case_dir, a: str, b: str, notes=None) -> dict:
    case_dir = Path(case_dir)
    (ma, sa), (mb, sb) = (nemo_processed(load_json(case_dir / x)) for x in (a, b))
    settings, differs, na, why = combine({"model.name": rec(ma, "benchmarks.*.models")},
                                         {"model.name": rec(mb, "benchmarks.*.models")}, {}, {})
    truth = {"case": case_dir.name, "kind": "pair", "harness": "NeMo Evaluator (launcher export)", "a": a, "b": b,
             "settings": settings, "differs": differs, "not_applicable": na, "not_applicable_reason": why,
             "scores": pair_scores(sa, sb), "per_doc": {}, "flips": {}}
    if notes:
        truth["notes"] = notes
    return truth


def refusal(case_dir, file: str, tool: str, notes=None) -> dict:
    """A file of another tool that compare must refuse, naming the tool."""
    truth = {"case": Path(case_dir).name, "kind": "refusal", "harness": tool, "file": file, "tool": tool}
    if notes:
        truth["notes"] = notes
    return truth
