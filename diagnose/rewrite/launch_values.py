"""Where a launch's block sizes and options are set on the host, and how to set them to new values.

A constexpr (`BLOCK_SIZE`) or a launch option (`num_warps`, `num_stages`) of a launch site is set in
one of three ways this module can change:

- `kwarg`: a literal keyword argument of the launch, `BLOCK=1024`;
- `host`: a keyword argument naming a variable of the function the launch is in (its host: a
  module-level function, a method, a nested function) bound once to a literal,
  `BLOCK_SIZE=BLOCK_SIZE` with `BLOCK_SIZE = 128` (or `BM, BN = 32, 32`), or to a literal capped by
  the problem, `BLOCK = min(1024, triton.next_power_of_2(n))`; the literal changes, so a grid
  computed from the name follows. A block sized to the problem as a power of two, with no literal
  (`block_size = triton.next_power_of_2(math.ceil(math.sqrt(M)))`, FlagGems' reductions;
  `BLOCK_SIZE = min(MAX_FUSED_SIZE, triton.next_power_of_2(N))`, the tutorials' layer norm), is a
  `host` slot whose current value is not known from the source (None): a new value caps it,
  `min(1024, triton.next_power_of_2(...))` (a `min(...)` gets the literal as its first argument);
- `absent`: a launch option not given (Triton's default); it is added as a keyword, unless a
  `**kwargs` of the launch may hold it (`kernel_args = {}` given only literal keys is read);
- `default`: a constexpr the launch leaves at its signature's literal default (`BLOCK_M: tl.constexpr
  = 64`, as first versions write matmuls); a new value is added as a keyword.

A constexpr that multiplies a program id (`pid * BLOCK`) decides the grid: it may only change when
the grid is computed from its host name, directly or through host variables computed from it
(`split_k = ... triton.cdiv(K, BLOCK_K) ...`; `grid = (tiles, split_k)`), or is a callable reading
`meta` (a `lambda meta:`, or a `def grid(meta):` in the host), or is a literal tuple whose axis is
`triton.cdiv(extent, L)` with `L` its current value (`grid_literal`: `L` changes with it); else the new
block size and the old grid would disagree.

A new block size is only safe where the accesses it widens are masked: `tile_accesses_masked`.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from diagnose.rewrite.edit import fit_launch, replace, set_keyword
from diagnose.rewrite.dependence import dependence
from diagnose.rewrite.launches import (
    HostBinding,
    LaunchSite,
    cdiv_parts,
    grid_elements,
    grid_function,
    grid_shared,
    host_assignments,
    literal_binding,
    resolve_grid,
    sites_of,
)
from diagnose.rewrite.source import (
    EFFECTS,
    Kernel,
    calls,
    code,
    coupled_by_axis,
    dotted,
    grid_coupled,
    int_value,
    kernels,
    keyword,
    names,
    param_default,
    positional,
    simple_assignment,
    tl_name,
    walk,
)

OPTIONS = ("num_warps", "num_stages")
POWER_OF_TWO = ("triton.next_power_of_2", "next_power_of_2")
ATOMICS = tuple(e for e in EFFECTS if e.startswith("atomic"))


@dataclass(frozen=True)
class Slot:
    """Where one launch value is set: `kind` is kwarg / host / absent / default; `current` its value (None
    if absent). `grid_literal`: the literal block of the grid axis that must follow it (`triton.cdiv(M,
    64)` beside `BLOCK_M=64`), which changes with it."""

    param: str
    kind: str
    current: int | None
    host_name: str | None = None
    grid_literal: cst.BaseExpression | None = None


def grid_literal(kernel: Kernel, site: LaunchSite, param: str, value: int) -> cst.BaseExpression | None:
    """The literal `L` of the grid axis `triton.cdiv(extent, L)` that `param` tiles, where `L` is its
    value: the grid then follows a new value when `L` changes with it (a literal grid written beside
    literal tiles, as first versions write matmuls). None where the axis is written otherwise, other
    tiles of that axis exist, or the grid serves other launches too."""
    grid, _ = resolve_grid(site)
    axes = grid_elements(grid)
    if axes is None or grid_shared_here(site):
        return None
    for axis, params in coupled_by_axis(kernel).items():
        if params != {param} or axis >= len(axes) or not isinstance(axes[axis], cst.Call):
            continue
        parts = cdiv_parts(axes[axis])
        if parts is not None and int_value(parts[1]) == value:
            return parts[1]
    return None


def slots(kernel: Kernel, site: LaunchSite, params: tuple[str, ...]) -> dict[str, Slot] | str:
    """The slot of each of `params` at `site`, or why one cannot be changed."""
    host = site.host
    grid, _ = resolve_grid(site)
    grid_names = _computed_from(host, names(grid))
    coupled = grid_coupled(kernel)
    callable_grid = isinstance(grid, cst.Lambda) or grid_function(host, grid) is not None
    out = {}
    for param in params:
        arg = site.arg(kernel, param)
        if arg is None:
            if site.passes_unpacked(param):
                return (
                    f"the launch's **kwargs may set {param}"
                    if param in OPTIONS
                    else f"the launch does not pass {param}"
                )
            if param in OPTIONS:
                out[param] = Slot(param, "absent", None)
                continue
            default = int_value(param_default(kernel, param))
            if default is None:
                return f"the launch does not pass {param}"
            # a signature default (`BLOCK_M: tl.constexpr = 64`): a new value is passed by keyword
            follows = grid_literal(kernel, site, param, default) if param in coupled and not callable_grid else None
            if param in coupled and not callable_grid and follows is None:
                return f"{param} is its signature's default {default} and the grid does not follow it"
            out[param] = Slot(param, "default", default, grid_literal=follows)
            continue
        if arg.keyword is None and param in OPTIONS:
            return f"{param} is not passed by keyword"
        literal = int_value(arg.value)
        if literal is not None:
            follows = grid_literal(kernel, site, param, literal) if param in coupled and not callable_grid else None
            if param in coupled and not callable_grid and follows is None:
                return f"{param} is a literal at the launch but the grid does not follow it"
            out[param] = Slot(param, "kwarg", literal, grid_literal=follows)
            continue
        if isinstance(arg.value, cst.Name) and site.constant(arg.value.value) is not None:
            # a module constant (`BLOCK_SIZE = 1024` at the top): the launch is given a literal in its place,
            # so other launches reading the constant keep it
            name = arg.value.value
            if param in coupled and not callable_grid:
                return f"{param}={name} is a module constant the grid does not follow at this launch alone"
            out[param] = Slot(param, "kwarg", site.constant(name))
            continue
        if isinstance(arg.value, cst.Name):
            binding = host_binding(host, arg.value.value)
            if binding is None:
                return f"{param}={arg.value.value} is not bound once to a literal in {site.host_name}"
            if param in coupled and not callable_grid and binding.name not in grid_names:
                return f"the grid is not computed from {binding.name}"
            out[param] = Slot(param, "host", binding.value, binding.name)
            continue
        return f"{param}={code(arg.value)} is computed on the host"
    return out


def read_beyond_launch(site: LaunchSite, name: str) -> bool:
    """Whether `site`'s host reads `name` anywhere but the launch and the statements that compute what
    the launch and its grid are given (`mid_size = triton.cdiv(M, block_size)`, `num_warps =
    min(max(BLOCK_SIZE // 256, 1), 8)`): the tutorials' `if N > BLOCK_SIZE: raise RuntimeError(...)`
    is such a read, and a block capped below N would then raise."""
    grid, _ = resolve_grid(site)
    feeding = _computed_from(site.host, names(site.call) | names(grid))
    allowed = [site.statement, *(s for n in feeding for s in host_assignments(site.host, n))]
    skipped = {id(node) for s in allowed for node in walk(s)}
    for node in walk(site.host.body):  # a keyword's or an attribute's name is not a read of the variable
        if isinstance(node, cst.Arg) and node.keyword is not None:
            skipped.add(id(node.keyword))
        elif isinstance(node, cst.Attribute):
            skipped.add(id(node.attr))
    return any(
        isinstance(node, cst.Name) and node.value == name and id(node) not in skipped for node in walk(site.host.body)
    )


def _computed_from(host: cst.FunctionDef, wanted: set[str]) -> set[str]:
    """`wanted` and every name the assignments of `host` compute them from, transitively."""
    out, frontier = set(), set(wanted)
    while frontier:
        name = frontier.pop()
        out.add(name)
        for statement in host_assignments(host, name):
            frontier |= names(statement) - out
    return out


def host_binding(host: cst.FunctionDef, name: str) -> HostBinding | None:
    """`name`'s one binding in `host` to a literal, or to `min(literal, expr)`: a block size capped by
    the problem (`BLOCK = min(1024, triton.next_power_of_2(n))`), whose literal is the value set; or,
    with no literal, to a power of two computed from the problem (`triton.next_power_of_2(...)`
    anywhere in the value), whose value is unknown here (`capped` writes a new one)."""
    found = literal_binding(host, name)
    if found is not None:
        return found
    statements = host_assignments(host, name)
    target, value = simple_assignment(statements[0]) if len(statements) == 1 else (None, None)
    if target != name or not isinstance(value, cst.Call):
        return None
    if dotted(value.func) == "min":
        args = positional(value)
        literals = [a.value for a in args if int_value(a.value) is not None]
        if len(args) != len(value.args) or len(literals) > 1:
            return None
        if literals:
            return HostBinding(name, statements[0], literals[0], int_value(literals[0]))
    if any(isinstance(n, cst.Call) and dotted(n.func) in POWER_OF_TWO for n in (value, *walk(value))):
        return HostBinding(name, statements[0], value, None)
    return None


def capped(binding: HostBinding, value: int) -> cst.BaseExpression:
    """The new value of a binding: the literal itself, or a computed power of two capped at it."""
    if binding.value is not None:
        return cst.Integer(str(value))
    computed = binding.literal
    if isinstance(computed, cst.Call) and dotted(computed.func) == "min":
        return computed.with_changes(
            args=[
                cst.Arg(cst.Integer(str(value)), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                *computed.args,
            ]
        )
    return cst.parse_expression(f"min({value}, {code(computed)})")


def grid_shared_here(site: LaunchSite) -> bool:
    """`grid_shared` among the launches of the site's own host (the only ones its grid variable reaches)."""
    return grid_shared(cst.Module(body=[site.host]), site)


