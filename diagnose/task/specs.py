"""Argument specs: what a call looks like without its data, as records and as one line of text.

A launch or a host call is replayed from a spec of each argument, never from saved tensor data: a
tensor is its dtype, shape, strides, storage offset and value range; a scalar is its value. The text
form is a Python-parseable call (`diagnose/task/callspec.py` reads it back) and is what capture files,
`--call` and reports show:

    rms_norm_forward(X=f16[4096,8192], W=f16[8192], eps=1e-06, casting_mode='llama')
    add_kernel[(4,)](x_ptr=f32[4096], y_ptr=f32[4096], out=f32[4096], n=4096, BLOCK=1024)
    gather(src=f32[1000,64], index=i64[4096](range=(0, 1000)))
    transpose(x=f32[64,128](stride=(1,64)), out=f32[128,64])
    add_(x=f16[4096], y=same(x))                      # the same tensor twice
    tail(x=f32[64](base=buf, offset=32), buf=f32[96])  # a view sharing another argument's storage

Tensor options: `stride` (elements; default contiguous), `offset` (storage offset), `storage` (elements
of the underlying storage), `base` (the argument whose storage it shares), `range=(low, high)` (integers:
`low <= v < high`; floats: uniform in `[low, high]`), `values=(...)` (integers drawn from these values;
beside a range, sentinels such as an ignore index mixed into it, about one element in eight). Dtypes: `b8 u8 i8 i16 i32 i64 u16 u32 u64 f16 bf16 f32 f64
f8e4m3 f8e5m2 c64` (and the long names `float16`, `fp16`, `half`, `int64`, ...). Other values:
numbers, strings, `None`, `True`, `False`, `inf`, `nan`, `torch.float16`, `tl.float32`, and lists or
tuples of any of these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

# Short name -> torch dtype attribute. The first name of each dtype is how it is written out.
DTYPES: dict[str, str] = {
    "b8": "bool",
    "u8": "uint8",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "f8e4m3": "float8_e4m3fn",
    "f8e5m2": "float8_e5m2",
    "c64": "complex64",
    "c128": "complex128",
}
ALIASES: dict[str, str] = {
    "bool": "b8",
    "uint8": "u8",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float16": "f16",
    "fp16": "f16",
    "half": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "fp32": "f32",
    "float": "f32",
    "float64": "f64",
    "fp64": "f64",
    "double": "f64",
    "float8_e4m3fn": "f8e4m3",
    "fp8e4nv": "f8e4m3",
    "float8_e5m2": "f8e5m2",
    "fp8e5": "f8e5m2",
    "complex64": "c64",
    "complex128": "c128",
    "long": "i64",
    "int": "i32",
}
ITEMSIZE = {
    "b8": 1,
    "u8": 1,
    "i8": 1,
    "i16": 2,
    "i32": 4,
    "i64": 8,
    "u16": 2,
    "u32": 4,
    "u64": 8,
    "f16": 2,
    "bf16": 2,
    "f32": 4,
    "f64": 8,
    "f8e4m3": 1,
    "f8e5m2": 1,
    "c64": 8,
    "c128": 16,
}
FLOATS = ("f16", "bf16", "f32", "f64", "f8e4m3", "f8e5m2")


def short_dtype(name: str) -> str | None:
    """`f16` for `f16`, `float16`, `torch.float16` or `half`; None for anything else."""
    name = name.rsplit(".", 1)[-1]
    return name if name in DTYPES else ALIASES.get(name)


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


@dataclass(frozen=True)
class TensorSpec:
    """A tensor argument: everything a replay needs except its values, which are drawn at random."""

    dtype: str
    shape: tuple[int, ...]
    stride: tuple[int, ...] | None = None  # None: contiguous
    offset: int = 0
    storage: int | None = None  # elements of the storage; None: just what the view needs
    base: str | None = None  # the argument whose storage this one shares
    low: float | None = None
    high: float | None = None
    values: tuple = ()

    @property
    def strides(self) -> tuple[int, ...]:
        return self.stride if self.stride is not None else contiguous_strides(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def span(self) -> int:
        """Elements of storage the view reaches: offset + the furthest element + 1."""
        if self.numel == 0:
            return self.offset
        return self.offset + sum((size - 1) * step for size, step in zip(self.shape, self.strides)) + 1

    @property
    def storage_elements(self) -> int:
        return max(self.storage or 0, self.span())

    @property
    def nbytes(self) -> int:
        return self.numel * ITEMSIZE[self.dtype]

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOATS

    def text(self) -> str:
        dims = ",".join(str(d) for d in self.shape) if self.shape else "()"
        options = []
        if self.stride is not None and tuple(self.stride) != contiguous_strides(self.shape):
            options.append(f"stride={_tuple_text(self.stride)}")
        if self.offset:
            options.append(f"offset={self.offset}")
        if self.storage is not None and self.storage != self.span():
            options.append(f"storage={self.storage}")
        if self.base:
            options.append(f"base={self.base}")
        if self.low is not None and self.high is not None:
            options.append(f"range=({_number(self.low)}, {_number(self.high)})")
        if self.values:
            options.append(f"values={_tuple_text(self.values)}")
        return f"{self.dtype}[{dims}]" + (f"({', '.join(options)})" if options else "")


@dataclass(frozen=True)
class Same:
    """The very tensor another argument is (`same(x)`): an in-place op given one buffer twice."""

    name: str

    def text(self) -> str:
        return f"same({self.name})"


@dataclass(frozen=True)
class DtypeValue:
    """A dtype passed as a value: `torch.float16` to a host function, `tl.float32` to a kernel."""

    name: str  # "torch.float16" or "tl.float32"

    def text(self) -> str:
        return self.name


@dataclass(frozen=True)
class Opaque:
    """A value that cannot be written as a spec (an object, a module, a process group)."""

    type_name: str

    def text(self) -> str:
        return f"<{self.type_name}>"


Value = Union[TensorSpec, Same, DtypeValue, Opaque, int, float, bool, str, None, tuple, list]


@dataclass(frozen=True)
class CallSpec:
    """A call of a host function (`target(...)`) or a kernel launch (`target[grid](...)`)."""

    target: str
    args: tuple[Value, ...] = ()
    kwargs: tuple[tuple[str, Value], ...] = ()
    grid: tuple[int, ...] | None = None

    @property
    def is_launch(self) -> bool:
        return self.grid is not None

    def named(self) -> dict[str, Value]:
        return dict(self.kwargs)

    def values(self) -> list[Value]:
        return [*self.args, *(v for _, v in self.kwargs)]

    def tensors(self) -> list[TensorSpec]:
        return [t for v in self.values() for t in _tensors_in(v)]

    @property
    def nbytes(self) -> int:
        """Bytes of every tensor argument (a measure of size: the largest call is the default)."""
        return sum(t.nbytes for t in self.tensors())

    @property
    def replayable(self) -> bool:
        return not any(isinstance(v, Opaque) for value in self.values() for v in _flat(value))

    def text(self) -> str:
        parts = [value_text(v) for v in self.args] + [f"{k}={value_text(v)}" for k, v in self.kwargs]
        grid = f"[{_tuple_text(self.grid)}]" if self.grid is not None else ""
        return f"{self.target}{grid}({', '.join(parts)})"


def _flat(value: Value) -> list:
    if isinstance(value, (list, tuple)):
        return [x for item in value for x in _flat(item)]
    return [value]


def _tensors_in(value: Value) -> list[TensorSpec]:
    return [v for v in _flat(value) if isinstance(v, TensorSpec)]


def _number(value: float | int) -> str:
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if math.isnan(value):
            return "nan"
        if value == int(value) and abs(value) < 2**53:
            return repr(float(value))
    return repr(value)


def _tuple_text(items) -> str:
    inner = ", ".join(value_text(i) for i in items)
    return f"({inner},)" if len(items) == 1 else f"({inner})"


def value_text(value: Value) -> str:
    if isinstance(value, (TensorSpec, Same, DtypeValue, Opaque)):
        return value.text()
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, tuple):
        return _tuple_text(value)
    if isinstance(value, list):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    return f"<{type(value).__name__}>"


@dataclass(frozen=True)
class Inputs:
    """Where a kernel module's inputs come from: captured launches, call specs, or both.

    `calls`: `--call` texts (each one input group); `launch`: which captured call to take (an index
    into the listing `diagnose capture --list` prints; None: the largest); `reference`: a PyTorch
    reference `module.py:function` (None: the original code is the reference); `launches`: a folder
    of capture files (None: `.diagnose/launches` found from the file's folder upwards); `kernel`: only
    calls that launch this kernel."""

    calls: tuple[str, ...] = ()
    launch: int | None = None
    reference: str | None = None
    launches: str | None = None
    kernel: str | None = None
