"""``repaudit determinism``'s serving axes: concurrency (a served model among other users' requests), the engine's
prefix cache cold and warm, and whether a sampling seed is honoured (:mod:`repaudit.audit.determinism` says what each
measures and how it is judged).
"""

from __future__ import annotations

import time

from repaudit.audit.determinism import AxisPoint, AxisResult, point_verdict
from repaudit.audit.determinism_probe import Context, Pass, Probe, compare, first_divergence, keep, result, skipped
from repaudit.settings import GenerationSettings
from repaudit.tasks.requests import GenerateRequest

#: why prompt log-probabilities cannot show a warm prefix cache on vLLM (vllm/sampling_params.py, 0.32)
PROMPT_LOGPROBS_SKIP = ("vLLM does not read its prefix cache for requests that ask for prompt log-probabilities "
                        "(SamplingParams.skip_reading_prefix_cache defaults to True for them), so on vLLM a warm "
                        "cache equals a cold one for log-likelihoods by construction; the generations read it")


def axis_concurrency(c: Context) -> AxisResult:
    """A served model: each probed doc's requests sent alone (one request in flight), then among N − k requests of
    other docs all in flight at once (one row per HTTP request), for every N."""
    p = c.probe
    if p.cfg.serving.backend != "openai":
        return skipped("concurrency", "a served model's axis (--backend openai): in-process, the batch axis puts each "
                                      "doc among other requests in one forward pass")
    t0 = time.perf_counter()
    sizes = sorted(set(c.opts.concurrency) | {1})
    with c.bar("concurrency", len(p.docs) * len(sizes)) as bar:
        alone = []
        for rd in p.docs:
            alone.append(p.answer(rd.all_requests, 1, concurrency=1))
            bar.advance(1)
        ref = p.score(alone)
        points = []
        for n in sizes[1:]:
            answers, short = [], 0
            for i in range(len(p.docs)):
                reqs, at, k = p.needle(i, n)
                short += len(reqs) < n and k < n
                got = p.answer(reqs, 1, concurrency=n)
                answers.append([got[j] for j in at])
                bar.advance(1)
            pt = compare(p, ref, p.score(answers), f"N={n}")
            if short:
                pt.note = f"{short} docs among fewer than {n} requests: too few other requests in the split"
            points.append(pt)
    notes = ["each request is its own HTTP request, all N in flight at once: the server batches them as it batches "
             "its users' requests (continuous batching); the reference sends the doc's requests one at a time"]
    return result("concurrency", "N=1 (alone)", ref, points, notes, t0)


def _generations(p: Probe, settings: GenerationSettings, backend=None) -> list[list]:
    """One generation per probed doc, of its first request's context under ``settings`` (no batch store)."""
    b = backend or p.backend
    b.configure(p.cfg.serving)
    reqs = [GenerateRequest(rd.all_requests[0].context, settings) for rd in p.docs]
    return [[g] for g in b.generate_until(reqs, None, None)]


def compare_texts(p: Probe, ref: list[list], other: list[list], label: str, settings: GenerationSettings
                  ) -> AxisPoint:
    """Generations against the reference's, text and finish bit for bit; a doc whose text differs counts as a
    flip (its sample, the prediction of a sampled run, differs). Kept as traces where asked."""
    reqs = [[GenerateRequest(rd.all_requests[0].context, settings)] for rd in p.docs]
    keep(p, "reference", Pass(ref, []), reqs)
    keep(p, label, Pass(other, []), reqs)
    changed, divergence = [], {}
    for rd, a, b in zip(p.docs, ref, other):
        if a[0].text != b[0].text or a[0].finish != b[0].finish:
            changed.append(rd.doc.doc_id)
            divergence[rd.doc.doc_id] = first_divergence(p.backend, a[0].text, b[0].text)
    return AxisPoint(label=label, n_docs=len(p.docs), docs_changed=len(changed), requests_changed=len(changed),
                     max_abs_delta=None, doc_max_abs_delta=[], flips=len(changed), changed_doc_ids=changed,
                     flipped_doc_ids=list(changed), divergence=divergence, scores={},
                     verdict=point_verdict(len(changed), len(changed)))