def set_values(module: cst.Module, kernel_name: str, values: dict[str, int], site_index: int = 0) -> cst.Module:
    """The module with the launch values of `kernel_name`'s launch site set to `values`."""
    kernel = kernels(module)[kernel_name]
    site = sites_of(module, kernel_name)[site_index]
    found = slots(kernel, site, tuple(values))
    if isinstance(found, str):
        raise ValueError(found)
    mapping = {}
    for param, value in values.items():
        slot = found[param]
        if slot.kind == "kwarg":
            mapping[site.arg(kernel, param).value] = cst.Integer(str(value))
        elif slot.kind == "host":
            binding = host_binding(site.host, slot.host_name)
            mapping[binding.literal] = capped(binding, value)
        if slot.grid_literal is not None:
            mapping[slot.grid_literal] = cst.Integer(str(value))
    module = replace(module, mapping)
    absent = {p: v for p, v in values.items() if found[p].kind in ("absent", "default") and v != found[p].current}
    if absent:
        site = sites_of(module, kernel_name)[site_index]
        call = site.call
        for param, value in absent.items():
            call = set_keyword(call, param, cst.Integer(str(value)))
        module = replace(module, {site.call: fit_launch(site, call)})
    return module


def current_values(module: cst.Module, kernel_name: str, params: tuple[str, ...]) -> dict[str, int | None] | str:
    kernel = kernels(module)[kernel_name]
    site = sites_of(module, kernel_name)[0]
    found = slots(kernel, site, params)
    return found if isinstance(found, str) else {p: s.current for p, s in found.items()}


