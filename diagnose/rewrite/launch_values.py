"""Where a launch's block sizes and options are set on the host, and how to set them to new values.

A constexpr (`BLOCK_SIZE`) or a launch option (`num_warps`, `num_stages`) of a launch site is set in
one of three ways this module can change:

- `kwarg`: a literal keyword argument of the launch, `BLOCK=1024`;
- `host`: a keyword argument naming a host variable bound once to a literal, `BLOCK_SIZE=BLOCK_SIZE`
  with `BLOCK_SIZE = 128` (or `BM, BN = 32, 32`); the literal changes, so a grid computed from the
  name follows;
- `absent`: a launch option not given (Triton's default); it is added as a keyword.

A constexpr that multiplies a program id (`pid * BLOCK`) decides the grid: it may only change when
the grid is computed from its host name (or is a callable reading `meta`), else the new block size
and the old grid would disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from diagnose.rewrite.edit import fit_call, replace, set_keyword
from diagnose.rewrite.source import (
    Kernel, LaunchSite, calls, code, grid_coupled, int_value, kernels, keyword, literal_binding, model_forward, names,
    positional, resolve_grid, sites_of,
)

OPTIONS = ("num_warps", "num_stages")


@dataclass(frozen=True)
class Slot:
    """Where one launch value is set: `kind` is kwarg / host / absent; `current` its value (None if absent)."""

    param: str
    kind: str
    current: int | None
    host_name: str | None = None


def slots(module: cst.Module, kernel: Kernel, site: LaunchSite, params: tuple[str, ...]) -> dict[str, Slot] | str:
    """The slot of each of `params` at `site`, or why one cannot be changed."""
    forward = model_forward(module)
    grid, _ = resolve_grid(forward, site)
    grid_names = names(grid)
    coupled = grid_coupled(kernel)
    callable_grid = isinstance(grid, cst.Lambda)
    out = {}
    for param in params:
        arg = site.arg(kernel, param)
        if arg is None:
            if param in OPTIONS:
                out[param] = Slot(param, "absent", None)
                continue
            return f"the launch does not pass {param}"
        if arg.keyword is None and param in OPTIONS:
            return f"{param} is not passed by keyword"
        literal = int_value(arg.value)
        if literal is not None:
            if param in coupled and not callable_grid:
                return f"{param} is a literal at the launch but the grid does not follow it"
            out[param] = Slot(param, "kwarg", literal)
            continue
        if isinstance(arg.value, cst.Name):
            binding = literal_binding(forward, arg.value.value)
            if binding is None:
                return f"{param}={arg.value.value} is not bound once to a literal in forward"
            if param in coupled and not callable_grid and binding.name not in grid_names:
                return f"the grid is not computed from {binding.name}"
            out[param] = Slot(param, "host", binding.value, binding.name)
            continue
        return f"{param}={code(arg.value)} is computed on the host"
    return out


def set_values(module: cst.Module, kernel_name: str, values: dict[str, int], site_index: int = 0) -> cst.Module:
    """The module with the launch values of `kernel_name`'s launch site set to `values`."""
    kernel = kernels(module)[kernel_name]
    site = sites_of(module, kernel_name)[site_index]
    found = slots(module, kernel, site, tuple(values))
    if isinstance(found, str):
        raise ValueError(found)
    forward = model_forward(module)
    mapping = {}
    for param, value in values.items():
        slot = found[param]
        if slot.kind == "kwarg":
            mapping[site.arg(kernel, param).value] = cst.Integer(str(value))
        elif slot.kind == "host":
            mapping[literal_binding(forward, slot.host_name).literal] = cst.Integer(str(value))
    module = replace(module, mapping)
    absent = {p: v for p, v in values.items() if found[p].kind == "absent"}
    if absent:
        site = sites_of(module, kernel_name)[site_index]
        call = site.call
        for param, value in absent.items():
            call = set_keyword(call, param, cst.Integer(str(value)))
        module = replace(module, {site.call: fit_call(call, indent=8)})
    return module


def current_values(module: cst.Module, kernel_name: str, params: tuple[str, ...]) -> dict[str, int | None] | str:
    kernel = kernels(module)[kernel_name]
    site = sites_of(module, kernel_name)[0]
    found = slots(module, kernel, site, params)
    return found if isinstance(found, str) else {p: s.current for p, s in found.items()}


def every_access_masked(kernel: Kernel) -> bool:
    """Every `tl.load` / `tl.store` has a mask: a larger block only adds masked-off lanes at the edges."""
    accesses = calls(kernel.node.body, "load", "store")
    for call in accesses:
        is_store = call.func.attr.value == "store" if isinstance(call.func, cst.Attribute) else False
        if keyword(call, "mask") is None and len(positional(call)) < (3 if is_store else 2):
            return False
    return bool(accesses)
