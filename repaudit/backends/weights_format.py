"""What the weights are as stored, read from the files' headers (no tensor is read): a GGUF's file type and the type
of each tensor (the default model is a Q4_1 GGUF, de-quantised on load), a safetensors checkpoint's dtypes.

GGUF (llama.cpp's format, version 2 and 3): ``GGUF``, the version, the tensor and key-value counts, the key-values
(``general.file_type`` among them), then one record per tensor whose type is a ``ggml_type`` (``Q4_1``, ``Q8_0``,
``F32``). safetensors: an 8-byte length, then a JSON header naming each tensor's ``dtype``. Names come from the
``gguf`` package's enums (what transformers reads GGUF files with) where it is installed.
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from pathlib import Path
from typing import BinaryIO, Literal

from pydantic import BaseModel, ConfigDict

#: safetensors dtype → torch dtype name
_SAFETENSORS_DTYPES = {"F32": "float32", "BF16": "bfloat16", "F16": "float16", "F64": "float64",
                       "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}
#: GGUF value type → struct format of a scalar (8: string, 9: array are read apart)
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
#: GGUF tensor types that hold floats as they are (any other is quantised)
_FLOAT_TYPES = ("F32", "F16", "BF16", "F64")
#: most bytes of a GGUF header read (the default model's is ~2 MB: its tokenizer's vocabulary lives there)
_MAX_HEADER = 256 << 20


class StoredWeights(BaseModel):
    """The weights as their files store them."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    format: Literal["gguf", "safetensors", "pytorch"]
    """The files' format: gguf (llama.cpp), safetensors, or pytorch (pickled ``.bin``/``.pt``)."""
    file_type: str | None = None
    """GGUF: its ``general.file_type`` (``Q4_1``: most tensors Q4_1); safetensors: the dtype of most tensors; None
    where not recorded."""
    tensor_types: dict[str, int] = {}
    """Tensor type → tensors of that type (``{"Q4_1": 210, "Q8_0": 1, "F32": 61}``); empty where the format does not
    say (pytorch)."""

    @property
    def quantised(self) -> bool:
        """Whether any tensor is stored quantised (not a plain float type)."""
        return any(t not in (*_FLOAT_TYPES, *_SAFETENSORS_DTYPES, *_SAFETENSORS_DTYPES.values())
                   for t in self.tensor_types)


def quantisation(stored: StoredWeights) -> str:
    """The weights' quantisation as stored: ``none`` where every tensor is a float type, else the GGUF's file type
    (``Q4_1``), or the most common quantised tensor type where no file type is recorded. A weight quantisation is
    a fact of the files, whatever dtype they are run in: de-quantised to float32, the values still carry its
    rounding."""
    if not stored.quantised:
        return "none"
    quantised = [t for t in stored.tensor_types if t not in (*_FLOAT_TYPES, *_SAFETENSORS_DTYPES,
                                                              *_SAFETENSORS_DTYPES.values())]
    return stored.file_type if stored.format == "gguf" and stored.file_type else quantised[0]


def quantisation_line(stored: StoredWeights, dtype: str) -> str:
    """The weights' quantisation in one line beside the dtype they are run in: ``Q4_1 weights (tensors: 210 Q4_1,
    61 F32, 1 Q8_0) de-quantised to float32: float32 compute on values that carry Q4_1's rounding``, or ``none
    (bfloat16 weights)``."""
    q = quantisation(stored)
    if q == "none":
        return f"none ({stored.file_type or 'float'} weights)"
    tensors = ", ".join(f"{n} {t}" for t, n in stored.tensor_types.items())
    return (f"{q} weights (tensors: {tensors}) de-quantised to {dtype}: {dtype} compute on values that carry {q}'s "
            "rounding, not full-precision weights")


def describe(stored: StoredWeights, dtype: str) -> str:
    """One line for the weights as stored and as run in ``dtype``: ``Q4_1 GGUF de-quantised to float32``,
    ``safetensors bfloat16 loaded as float32``, ``safetensors float32``."""
    kind = {"gguf": "GGUF", "safetensors": "safetensors", "pytorch": "PyTorch checkpoint"}[stored.format]
    if stored.format == "gguf":
        head = f"{stored.file_type} GGUF" if stored.file_type else "GGUF"
        return f"{head} {'de-quantised' if stored.quantised else 'loaded'} to {dtype}"
    if stored.file_type is None:
        return f"{kind} loaded as {dtype}"
    return f"{kind} {stored.file_type}" + ("" if stored.file_type == dtype else f" loaded as {dtype}")


