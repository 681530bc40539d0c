"""Launch-time specialization under triton-ascend 3.2.0: what `JITFunction.run` hands the compiler.

Runs in the Ascend toolchain's worker. triton-ascend's `JITFunction.run` (based on Triton 3.2) binds
the arguments with the generated binder (`create_function_from_signature`), merges the kernel's
`bishengir_option`, parses the options with the backend, builds the signature from the binder's
type strings (`'none'` becomes `*i8`) and asks the backend's `AttrsDescriptor` for the argument
properties (`tt.divisibility` for 16-aligned pointers and ints divisible by 16; ints equal to 1
become constants). We make the same calls with the target's backend in place of the active driver,
which does not exist without an NPU.
"""

from __future__ import annotations

from typing import Any

from diagnose.errors import UsageError


def build_source(jit: Any, args: tuple, kwargs: dict, target: Any) -> tuple[Any, Any]:
    """`(ASTSource, NPUOptions)` exactly as triton-ascend 3.2.0's `JITFunction.run` builds them."""
    from triton.compiler.compiler import ASTSource, make_backend  # deferred: triton is heavy
    from triton.runtime.jit import create_function_from_signature  # deferred: triton is heavy

    kwargs = dict(kwargs)
    kwargs["debug"] = kwargs.get("debug", False)
    if getattr(jit, "bishengir_option", None):
        kwargs.update(jit.bishengir_option)
    backend = make_backend(target)
    binder = create_function_from_signature(jit.signature, jit.params, backend)
    try:
        bound_args, sig_and_spec, _constexprs, _values, excess = binder(*args, **kwargs)
    except TypeError as e:
        raise UsageError(f"{jit.__name__}: the example arguments do not fit the signature: {e}") from e
    options = backend.parse_options(kwargs)
    unknown = [k for k in excess if k not in options.__dict__]
    if unknown:
        raise UsageError(f"{jit.__name__}: unknown keyword arguments {unknown} (not kernel parameters nor NPU options)")
    names = [jit.params[i].name for i in range(len(jit.params)) if not jit.params[i].is_constexpr]
    signature = {k: ("*i8" if v == "none" else v) for k, v in zip(names, sig_and_spec[: len(names)])}
    values = tuple(bound_args.values())
    attrs = backend.get_attrs_descriptor(jit.params, values)
    constant_params = attrs.get_constants()
    constants = {
        p.name: v for v, p in zip(values, jit.params) if p.is_constexpr or p.num in constant_params or v is None
    }
    return ASTSource(jit, signature, constants, attrs), options


def describe_specialization(source: Any) -> dict[str, Any]:
    """The signature, constexprs and argument properties of an `ASTSource`, as JSON-able values."""
    names = source.fn.arg_names
    properties = source.attrs.to_dict().get("arg_properties", {})
    return {
        "signature": {k: str(v) for k, v in source.signature.items()},
        "constexprs": {str(k): _plain(v) for k, v in source.constants.items()},
        "attrs": {prop: [names[i] for i in idx if i < len(names)] for prop, idx in properties.items() if idx},
    }


def _plain(value: Any) -> Any:
    return value if isinstance(value, (int, float, bool, str, type(None))) else str(value)
