"""The prefix_cache generation strategy gives the exact strategy's generations, is recorded and compared as a
factor, and refuses what it cannot do; an lm-eval GSM8K run replays with its unstated sampling settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from repaudit.backends.fastgen import prefix_groups, shared_prefix_length
from repaudit.errors import RepauditError
from repaudit.run.config import RunConfig

GSM = Path(__file__).resolve().parent / "fixtures" / "lmeval_gsm8k"


def test_shared_prefix_leaves_every_prompt_a_token_of_its_own():
    assert shared_prefix_length([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 9]]) == 2
    assert shared_prefix_length([[1, 2, 3], [1, 2, 3]]) == 2  # identical prompts: the last token is their own
    assert shared_prefix_length([[1, 2], [3, 4]]) == 0
    assert shared_prefix_length([[1, 2, 3]]) == 0  # one prompt: nothing to share


def test_prefix_groups_keep_the_long_block_when_a_few_prompts_differ():
    """lm-eval's first_n sampler on an in-split pool: docs 0..4 get another block than the rest; grouping every
    prompt would shrink the shared prefix to its first example, so they form their own groups."""
    block = list(range(100, 160))
    other = block[:40] + list(range(300, 320))  # shares 40 tokens with the block, then differs
    prompts = [other + [1], [7, 8], other + [6], [9]] + [block + [k] for k in range(10)]
    groups = prefix_groups(prompts)
    assert groups == [[0, 2], [1, 3], list(range(4, 14))]
    # with only three block prompts, one group sharing 40 tokens saves more than two groups
    assert prefix_groups([other + [1], other + [2], block + [3], block + [4], block + [5]]) == [[0, 1, 2, 3, 4]]
    assert prefix_groups([[1, 2], [3, 4]]) == [[0, 1]]  # nothing shared: one pooled group


def test_prefix_cache_is_refused_where_it_cannot_run():
    with pytest.raises(RepauditError, match="hf backend"):
        RunConfig(task="gsm8k", backend="vllm", generation_strategy="prefix_cache")
    with pytest.raises(RepauditError, match="decodes greedily"):
        RunConfig(task="gsm8k", generation_strategy="prefix_cache", do_sample=True, temperature=0.7)
    with pytest.raises(RepauditError, match="unknown generation strategy 'fast'"):
        RunConfig(task="gsm8k", generation_strategy="fast")


@pytest.mark.parametrize("fewshot_ids", [[0, 1], None], ids=["fixed_fewshot", "per_doc_fewshot"])
def test_prefix_cache_generates_what_exact_generates(tiny_model, shared_data, tmp_path, fewshot_ids):
    """GSM8K on the tiny model, 6 docs through 2 slots (rows leave and join mid-flight, prompts of different
    lengths): the same text, token count and finish reason per doc; with fixed few-shot ids the shared block is
    prefilled once, so fewer positions are prefilled and decoded than by lm-eval's batches."""
    from repaudit.audit.compare import compare
    from repaudit.importers.detect import load_run
    from repaudit.run.records import write_record
    from repaudit.run.runner import BackendPool, run

    pool = BackendPool()
    recs, tokens = {}, {}
    for strategy in ("exact", "prefix_cache"):
        cfg = RunConfig(task="gsm8k", model=str(tiny_model), data_dir=shared_data, limit=6, num_fewshot=2,
                        fewshot_ids=fewshot_ids, max_gen_toks=24, batch_size=2, generation_strategy=strategy,
                        cache_dir=tmp_path / "c")
        recs[strategy] = run(cfg, backends=pool)
        tokens[strategy] = dict(next(iter(pool._loaded.values())).gen_tokens)
        write_record(recs[strategy], tmp_path / f"{strategy}.json")
    a, b = recs["exact"].docs, recs["prefix_cache"].docs
    assert [d.generation for d in a] == [d.generation for d in b]
    assert [(d.generated_tokens, d.finish) for d in a] == [(d.generated_tokens, d.finish) for d in b]
    assert recs["exact"].fingerprint.settings.generation.generation_strategy == "exact"
    assert recs["prefix_cache"].fingerprint.settings.generation.generation_strategy == "prefix_cache"
    assert tokens["prefix_cache"]["decoded"] <= tokens["exact"]["decoded"]
    if fewshot_ids:
        assert tokens["prefix_cache"]["prefilled"] < tokens["exact"]["prefilled"]
    c = compare(load_run(tmp_path / "exact.json"), load_run(tmp_path / "prefix_cache.json"), n_boot=100)
    differ = {(d.group, d.field) for d in c.differing()}
    assert ("generation", "generation_strategy") in differ


def test_lmeval_gsm8k_run_replays_with_unstated_sampling_as_greedy(tiny_model, shared_data):
    """lm-eval's GSM8K YAML states do_sample and temperature but not top_p/top_k: they are lm-eval's defaults
    (unused by greedy decoding), not an error (a float('<not recorded>') crashed the replay)."""
    from repaudit.audit.replay import load_replay_source

    src = load_replay_source(GSM / "gsm8k_32", shared_data, str(tiny_model), need_docs=False)
    cfg = src.config
    g = cfg.generation
    assert (g.do_sample, g.temperature, g.top_p, g.top_k) == (False, 0.0, 1.0, 0)
    assert g.max_gen_toks == 32 and g.generation_strategy == "exact"
    fast = cfg.model_copy(update={"generation_strategy": "prefix_cache"})
    assert fast.generation.generation_strategy == "prefix_cache"