def axis_seed(c: Context) -> AxisResult:
    """Sampled generations of each probed doc's prompt: seed S, seed S again (judged: must be identical), seed S + 1
    (said: expected to differ)."""
    p, o = c.probe, c.opts
    t0 = time.perf_counter()

    def sampled(seed: int) -> GenerationSettings:
        return GenerationSettings(until=(), max_gen_toks=o.sample_tokens, do_sample=True,
                                  temperature=o.sample_temperature, sampling_seed=seed)

    with c.bar("seed", 3 * len(p.docs)) as bar:
        first = _generations(p, sampled(o.sample_seed))
        bar.advance(len(p.docs))
        again = _generations(p, sampled(o.sample_seed))
        bar.advance(len(p.docs))
        other = _generations(p, sampled(o.sample_seed + 1))
        bar.advance(len(p.docs))
    same = compare_texts(p, first, again, f"seed {o.sample_seed} again", sampled(o.sample_seed))
    diff = compare_texts(p, first, other, f"seed {o.sample_seed + 1}", sampled(o.sample_seed + 1))
    diff.judged = False
    what = (f"{o.sample_tokens} tokens sampled at temperature {o.sample_temperature:g} from each probed doc's prompt")
    notes = [what, f"judged: seed {o.sample_seed} twice; seed {o.sample_seed + 1} is shown, not judged (another seed "
                   "should give other samples)"]
    if same.docs_changed:
        notes.append(f"seed not honoured: the same seed gave other samples on {same.docs_changed} of "
                     f"{same.n_docs} docs")
    if not diff.docs_changed:
        notes.append(f"seeds {o.sample_seed} and {o.sample_seed + 1} gave the same samples on every doc: the seed may "
                     "not reach the sampler (or the samples are too short to differ)")
    else:
        notes.append(f"seed {o.sample_seed + 1} gave other samples on {diff.docs_changed} of {diff.n_docs} docs: the "
                     "seed reaches the sampler")
    return result("seed", f"seed {o.sample_seed}", None, [same, diff], notes, t0)


def axis_prefix_cache(c: Context) -> AxisResult:
    """The engine's prefix cache: the probed docs cold (emptied first where the engine or server can), then warm —
    their log-likelihoods (or generations) and, for a log-likelihood task, a short greedy generation of each."""
    p = c.probe
    if p.cfg.serving.backend == "hf":
        return skipped("prefix-cache", "transformers keeps no cache between requests: every request is computed "
                                       "from its first token")
    t0 = time.perf_counter()
    notes = []
    greedy = GenerationSettings(until=(), max_gen_toks=c.opts.sample_tokens)
    with c.bar("prefix-cache", len(p.docs) * (2 if p.generative else 4)) as bar:
        notes.append(_cold(p))
        cold = p.run_pass(bar)
        warm = p.run_pass(bar)
        points = [compare(p, cold, warm, "warm")]
        if not p.generative:
            _cold(p)
            cold_g = _generations(p, greedy)
            bar.advance(len(p.docs))
            warm_g = _generations(p, greedy)
            bar.advance(len(p.docs))
            points.append(compare_texts(p, cold_g, warm_g, "generations warm", greedy))
            if _on_vllm(p):
                notes.append(PROMPT_LOGPROBS_SKIP)
    if p.cfg.serving.backend == "vllm" and not (p.backend.info.engine or {}).get("enable_prefix_caching"):
        notes.append("vLLM's prefix cache is off in this engine (--enable-prefix-caching measures it)")
    return result("prefix-cache", "cold", cold, points, notes, t0)


def _cold(p: Probe) -> str:
    """Empty the engine's prefix cache where it can be; the note that says how cold the cold pass is."""
    done = p.backend.reset_prefix_cache()
    if done:
        return "cold: the engine's prefix cache emptied first"
    if done is None:
        return ("cold: the first time this probe sends these prompts; the engine offers no reset (a vLLM server "
                "needs VLLM_SERVER_DEV_MODE=1 for POST /reset_prefix_cache), so an earlier client may have warmed "
                "them")
    return "cold: the engine refused to empty its cache (requests in flight): the cold pass may be warm"


def _on_vllm(p: Probe) -> bool:
    engine = p.backend.info.engine or {}
    return p.cfg.serving.backend == "vllm" or engine.get("server") == "vllm"
