"""The backend base class: what a subclass must implement, what it inherits, and what configure resets."""

from __future__ import annotations

from pathlib import Path

import pytest

from repaudit.backends.base import Backend, BackendInfo
from repaudit.backends.model_source import ResolvedModel
from repaudit.backends.tokens import RequestEncoder
from repaudit.errors import RepauditError
from repaudit.hashing import sha256_json
from repaudit.settings import ServingSettings


class _Tok:
    bos_token_id, eos_token_id = 1, 2


class _Echo(Backend):
    """The smallest complete backend: every request's answer is its continuation's length."""

    def __init__(self):
        self.resolved = ResolvedModel(name="echo", source="local", path=Path("."), revision=None,
                                      weights_sha256="w" * 64)
        self.info = BackendInfo(name="echo", device="cpu", dtype="float32", max_length=64, add_special_tokens=False,
                                tokenizer_sha256="t" * 64, bos_token=None, eos_token=None, pad_token=None,
                                chat_template_sha256=None, num_parameters=0, architecture="Echo")
        self.tokenizer = _Tok()
        self.encoder = RequestEncoder(self.tokenizer)
        self.set_up = []
        self.configure(ServingSettings())

    def _configured(self, serving):
        self.set_up.append(serving.scoring_strategy)

    def loglikelihood(self, requests, cache=None, progress=None):
        self.tokens_computed += len(requests)
        return []

    def generate_until(self, requests, cache=None, progress=None):
        return []


def test_a_backend_without_its_two_abstract_methods_cannot_be_built():
    class Half(Backend):
        def loglikelihood(self, requests, cache=None, progress=None):
            return []

    with pytest.raises(TypeError, match="generate_until"):
        Half()


def test_configure_sets_the_run_settings_resets_the_counters_and_calls_the_hook():
    be = _Echo()
    be.loglikelihood([None, None])
    be.batch_sizes_used[8] += 1
    be.encoder.bos_first[True] += 3
    serving = ServingSettings(batch_size=3, padding_side="left", scoring_strategy="shared_prefix",
                              add_bos_token=False)
    be.configure(serving)
    assert (be.batch_size, be.padding_side, be.scoring_strategy) == (3, "left", "shared_prefix")
    assert be.serving is serving and be.encoder.add_bos_token is False
    assert be.tokens_computed == 0 and not be.batch_sizes_used and not be.encoder.bos_first and be.forward_s == 0
    assert be.set_up == ["full_sequence", "shared_prefix"]


def test_the_hooks_default_to_saying_nothing_and_the_keys_follow_the_settings():
    be = _Echo()
    assert be.pop_load_parts() is None and be.plan_cost([], None) is None
    key, speed = be.config_key("loglikelihood"), be.speed_key()
    # the default key: weights, tokenizer, dtype, device, then batch size and window
    assert key == sha256_json(["loglikelihood", "echo", "w" * 64, "t" * 64, "float32", "cpu", 8, 64])
    be.configure(ServingSettings(padding_side="left"))
    assert be.config_key("loglikelihood") == key  # padding is not in the default key
    be.configure(ServingSettings(batch_size=4))
    assert be.config_key("loglikelihood") != key and be.speed_key() == speed
    be.configure(ServingSettings(scoring_strategy="shared_prefix"))
    assert be.speed_key() != speed


@pytest.mark.parametrize("field, value, message", [("batch_size", 0, "--batch-size must be between 1 and 65536"),
                                                  ("padding_side", "middle", "unknown padding side 'middle'"),
                                                  ("scoring_strategy", "fast", "unknown scoring strategy 'fast'")])
def test_serving_values_are_checked_by_the_record(field, value, message):
    """Backends take the record: its types refuse a bad value (named as its option through RunConfig)."""
    from pydantic import ValidationError

    from repaudit.run.config import RunConfig

    with pytest.raises(ValidationError):
        ServingSettings(**{field: value})
    with pytest.raises(RepauditError, match=message):
        RunConfig(task="arc_easy", **{field: value})
    assert ServingSettings(batch_size="auto", padding_side="left", scoring_strategy="shared_prefix")
