"""The prompt text of each doc of a repaudit run, rebuilt from its fingerprint and the data, and checked.

A repaudit run file keeps each doc's ``prompt_hash`` (sha256 of the first request's context, as lm-eval's
sample logs compute it) but not the prompt: run files stay small and hold no benchmark text. The per-doc
browser needs the text, so it is rebuilt here by the run's own code path — the recorded configuration
(:func:`repaudit.importers.runfile.config_from_record`), the same docs and few-shot examples
(:func:`repaudit.run.docs.load_docs`) and the same renderer (:func:`repaudit.run.runner.render_requests`)
— and a rebuilt prompt is shown **only if its sha256 equals the recorded** ``prompt_hash``. No model
weights are loaded; a chat template needs the tokenizer only.

Chosen over an opt-in ``run --log-prompts`` because it works on every run file already written, keeps
benchmark text out of files that get shared, and the hash check makes a wrong rebuild impossible to show.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from repaudit.errors import RepauditError
from repaudit.hashing import sha256_text
from repaudit.run.records import RunRecord


@dataclass
class Prompts:
    """Rebuilt prompts of one run.

    Attributes:
        texts: doc_id -> prompt text, for the docs whose rebuilt prompt hashes to the recorded ``prompt_hash``.
        mismatched: docs whose rebuilt prompt does not (their text is not shown).
        note: why no prompt could be rebuilt (data or tokenizer unavailable), or "" when it ran.
    """

    texts: dict[int, str] = field(default_factory=dict)
    mismatched: list[int] = field(default_factory=list)
    note: str = ""


class _ChatTokenizer:
    """The one thing rendering needs from a backend: the model's chat template (tokenizer only)."""

    def __init__(self, tok, name: str) -> None:
        self.tok, self.name = tok, name

    def apply_chat_template(self, user: str, system: str | None, turns=()) -> str:
        from repaudit.backends.tokens import apply_chat_template

        return apply_chat_template(self.tok, self.name, user, system, turns)


def rebuild_prompts(record: RunRecord, data_dir: Path | None = None, model: str | None = None,
                    cache_dir: Path | None = None) -> Prompts:
    """Each doc's prompt (the first request's context) as the run rendered it, hash-checked.

    ``data_dir``/``model``/``cache_dir`` as for ``attribute`` (where the data and the tokenizer are). Never
    raises for unavailable data or tokenizer: the reason goes into :attr:`Prompts.note`.
    """
    from repaudit.importers.runfile import config_from_record
    from repaudit.run.docs import load_docs
    from repaudit.run.runner import check_config, generation_settings, render_requests

    try:
        cfg = config_from_record(record, data_dir, model, cache_dir)
        task = check_config(cfg)
        docset = load_docs(task, cfg, Console(stderr=True, quiet=True))
        chat = _tokenizer(cfg) if cfg.prompt.chat_template else None
        eos = getattr(chat.tok, "eos_token", None) if chat is not None else None
        rendered = render_requests(task, cfg, docset, chat, generation_settings(task, cfg, eos))
    except (RepauditError, OSError, ValueError) as e:
        return Prompts(note=f"prompts not rebuilt: {e}")
    wanted = {d.doc_id: d.prompt_hash for d in record.docs}
    out = Prompts()
    for rd in rendered:
        h = wanted.get(rd.doc.doc_id)
        if h is None:
            continue
        text = rd.requests[0].context
        if sha256_text(text) == h:
            out.texts[rd.doc.doc_id] = text
        else:
            out.mismatched.append(rd.doc.doc_id)
    missing = len(wanted) - len(out.texts) - len(out.mismatched)
    if out.mismatched or missing:
        out.note = (f"{len(out.texts)} of {len(wanted)} prompts rebuilt; {len(out.mismatched)} rebuilt prompts do "
                    f"not match the recorded prompt_hash and {missing} docs were not found: their text is not shown")
    return out


def _tokenizer(cfg) -> _ChatTokenizer:
    from transformers import AutoTokenizer

    from repaudit.backends.model_source import resolve_model
    from repaudit.run.config import default_cache_dir

    resolved = resolve_model(cfg.model, cfg.revision, cfg.cache_dir or default_cache_dir())
    return _ChatTokenizer(AutoTokenizer.from_pretrained(str(resolved.path)), resolved.name)
