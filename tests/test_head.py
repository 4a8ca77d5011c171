"""The output layer at the scored positions only: the whole forward pass's bits, row for row."""

from __future__ import annotations

import pytest
import torch

from repaudit.backends.head import ScoredHead, min_rows


@pytest.fixture(scope="module")
def model(tiny_model):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32).eval()


@pytest.mark.parametrize("rows, width, scored", [(1, 5, 1), (1, 40, 1), (3, 17, 2), (8, 60, 7), (2, 300, 30)])
def test_logits_at_scored_positions_equal_the_whole_forward_pass_bit_for_bit(model, rows, width, scored):
    torch.manual_seed(rows * width)
    ids = torch.randint(0, model.config.vocab_size, (rows, width))
    head = ScoredHead(model, "cpu")
    where = torch.tensor([(b, t) for b in range(rows) for t in range(width - scored, width)]).T
    with torch.inference_mode():
        whole = model(ids).logits[where[0], where[1]]
        hidden = head.base(input_ids=ids, use_cache=False).last_hidden_state
        ours = head.logits(hidden[where[0], where[1]])
    assert head.plain and ours.shape == whole.shape
    if rows * width >= head.min_rows:  # the backend runs the whole pass for smaller products (module docstring)
        assert torch.equal(ours, whole)


def test_rows_are_padded_on_the_cpu_only_and_a_scaled_head_is_not_plain(model, monkeypatch):
    assert min_rows(torch, "cpu") == max(16, 8 * torch.get_num_threads())
    assert min_rows(torch, "meta") == 1
    monkeypatch.setattr(model.config, "model_type", "cohere")  # logits × logit_scale: not lm_head alone
    assert not ScoredHead(model, "cpu").plain
