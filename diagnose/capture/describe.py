"""Describing live values as specs (`diagnose/task/specs.py`): what a capture keeps of an argument.

A tensor is kept as its dtype, shape, strides, storage offset and storage size, never its data; an
integer tensor also as the range of its values (indices must stay in bounds when the call is replayed
with random ones; a handful of distinct values are kept as they are, and one or two negative sentinels
among indices, an ignore index, as `values` beside the range); a floating-point tensor with no negative value as its range (a variance, a probability). Memory no
one has written yet (an output buffer, `torch.empty`) holds anything: spans too wide to be an index
range or a value range, and non-finite values, are read as no range at all.
Arguments sharing a storage are written as views of the first (`base=`) or as the same tensor
(`same(...)`). Anything that is not a tensor, a number, a string, None, a dtype or a list or tuple of
these is `Opaque`: a call with such an argument cannot be replayed.
"""

from __future__ import annotations

from typing import Any

from diagnose.task.specs import DtypeValue, Opaque, Same, TensorSpec, Value, short_dtype

# Reductions over a tensor wait for the device; skip them on very large tensors.
RANGE_LIMIT = 1 << 26
FEW_VALUES = 8
INDEX_SPAN = 1 << 31
FLOAT_SPAN = 1e6


def describe_call(
    named: list[tuple[str, Any]], ranges: bool = True, unwritten: frozenset[str] = frozenset()
) -> list[tuple[str, Value]]:
    """Specs of a call's arguments, in order, aliases between them resolved; `ranges`: also read value
    ranges (reductions over the tensors, which wait for the device), except of the arguments named in
    `unwritten` (outputs the call has not written yet: their memory holds nothing)."""
    seen: dict[tuple, str] = {}  # (storage pointer, device) -> name of the first argument on it
    views: dict[tuple, str] = {}  # the full view key -> name
    out = []
    for name, value in named:
        out.append((name, _describe(name, value, seen, views, ranges and name not in unwritten)))
    return out


def _describe(name: str, value: Any, seen: dict, views: dict, ranges: bool) -> Value:
    import torch  # deferred: torch is heavy

    if isinstance(value, torch.Tensor):
        return _tensor(name, value, seen, views, ranges)
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, torch.dtype):
        return DtypeValue(f"torch.{str(value).rsplit('.', 1)[1]}")
    if isinstance(value, (list, tuple)):
        items = [_describe(f"{name}.{i}", v, seen, views, ranges) for i, v in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    kind = type(value).__module__ or ""
    if kind.startswith("triton"):
        return _triton_value(value)
    if kind == "numpy" and hasattr(value, "item"):
        return _describe(name, value.item(), seen, views, ranges)
    return Opaque(type(value).__name__)


def _triton_value(value: Any) -> Value:
    import triton.language as tl  # deferred: triton is heavy

    if isinstance(value, tl.constexpr):
        inner = value.value
        return inner if isinstance(inner, (int, float, bool, str)) or inner is None else _triton_value(inner)
    if isinstance(value, tl.dtype):
        for attr in dir(tl):
            if getattr(tl, attr, None) == value and isinstance(getattr(tl, attr), tl.dtype):
                return DtypeValue(f"tl.{attr}")
    return Opaque(type(value).__name__)


def _tensor(name: str, tensor, seen: dict, views: dict, ranges: bool) -> Value:
    dtype = short_dtype(str(tensor.dtype))
    if dtype is None:
        return Opaque(f"Tensor[{tensor.dtype}]")
    try:
        storage = tensor.untyped_storage()
        pointer, storage_elements = storage.data_ptr(), storage.nbytes() // tensor.element_size()
    except (RuntimeError, NotImplementedError):  # a tensor subclass or a meta tensor without storage
        pointer, storage_elements = None, None
    shape, stride, offset = tuple(tensor.shape), tuple(tensor.stride()), int(tensor.storage_offset())
    key = (pointer, str(tensor.device))
    view = (key, dtype, shape, stride, offset)
    if pointer and view in views:
        return Same(views[view])
    low = high = None
    values: tuple = ()
    if ranges and tensor.numel() and tensor.numel() <= RANGE_LIMIT and not tensor.is_complex():
        low, high, values = _value_range(tensor, dtype)
    base = seen.get(key) if pointer else None
    if pointer and base is None:
        seen[key] = name
        views[view] = name
    elif pointer:
        views.setdefault(view, name)
    return TensorSpec(dtype, shape, stride, offset, storage_elements, base, low, high, values)


def _value_range(tensor, dtype: str) -> tuple:
    """(low, high, values): integers [min, max + 1) or their few distinct values; non-negative floats
    [min, max]; otherwise nothing (random normal values replay them)."""
    import torch  # deferred: torch is heavy

    detached = tensor.detach()
    if dtype == "b8":
        return None, None, ()
    if not detached.is_floating_point():
        flat = detached.reshape(-1)
        low, high = int(flat.min()), int(flat.max())
        if high - low + 1 <= FEW_VALUES or flat.numel() <= FEW_VALUES:
            return None, None, tuple(int(v) for v in torch.unique(flat).tolist())
        distinct = torch.unique(flat) if flat.numel() <= 1 << 20 else None
        if distinct is not None and distinct.numel() <= FEW_VALUES:
            return None, None, tuple(int(v) for v in distinct.tolist())
        if low < 0:  # a few negative sentinels (an ignore index) among indices: keep them apart
            negative = torch.unique(flat[flat < 0])
            if negative.numel() <= 2 and (flat >= 0).any():
                low, values = int(flat[flat >= 0].min()), tuple(int(v) for v in negative.tolist())
                return (low, high + 1, values) if high + 1 - low <= INDEX_SPAN else (None, None, ())
        # A span this wide is not an index range but memory nobody wrote yet (an output buffer).
        return (low, high + 1, ()) if high + 1 - low <= INDEX_SPAN else (None, None, ())
    finite = detached[torch.isfinite(detached)] if detached.numel() else detached
    if not finite.numel():
        return None, None, ()
    low, high = float(finite.min()), float(finite.max())
    if low < 0 or not low < high <= FLOAT_SPAN or finite.numel() < detached.numel():
        return None, None, ()  # signed data, constant or never written (an output buffer): normal values
    if high < torch.finfo(detached.dtype).tiny:
        return None, None, ()  # nothing above the smallest normal number: memory nobody wrote yet
    return low, high, ()