def computed_on_host(values: dict, params: tuple[str, ...]) -> str | None:
    """Why tiles among `params` whose values are computed from the problem's sizes on the host (None in
    `current_values`) cannot change: a power of two may be all of a dimension no loop steps through."""
    computed = [p for p in params if values[p] is None]
    return f"{', '.join(computed)} computed from the problem's sizes on the host" if computed else None


def shown(values: dict) -> str:
    """`BLOCK=1024, num_warps=4`: launch values as a reason quotes them."""
    return ", ".join(f"{k}={v}" for k, v in values.items())


def every_access_masked(kernel: Kernel) -> bool:
    """Every `tl.load` / `tl.store` has a mask, or a block pointer's `boundary_check`: a larger block only
    adds masked-off lanes at the edges."""
    accesses = calls(kernel.node.body, "load", "store")
    for call in accesses:
        is_store = call.func.attr.value == "store" if isinstance(call.func, cst.Attribute) else False
        if keyword(call, "boundary_check") is not None:
            continue
        if keyword(call, "mask") is None and len(positional(call)) < (3 if is_store else 2):
            return False
    return bool(accesses)


def tile_accesses_masked(kernel: Kernel, block: str, axes: frozenset[int] = frozenset()) -> bool:
    """Every load, store and atomic whose pointer may depend on `block` (so on `tl.arange(0, block)`),
    or that runs under a condition that may, is masked: a new block size only adds masked-off lanes.

    An access independent of it (the per-row `tl.store(y_ptr + row, tl.sum(acc))` of a reduction on
    a grid of rows) touches the same addresses whatever the block size, so needs no mask. Only the
    pointer decides what an access touches: Triton refuses a tensor value or mask at a scalar address.
    The program ids of the grid `axes` computed from the block size depend on it too, so there
    `tl.store(partial_ptr + pid, ...)` needs a mask. See `dependence.py` for how far names are followed.
    """
    found = dependence(kernel.node, block, axes, ("load", "store", *ATOMICS))
    for call, context in found.accesses:
        pointer = keyword(call, "pointer") or next(iter(positional(call)), None)
        if (pointer is None or found.depends(pointer.value, context)) and not _masked(call):
            return False
    return bool(found.accesses)


