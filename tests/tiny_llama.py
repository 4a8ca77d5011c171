"""The tests' tiny random Llama, as a plain function: the ``tiny_model`` fixture (tests/conftest.py) and
``bench/json_identity.py`` build the same model from it."""

from __future__ import annotations

from pathlib import Path


def save_tiny_llama(gguf: Path, out: Path) -> Path:
    """A randomly initialised 2-layer Llama (head_dim 32) with the tokenizer of the GGUF file ``gguf`` (SmolLM2's),
    saved to ``out`` (seed 0: the same weights every time); returns ``out``."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=32, max_position_embeddings=2048,
                         tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    # Random init gives near-uniform logits; scale up the embeddings so that choices differ clearly.
    with torch.no_grad():
        model.model.embed_tokens.weight.mul_(20)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out
