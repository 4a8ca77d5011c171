"""The output layer at the scored positions only, with the bits of the whole-sequence output layer.

A causal LM's forward ends in ``lm_head(hidden)`` over every position of every row: a ``(rows × width, vocabulary)``
product whose result (1.3 GB in float32 for 64 rows of 100 tokens and SmolLM2's 49,152 tokens) is written to memory
and then almost all thrown away — scoring reads only the positions that predict continuation tokens. Both scorers
(:mod:`repaudit.backends.hf`'s full-sequence path and :mod:`repaudit.backends.prefix`) run the decoder
(``model.base_model``), gather the hidden states at the scored positions, and put only those rows through
:meth:`ScoredHead.logits`.

**Bit-identity.** Each logit is a dot product over the hidden size, and which matrix-product kernel computes it
depends on the number of rows ``M``: on this CPU (torch 2.13, AVX2, oneDNN/MKL), float32 products of 1–3 rows (one
thread) or 1–11 rows other than 4 and 8 (two threads) differ in the last bits from the same rows inside a larger
product, while every ``M`` ≥ 12 gives exactly the large product's bits (measured for hidden sizes 64, 576 and 2,048,
vocabularies of 3,000 and 49,152; bfloat16 agreed for every ``M``). So on the CPU the gathered rows are padded to at
least :func:`min_rows` (``8 ×`` torch's thread count, at least 16) rows, and a batch whose whole product is smaller
than that runs the whole product, as lm-eval does. On a GPU the rows are not padded: cuBLAS picks kernels by shape
too, and whether the gathered product keeps lm-eval's bits there is what ``bench/gpu_check.sh`` measures.

**Which models.** The architectures in :data:`PLAIN_HEADS` end their forward in ``lm_head(hidden)`` and, for
Gemma 2/3, a tanh soft-cap (``final_logit_softcapping``), which :meth:`ScoredHead.logits` applies too. Any other
architecture (a scaled head such as Cohere's ``logit_scale`` or Granite's ``logits_scaling``, or remote code) keeps the
whole forward pass in the full-sequence path: :attr:`ScoredHead.plain` is False.
"""

from __future__ import annotations

import time

from repaudit.backends.device import Seconds, clock
from repaudit.backends.gather import ChoiceIndex

#: ``config.model_type`` of the architectures whose logits are ``lm_head(last hidden state)`` (then the soft-cap
#: where the config sets one): the full-sequence path may run their output layer at the scored positions only
PLAIN_HEADS = frozenset({"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gpt_neox",
                         "olmo", "olmo2", "olmoe", "phi", "phi3", "stablelm", "gemma", "gemma2", "smollm3", "gpt2",
                         "starcoder2"})


def min_rows(torch, device: str) -> int:
    """The fewest rows the output layer is run on (module docstring): on the CPU ``max(16, 8 × threads)``, so that
    the product takes the kernel path of a large one; 1 elsewhere."""
    return max(16, 8 * torch.get_num_threads()) if torch.device(device).type == "cpu" else 1


class ScoredHead:
    """``model``'s output layer (and soft-cap) applied to gathered hidden states.

    Args:
        model: a transformers ``*ForCausalLM``.
        device: torch device string.
    """

    def __init__(self, model, device: str):
        import torch

        self.torch = torch
        self.base = model.base_model
        self.head = model.get_output_embeddings()
        self.softcap = getattr(model.config, "final_logit_softcapping", None)
        #: whether the model's logits are exactly :meth:`logits` of its last hidden state (:data:`PLAIN_HEADS`)
        self.plain = getattr(model.config, "model_type", None) in PLAIN_HEADS and self.head is not None
        self.min_rows = min_rows(torch, device)

    def logits(self, rows):
        """``(n, vocabulary)`` logits of ``rows`` (``(n, hidden)`` last hidden states) in the model's dtype, each row
        with the bits the whole-sequence output layer gives it (padded to :attr:`min_rows` rows, then cut back)."""
        n = rows.shape[0]
        if n < self.min_rows:
            rows = self.torch.cat([rows, rows[:1].expand(self.min_rows - n, -1)])
        logits = self.head(rows)[:n]
        if self.softcap:
            logits = self.torch.tanh(logits / self.softcap) * self.softcap
        return logits


def score_positions(torch, device: str, forward, head, where, index: ChoiceIndex, parts: Seconds
                    ) -> list[tuple[float, bool]]:
    """One batch scored: ``forward()`` (the decoder's hidden states, or whole logits), ``head`` on its rows at
    ``where`` (``(2, positions)``: row, position), the log-softmax there in the model's dtype (lm-eval's), the
    greedy check and the choices' sums on the device (:meth:`ChoiceIndex.gather`), then one read to the host.

    Adds the seconds of each step to ``parts`` (``forward``, ``logsoftmax``: output layer, log-softmax and gather,
    ``transfer``: the read), each ended by a synchronised clock (:func:`repaudit.backends.device.clock`).

    Returns:
        :meth:`ChoiceIndex.read`'s list: per choice, (summed log-probability in nats, all tokens greedy).
    """
    t0 = clock(device)
    with torch.inference_mode():
        hidden = forward()
        t1 = clock(device)
        logprobs = torch.log_softmax(head(hidden[where[0], where[1]]), dim=-1)
        gathered = index.gather(logprobs, logprobs.argmax(-1))
        t2 = clock(device)
    out = index.read(gathered)
    parts["forward"] += t1 - t0
    parts["logsoftmax"] += t2 - t1
    parts["transfer"] += time.perf_counter() - t2
    return out
