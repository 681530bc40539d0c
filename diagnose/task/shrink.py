"""A large replayed call cut down to a size the CPU interpreter runs: its rows fewer, the rest as captured.

A kernel module's task replays its captured calls; on the CPU only those of at most `CPU_ELEMENTS`
tensor elements run (`diagnose/task/kernel_module.py`). Where a project's tests make only one small call,
and that one is degenerate (Liger's JSD: the only small call is the test where every label is ignored,
so any kernel, even one that writes nothing, gives the right zero loss), the CPU check decides nothing.
The large call, with fewer rows, is the same computation at a size the interpreter can run.

Which dimension: the leading one of the call's largest tensor, `n`, cut in every tensor whose leading
dimension is `n` (the rows of the input, its labels, its gradient), halved until the call fits; where
one row of it is still too large (a batch of sequences, `x=f16[21,3341,1024]`), the next dimension the
same way, and so on, never the last (a row's length sets block sizes). Only where that is unambiguous: a host call (a bare kernel launch carries its grid and sizes as numbers that
would have to change with it), every tensor contiguous and owning its storage, `n` in no other
dimension of any tensor (a square matrix), no integer argument equal to `n` (it may be that size), no
integer tensor drawn up to `n` (indices into the rows, as far as the range tells). Halving keeps the size's factors of two, so a
count of rows that had to be a multiple of a block stays one where it can.

The cut call is checked as an unseen-shape case (`diagnose/verify/jobs.py`): where the project's own code
fails at the new size, the case is dropped with a note, never held against a candidate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from diagnose.task.specs import CallSpec, TensorSpec, Value, contiguous_strides


@dataclass(frozen=True)
class Shrunk:
    """The cut call, and its rows before and after."""

    call: CallSpec
    rows: int
    cut_to: int


def shrunk(call: CallSpec, limit: int) -> Shrunk | None:
    """`call` with its rows halved until its tensors hold at most `limit` elements, or None where the
    cut is ambiguous or not needed."""
    tensors = call.tensors()
    if call.is_launch or not tensors or sum(t.numel for t in tensors) <= limit:
        return None
    if not all(_plain(t) for t in tensors):
        return None
    largest = max(tensors, key=lambda t: t.numel)
    shape = original = tuple(largest.shape)
    if not shape:
        return None
    for d in range(max(1, len(shape) - 1)):  # never the last dimension of a tensor of several: a row
        n = shape[d]
        if n < 2 or _ambiguous(call, n, shape[: d + 1]):
            break
        size = n
        while size > 1 and _elements(_cut(call, shape, d, size)) > limit:
            size //= 2
        call, shape = _cut(call, shape, d, size), _resized(shape, d, size)
        if _elements(call) <= limit:
            return Shrunk(call, math.prod(original[: d + 1]), math.prod(shape[: d + 1]))
    return None


def _resized(shape: tuple[int, ...], d: int, size: int) -> tuple[int, ...]:
    return (*shape[:d], size, *shape[d + 1 :])


def _elements(call: CallSpec) -> int:
    return sum(t.numel for t in call.tensors())


def _carries(t: TensorSpec, leading: tuple[int, ...]) -> bool:
    """`t` has the largest tensor's leading dimensions (the ones cut so far and the one being cut)."""
    return tuple(t.shape[: len(leading)]) == leading


def _ambiguous(call: CallSpec, n: int, leading: tuple[int, ...]) -> bool:
    """Whether `n`, the size at position `len(leading) - 1` of the largest tensor, may be something else:
    the same number in another place of a tensor (a square matrix), an integer argument equal to it
    (it may be that size), an integer tensor drawn up to it (indices into the rows)."""
    d = len(leading) - 1
    for t in call.tensors():
        places = [i for i, size in enumerate(t.shape) if size == n]
        if any(i != d or not _carries(t, leading) for i in places):
            return True
        if not t.is_float and t.high in (n - 1, n):
            return True
    return any(type(v) is int and v == n for v in _scalars(call.values()))


def _cut(call: CallSpec, shape: tuple[int, ...], d: int, size: int) -> CallSpec:
    """`call` with dimension `d` of every tensor that carries the largest one's leading dimensions set to `size`."""
    leading = shape[: d + 1]

    def cut(value: Value) -> Value:
        if isinstance(value, TensorSpec) and len(value.shape) > d and _carries(value, leading):
            return replace(value, shape=_resized(tuple(value.shape), d, size))
        if isinstance(value, (tuple, list)):
            return type(value)(cut(v) for v in value)
        return value

    return replace(call, args=tuple(cut(v) for v in call.args), kwargs=tuple((k, cut(v)) for k, v in call.kwargs))


def _plain(t: TensorSpec) -> bool:
    """Contiguous, at offset 0, owning its storage: cutting rows keeps it a valid tensor (its values are drawn
    per element, from a range or a few values, whatever its shape)."""
    return (
        (t.stride is None or tuple(t.stride) == contiguous_strides(t.shape))
        and not t.offset
        and not t.base
        and (t.storage is None or t.storage == t.span())
    )


def _scalars(values: list[Value]) -> list[Value]:
    out: list[Value] = []
    for v in values:
        out.extend(_scalars(list(v)) if isinstance(v, (tuple, list)) else [v])
    return out