def _masked(call: cst.Call) -> bool:
    op = tl_name(call.func)
    if op == "atomic_cas":  # takes no mask
        return False
    mask = keyword(call, "mask")
    if mask is not None:
        return dotted(mask.value) != "None"
    return len(positional(call)) > (1 if op == "load" else 2)


# ---------------------------------------------------------------- autotuned kernels


@dataclass(frozen=True)
class TunedConfigs:
    """The literal `configs=[triton.Config({...}, num_warps=..., num_stages=...), ...]` of a kernel's
    `@triton.autotune`, each config read as its constexprs and options (None where not a literal)."""

    configs: cst.List
    values: tuple[dict[str, int | None], ...]


def tuned_configs(module: cst.Module, kernel_name: str, params: tuple[str, ...]) -> TunedConfigs | str:
    """The kernel's autotune configs, every one setting each of `params` that is not a launch option;
    or why they cannot be edited (a list built elsewhere, as FlagGems' `runtime.get_tuned_config(...)`,
    or a config that leaves a tile to the launch)."""
    kernel = kernels(module)[kernel_name]
    autotune = next(
        (
            d.decorator
            for d in kernel.node.decorators
            if isinstance(d.decorator, cst.Call) and (dotted(d.decorator.func) or "").endswith("autotune")
        ),
        None,
    )
    if autotune is None:
        return "not under @triton.autotune(configs=...)"
    configs = keyword(autotune, "configs") or (
        autotune.args[0] if autotune.args and autotune.args[0].keyword is None else None
    )
    if configs is None or not isinstance(configs.value, cst.List) or not configs.value.elements:
        return "its autotune configs are not a literal list of triton.Config"
    values = []
    for element in configs.value.elements:
        config = element.value
        found = config_values(config)
        if found is None:
            return f"autotune config {code(config)} is not triton.Config({{...}}, ...)"
        missing = [p for p in params if p not in OPTIONS and p not in found]
        if missing:
            return f"autotune config {code(config)} does not set {', '.join(missing)}"
        values.append(found)
    opaque = [k for k, v in values[0].items() if k not in OPTIONS and v is None]
    if opaque:  # a new config copies the first one's other constexprs
        return f"the first autotune config sets {', '.join(opaque)} to something other than an integer literal"
    return TunedConfigs(configs.value, tuple(values))


