"""libdevice math in Triton's interpreter: the functions real kernels call, computed with numpy.

`triton.language.extra.libdevice` (and its `cuda` and `hip` variants) hold declarations that the
compiler binds to the vendor's math library; Triton 3.6's interpreter has no such library, so a kernel
calling `libdevice.rsqrt` or `tanh` fails on the CPU (`cannot convert None ... to tensor`). `install()`
gives those modules working definitions for the functions real kernels use, before user code imports
them (`from triton.language.extra.libdevice import rsqrt` binds whatever the module holds then). Each
computes elementwise on the interpreter's numpy arrays, in the argument's dtype (fp16 math goes
through fp32, as the device library does); a function not listed keeps its declaration and fails as
before. Interpreter processes only.
"""

from __future__ import annotations

import importlib
from math import erf
from typing import Callable

MODULES = (
    "triton.language.extra.libdevice",
    "triton.language.extra.cuda.libdevice",
    "triton.language.extra.hip.libdevice",
)


def _table(np) -> dict[str, tuple[Callable, str | None]]:
    """name -> (numpy function, result kind: None = the first argument's dtype, 'bool', 'int32')."""
    verf = np.vectorize(erf, otypes=[np.float64])
    same = {
        "rsqrt": lambda x: 1.0 / np.sqrt(x),
        "sqrt": np.sqrt,
        "sqrt_rn": np.sqrt,
        "exp": np.exp,
        "exp2": np.exp2,
        "exp10": lambda x: np.power(10.0, x),
        "expm1": np.expm1,
        "log": np.log,
        "log2": np.log2,
        "log10": np.log10,
        "log1p": np.log1p,
        "tanh": np.tanh,
        "fast_tanh": np.tanh,
        "sin": np.sin,
        "cos": np.cos,
        "tan": np.tan,
        "asin": np.arcsin,
        "acos": np.arccos,
        "atan": np.arctan,
        "sinh": np.sinh,
        "cosh": np.cosh,
        "asinh": np.arcsinh,
        "acosh": np.arccosh,
        "atanh": np.arctanh,
        "erf": verf,
        "fast_erf": verf,
        "erfc": lambda x: 1.0 - verf(x),
        "floor": np.floor,
        "ceil": np.ceil,
        "trunc": np.trunc,
        "rint": np.rint,
        "nearbyint": np.rint,
        "round": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),
        "fabs": np.abs,
        "abs": np.abs,
        "cbrt": np.cbrt,
        "rcbrt": lambda x: 1.0 / np.cbrt(x),
        "pow": np.power,
        "powf": np.power,
        "powi": np.power,
        "fmod": np.fmod,
        "remainder": np.remainder,
        "atan2": np.arctan2,
        "hypot": np.hypot,
        "fmin": np.fmin,
        "fmax": np.fmax,
        "fma": lambda a, b, c: a * b + c,
        "copysign": np.copysign,
        "div_rn": np.divide,
        "div_rz": np.divide,
        "div_rd": np.divide,
        "div_ru": np.divide,
        "fdiv_rn": np.divide,
        "fast_dividef": np.divide,
        "rcp_rn": lambda x: 1.0 / x,
        "fast_expf": np.exp,
        "fast_logf": np.log,
        "fast_sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
        "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
        "exp2f": np.exp2,
        "saturatef": lambda x: np.clip(x, 0.0, 1.0),
    }
    table: dict[str, tuple[Callable, str | None]] = {name: (fn, None) for name, fn in same.items()}
    table.update(
        {
            "isnan": (np.isnan, "bool"),
            "isinf": (np.isinf, "bool"),
            "isfinited": (np.isfinite, "bool"),
            "finitef": (np.isfinite, "bool"),
            "isfinite": (np.isfinite, "bool"),
            "signbit": (np.signbit, "bool"),
            "float2int_rn": (np.rint, "int32"),
            "float2int_rz": (np.trunc, "int32"),
            "llrint": (np.rint, "int64"),
        }
    )
    return table


def _lift(name: str, fn: Callable, kind: str | None) -> Callable:
    import numpy as np  # deferred: numpy is heavy
    import triton.language as tl  # deferred: triton is heavy
    from triton.runtime.interpreter import TensorHandle, _get_np_dtype  # deferred: triton is heavy

    def call(*args, _semantic=None, **kwargs):
        tensors = [a for a in args if isinstance(a, tl.tensor)]
        if not tensors:
            raise TypeError(f"libdevice.{name} in the interpreter needs a tensor argument")
        first = tensors[0]
        scalar = first.dtype.scalar if hasattr(first.dtype, "scalar") else first.dtype
        work = np.float32 if scalar in (tl.float16, tl.bfloat16) else None
        arrays = [
            (a.handle.data.astype(work) if work is not None else a.handle.data) if isinstance(a, tl.tensor) else a
            for a in args
        ]
        with np.errstate(all="ignore"):
            out = np.asarray(fn(*arrays))
        if kind == "bool":
            result_type = tl.int1
        elif kind in ("int32", "int64"):
            result_type = getattr(tl, kind)
        else:
            result_type = scalar
        out = out.astype(_get_np_dtype(result_type))
        shape_type = tl.block_type(result_type, first.type.shape) if first.type.is_block() else result_type
        return tl.tensor(TensorHandle(out, result_type), shape_type)

    call.__name__ = name
    # Marked as the declarations it replaces are (`core.extern`): Triton's dependency walk (a kernel's
    # `cache_key`, which projects read) refuses any other plain function a kernel refers to.
    call.__triton_builtin__ = True
    return call


def install() -> None:
    import numpy as np  # deferred: numpy is heavy

    table = _table(np)
    for module_name in MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for name, (fn, kind) in table.items():
            if hasattr(module, name):
                setattr(module, name, _lift(name, fn, kind))
