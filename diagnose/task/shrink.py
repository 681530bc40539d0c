"""A large replayed call cut down to a size the CPU interpreter runs: its rows fewer, the rest as captured.

A kernel module's task replays its captured calls; on the CPU only those of at most `CPU_ELEMENTS`
tensor elements run (`diagnose/task/kernel_module.py`). Where a project's tests make only one small call,
and that one is degenerate (Liger's JSD: the only small call is the test where every label is ignored,
so any kernel, even one that writes nothing, gives the right zero loss), the CPU check decides nothing.
The large call, with fewer rows, is the same computation at a size the interpreter can run.

Which dimension: the leading one of the call's largest tensor, `n`, cut in every tensor whose leading
dimension is `n` (the rows of the input, its labels, its gradient), halved until the call fits. Only
where that is unambiguous: a host call (a bare kernel launch carries its grid and sizes as numbers that
would have to change with it), every tensor contiguous and owning its storage, `n` in no other
dimension of any tensor (a square matrix), no integer argument equal to `n` (it may be that size), no
integer tensor drawn up to `n` (indices into the rows, as far as the range tells). Halving keeps the size's factors of two, so a
count of rows that had to be a multiple of a block stays one where it can.

The cut call is checked as an unseen-shape case (`diagnose/verify/jobs.py`): where the project's own code
fails at the new size, the case is dropped with a note, never held against a candidate.
"""

from __future__ import annotations

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
    n = largest.shape[0] if largest.shape else 0
    if n < 2 or any(n in t.shape[1:] for t in tensors):
        return None
    if any(type(v) is int and v == n for v in _scalars(call.values())):
        return None
    if any(not t.is_float and t.high in (n - 1, n) for t in tensors):
        return None
    per_row = sum(t.numel // n for t in tensors if t.shape and t.shape[0] == n)
    rest = sum(t.numel for t in tensors if not (t.shape and t.shape[0] == n))
    rows = n
    while rows > 1 and rows * per_row + rest > limit:
        rows //= 2
    if rows * per_row + rest > limit:
        return None

    def cut(value: Value) -> Value:
        if isinstance(value, TensorSpec) and value.shape and value.shape[0] == n:
            return replace(value, shape=(rows, *value.shape[1:]))
        if isinstance(value, (tuple, list)):
            return type(value)(cut(v) for v in value)
        return value

    cut_call = replace(call, args=tuple(cut(v) for v in call.args), kwargs=tuple((k, cut(v)) for k, v in call.kwargs))
    return Shrunk(cut_call, n, rows)


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