def stored_weights(directory: Path) -> StoredWeights | None:
    """The stored format of a model folder's weights: its safetensors files, else a GGUF, else pickled files; None
    where it holds none or a header cannot be read."""
    files = sorted(p for p in Path(directory).iterdir() if p.is_file())
    try:
        if st := [p for p in files if p.suffix == ".safetensors"]:
            return safetensors_weights(st)
        if gg := [p for p in files if p.suffix == ".gguf"]:
            return gguf_weights(gg[0])
    except (OSError, ValueError, struct.error):
        return None
    return StoredWeights(format="pytorch") if any(p.suffix in (".bin", ".pt") for p in files) else None


def safetensors_weights(files: list[Path]) -> StoredWeights:
    """The dtypes of the tensors of safetensors ``files`` (their JSON headers).

    Raises:
        ValueError / OSError: a header that is not safetensors'.
    """
    counts: Counter[str] = Counter()
    for f in files:
        with open(f, "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            if n > _MAX_HEADER:
                raise ValueError(f"{f}: a safetensors header of {n} bytes")
            header = json.loads(fh.read(n))
        counts.update(_SAFETENSORS_DTYPES.get(v["dtype"], v["dtype"]) for k, v in header.items()
                      if k != "__metadata__")
    types = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return StoredWeights(format="safetensors", file_type=next(iter(types), None), tensor_types=types)


def gguf_weights(path: Path) -> StoredWeights:
    """A GGUF file's ``general.file_type`` and its tensors' types.

    Raises:
        ValueError / OSError / struct.error: not a GGUF file of version 2 or 3, or a truncated header.
    """
    with open(path, "rb") as fh:
        magic, version = fh.read(4), _read(fh, "<I")
        if magic != b"GGUF" or version not in (2, 3):
            raise ValueError(f"{path}: not a GGUF file of version 2 or 3")
        n_tensors, n_kv = _read(fh, "<Q"), _read(fh, "<Q")
        file_type = None
        for _ in range(n_kv):
            key = _string(fh)
            value = _value(fh, _read(fh, "<I"))
            if key == "general.file_type" and isinstance(value, int):
                file_type = value
        counts: Counter[int] = Counter()
        for _ in range(n_tensors):
            _string(fh)
            fh.seek(8 * _read(fh, "<I"), 1)  # the dimensions
            counts[_read(fh, "<I")] += 1
            fh.seek(8, 1)  # the data offset
    names = _type_names()
    types = {names[0].get(t, f"type {t}"): n for t, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))}
    ft = None if file_type is None else names[1].get(file_type, f"file type {file_type}")
    return StoredWeights(format="gguf", file_type=ft, tensor_types=types)


def _type_names() -> tuple[dict[int, str], dict[int, str]]:
    """``(ggml tensor type → name, GGUF file type → name)`` from the ``gguf`` package (``MOSTLY_Q4_1`` → ``Q4_1``);
    empty where it is not installed (the numbers are then shown)."""
    try:
        from gguf import GGMLQuantizationType, LlamaFileType
    except ImportError:
        return {}, {}
    files = {int(t): t.name.removeprefix("MOSTLY_").removeprefix("ALL_") for t in LlamaFileType}
    return {int(t): t.name for t in GGMLQuantizationType}, files


def _read(fh: BinaryIO, fmt: str):
    size = struct.calcsize(fmt)
    data = fh.read(size)
    if len(data) != size:
        raise ValueError("truncated GGUF header")
    return struct.unpack(fmt, data)[0]


def _string(fh: BinaryIO) -> str:
    n = _read(fh, "<Q")
    if n > _MAX_HEADER:
        raise ValueError("a GGUF string longer than its header may be")
    return fh.read(n).decode("utf-8", errors="replace")


def _value(fh: BinaryIO, kind: int):
    """One key-value's value; arrays are skipped over (``None``), scalars and strings returned."""
    if kind == 8:
        return _string(fh)
    if kind == 9:
        item, n = _read(fh, "<I"), _read(fh, "<Q")
        if item in _SCALARS:
            fh.seek(struct.calcsize(_SCALARS[item]) * n, 1)
        else:
            for _ in range(n):
                _value(fh, item)
        return None
    if kind not in _SCALARS:
        raise ValueError(f"unknown GGUF value type {kind}")
    return _read(fh, _SCALARS[kind])
