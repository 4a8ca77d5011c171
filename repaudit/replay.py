"""Rebuild runnable configurations from repaudit run files, and the hybrids between two of them.

A factor is *replayable* when this machine can set it: everything a RunConfig controls. The
machine, the library versions and weights that are not on disk are not; they are listed as such
and their effect ends up in the attribution's residual.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repaudit.errors import RepauditError
from repaudit.records import RunRecord
from repaudit.runner import RunConfig

#: replayable factor -> (RunConfig fields it sets, how to read them from a record)
REPLAYABLE: dict[str, tuple[tuple[str, ...], Any]] = {
    "dtype": (("dtype",), lambda r: (r.fingerprint.backend.dtype,)),
    "batch_size": (("batch_size",), lambda r: (r.fingerprint.backend.batch_size,)),
    "padding_side": (("padding_side",), lambda r: (r.fingerprint.backend.padding_side,)),
    "scoring_strategy": (("scoring_strategy",), lambda r: (r.fingerprint.backend.scoring_strategy,)),
    "prompt_format": (("prompt_format",), lambda r: (r.fingerprint.prompt.format,)),
    "num_fewshot": (("num_fewshot",), lambda r: (r.fingerprint.fewshot.num_fewshot,)),
    "fewshot_seed": (("fewshot_seed",), lambda r: (r.fingerprint.seeds.fewshot,)),
    "chat_template": (("chat_template", "system_prompt"),
                      lambda r: (r.fingerprint.prompt.chat_template, r.fingerprint.prompt.system_prompt)),
    "generation": (("until", "max_gen_toks", "do_sample", "temperature", "top_p", "top_k"),
                   lambda r: (None, None, False, 0.0, 1.0, 0) if r.fingerprint.generation is None else (
                       list(r.fingerprint.generation.until), r.fingerprint.generation.max_gen_toks,
                       r.fingerprint.generation.do_sample, r.fingerprint.generation.temperature,
                       r.fingerprint.generation.top_p, r.fingerprint.generation.top_k)),
}


def config_from_record(rec: RunRecord, data_dir: Path | None, model: str | None = None,
                       cache_dir: Path | None = None) -> RunConfig:
    """The RunConfig that reproduces ``rec`` on this machine.

    Raises:
        RepauditError: the run read local data but no ``data_dir`` is given.
    """
    fp = rec.fingerprint
    if fp.data.source == "local" and data_dir is None:
        raise RepauditError(f"the runs read local data ({fp.data.location}): pass --data-dir")
    cfg: dict[str, Any] = dict(
        task=fp.data.task, model=model or ("default" if fp.model.source == "gguf-package" else fp.model.name),
        revision=fp.model.revision if fp.model.source == "hub" else None, data_dir=data_dir,
        split=fp.data.split, limit=fp.data.limit, trust_remote_code=fp.model.trust_remote_code,
        seed=fp.seeds.python, numpy_seed=fp.seeds.numpy, torch_seed=fp.seeds.torch, device=fp.backend.device,
        stop_at_eos=bool(fp.generation and fp.generation.eos_token in fp.generation.until), cache_dir=cache_dir)
    for fields, read in REPLAYABLE.values():
        cfg.update(zip(fields, read(rec)))
    if cfg.get("until") is not None and fp.generation and fp.generation.eos_token in cfg["until"]:
        cfg["until"] = [u for u in cfg["until"] if u != fp.generation.eos_token]  # re-added by stop_at_eos
    return RunConfig(**cfg)


def differing_factors(a: RunRecord, b: RunRecord) -> tuple[list[str], list[str]]:
    """``(replayable factors that differ, other fingerprint parts that differ and cannot be replayed)``."""
    replay = [name for name, (_, read) in REPLAYABLE.items() if read(a) != read(b)]
    fa, fb = a.fingerprint, b.fingerprint
    fixed = []
    for part, xa, xb in (("hardware", fa.hardware, fb.hardware), ("library versions", fa.software, fb.software),
                         ("model weights", fa.model.weights_sha256, fb.model.weights_sha256),
                         ("tokenizer", fa.model.tokenizer_sha256, fb.model.tokenizer_sha256),
                         ("data", (fa.data.task, fa.data.sha256, fa.data.limit), (fb.data.task, fb.data.sha256, fb.data.limit))):
        if xa != xb:
            fixed.append(part)
    return replay, fixed


def hybrid(cfg_a: RunConfig, cfg_b: RunConfig, factors: list[str], subset: frozenset[int]) -> RunConfig:
    """A's configuration with B's values for the factors whose indices are in ``subset``."""
    update = {}
    for i in subset:
        for f in REPLAYABLE[factors[i]][0]:
            update[f] = getattr(cfg_b, f)
    return cfg_a.model_copy(update=update)