def config_values(config: cst.BaseExpression) -> dict[str, int | None] | None:
    """A written `triton.Config({"BLOCK": 128}, num_warps=4)` read as its constexprs and options (None
    where a value is not an integer literal, or an option is not given); None if it is not one."""
    if (
        not isinstance(config, cst.Call)
        or not (dotted(config.func) or "").endswith("Config")
        or not config.args
        or not isinstance(config.args[0].value, cst.Dict)
    ):
        return None
    found: dict[str, int | None] = {}
    for item in config.args[0].value.elements:
        if isinstance(item, cst.DictElement) and isinstance(item.key, cst.SimpleString):
            found[item.key.evaluated_value] = int_value(item.value)
    for option in OPTIONS:
        given = keyword(config, option)
        found[option] = int_value(given.value) if given is not None else None
    return found


def config_first(module: cst.Module, kernel_name: str, values: dict[str, int]) -> cst.Module:
    """The module with a config of `values` first in the kernel's autotune list: an equal config moves
    there, else a new one (the first config's other constexprs kept) is added before the others, so
    the autotuner still times every config the authors wrote and one more."""
    tuned = tuned_configs(module, kernel_name, tuple(values))
    if isinstance(tuned, str):
        raise ValueError(tuned)
    elements = list(tuned.configs.elements)
    same_at = [i for i, found in enumerate(tuned.values) if all(found.get(k) == v for k, v in values.items())]
    if same_at:
        first = elements.pop(same_at[0])
    else:
        constexprs = {k: v for k, v in tuned.values[0].items() if k not in OPTIONS}
        constexprs.update({k: v for k, v in values.items() if k not in OPTIONS})
        shown_constexprs = ", ".join(f"{k!r}: {v}" for k, v in constexprs.items()).replace("'", '"')
        options = "".join(f", {k}={values[k]}" for k in OPTIONS if k in values)
        first = elements[0].with_changes(value=cst.parse_expression(f"triton.Config({{{shown_constexprs}}}{options})"))
    if elements:
        # keep the list's separators: the new first element takes the old first one's comma
        first = first.with_changes(
            comma=elements[0].comma
            if elements[0].comma is not cst.MaybeSentinel.DEFAULT
            else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
    return replace(module, {tuned.configs: tuned.configs.with_changes(elements=[first, *elements])})


def first_tuned_values(
    module: cst.Module, kernel_name: str, site: LaunchSite, params: tuple[str, ...], grid_tiles: tuple[str, ...]
) -> dict[str, int | None] | str:
    """What a tile codemod reads of an autotuned kernel before it puts its shape first in the configs:
    the first config's values of `params`, or why its configs cannot take a new first one (not a
    literal list, or a grid that does not read `grid_tiles` from its meta-parameters)."""
    tuned = tuned_configs(module, kernel_name, params)
    if isinstance(tuned, str):
        return tuned
    if not grid_reads_meta(site, grid_tiles):
        return "autotuned, and its grid is not a callable reading the tiles from its meta-parameters"
    return {k: tuned.values[0].get(k) for k in params}


def grid_reads_meta(site: LaunchSite, tiles: tuple[str, ...]) -> bool:
    """An autotuned launch's grid is a callable that reads each of `tiles` from its meta-parameters
    (`lambda META: (triton.cdiv(M, META["BLOCK_M"]), ...)`), so the grid follows whichever config runs."""
    grid, _ = resolve_grid(site)
    if not isinstance(grid, cst.Lambda):
        return False
    text = code(grid.body)
    return all(f'"{t}"' in text or f"'{t}'" in text for t in tiles)
