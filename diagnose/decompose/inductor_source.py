"""Inductor's output code for one subgraph rewritten as a standalone Triton `ModelNew` (text only).

Inductor's module (`output_code.py`, as `TORCH_COMPILE_DEBUG` writes it) holds each kernel as
`name = async_compile.triton('name', '''<source>''', device_str=...)` and the host code as
`call(args)` (a method of `Runner` in torch 2.13). Each kernel becomes a plain `@triton.jit` kernel
launched with `kernel[grid](...)`, so that the harness counts its launches (Inductor's own launcher,
`CachingAutotuner`, does not go through `JITFunction.run`):

- its `@triton_heuristics.<kind>(...)` decorator is replaced by `@triton.autotune` over Inductor's own
  configs for it (read by the worker, `inductor.py`), keyed on its `*numel` arguments, with the
  arguments it mutates restored between configs (`mutated_arg_names`, as Inductor's autotuner clones
  them); `triton_helpers.set_driver_to_cpu()` (`_gpu()` on cuda) goes; `triton_helpers`, `libdevice`, `tl_math` stay;
- its grid comes from `grid_type` (Grid1D/2D/3D, one program per block of each dimension; Grid2DWithYZOverflow
  spreads the y blocks over y and z as Inductor does);
- in the host code, `empty_strided_<device>(size, stride, dtype)` becomes `torch.empty_strided` on the
  inputs' device, `reinterpret_tensor` `torch.as_strided`, `<kernel>.run(..., stream=...)`
  `<kernel>[grid](...)`; `extern_kernels.*` (torch ops: mm, addmm, convolution, ...) stay; size
  asserts, stream lookups and CUDA's device guard (`with torch.cuda._DeviceGuard(0):`, its block runs one
  level up) and `torch.cuda.set_device` go.

Anything else (another kernel kind or grid, a name the host code calls that this file does not define)
is `Unsupported`, with a one-line reason.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

from diagnose import syntax

KERNEL = re.compile(r"^(\w+) = async_compile\.triton\('(\w+)', '''\n(.*?)''', device_str='(\w+)'\)", re.S | re.M)
DECORATOR = re.compile(r"^@triton_heuristics\.(\w+)\(\n(.*?)^\)\n(?=@triton\.jit)", re.S | re.M)
GRID_TYPE = re.compile(r"'grid_type': '(\w+)'")
MUTATED = re.compile(r"'mutated_arg_names': \[([^\]]*)\]")
EMPTY = re.compile(r"empty_strided_\w+\((\([^()]*\)), (\([^()]*\)), (torch\.\w+)\)")
LAUNCH = re.compile(r"^(\s*)(\w+)\.run\((.*), stream=\w+\)$")
# Host-code lines with nothing to do outside Inductor: input checks, stream lookups, device guards.
DROPPED = re.compile(
    r"^\s*(assert_size_stride|assert_alignment|\w+ = get_raw_stream|args\.clear\(\)|"
    r"torch\.cuda\.set_device|with torch\.cuda\._DeviceGuard)"
)
KINDS = ("pointwise", "reduction", "persistent_reduction")
GRIDS = {
    "Grid1D": ("grid_1d", ("x",)),
    "Grid2D": ("grid_2d", ("x", "y")),
    "Grid3D": ("grid_3d", ("x", "y", "z")),
    "Grid2DWithYZOverflow": ("grid_2d_yz_overflow", ("x", "y")),
}
# Inductor's Grid2DWithYZOverflow: a y count past CUDA's 65535 spreads over y and z (its kernels read
# `program_id(1) + program_id(2) * num_programs(1)`), as `triton_heuristics.Grid2DWithYZOverflow` computes it.
MAX_Y_GRID = 65535
GRID_2D_YZ_OVERFLOW = '''

def grid_2d_yz_overflow(meta):
    """Inductor's Grid2DWithYZOverflow: x blocks; the y blocks spread over y and z, at most {most} each."""
    y_blocks = triton.cdiv(meta["ynumel"], meta.get("YBLOCK", 1))
    z = triton.cdiv(y_blocks, {most})
    return (triton.cdiv(meta["xnumel"], meta.get("XBLOCK", 1)), 0 if z == 0 else triton.cdiv(y_blocks, z), z)
'''
# Names the rewritten host code may use beyond its own locals and the kernels.
HOST_NAMES = frozenset({"torch", "triton", "extern_kernels", "aten", "device", "self", "math", "inf", "nan"})
GRID_FUNCTION = '''

def {name}(meta):
    """Inductor's {grid_type}: one program per block of {dims}."""
    return ({cells},)
'''
IMPORTS = """import math
from pathlib import Path

import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.select_algorithm import extern_kernels

HERE = Path(__file__).resolve().parent
aten = torch.ops.aten
inf, nan = math.inf, math.nan
"""


class Unsupported(Exception):
    """Inductor's code for a subgraph has something this rewrite does not handle; the message says what."""


@dataclass(frozen=True)
class Kernel:
    """One Triton kernel of Inductor's module: its name, source, heuristic kind, grid and configs."""

    name: str
    source: str
    kind: str
    grid_type: str
    decorator: str


@dataclass(frozen=True)
class Config:
    """One of Inductor's launch configs for a kernel (a `triton.Config`)."""

    kwargs: tuple[tuple[str, int], ...]
    num_warps: int
    num_stages: int

    def code(self) -> str:
        values = ", ".join(f"{k!r}: {v!r}" for k, v in self.kwargs)
        return f"triton.Config({{{values}}}, num_warps={self.num_warps}, num_stages={self.num_stages})"


def kernels(output_code: str) -> list[Kernel]:
    """The Triton kernels of Inductor's module, in the order it defines them."""
    found = []
    for variable, name, source, _device in KERNEL.findall(output_code):
        decorator = DECORATOR.search(source)
        if variable != name or decorator is None:
            raise Unsupported(f"kernel {name}: no @triton_heuristics decorator before its @triton.jit")
        if decorator[1] not in KINDS:
            raise Unsupported(f"kernel {name}: Inductor kind {decorator[1]} (handled: {', '.join(KINDS)})")
        grid = GRID_TYPE.search(decorator[2])
        if grid is None or grid[1] not in GRIDS:
            raise Unsupported(f"kernel {name}: grid {grid[1] if grid else '?'} (handled: {', '.join(GRIDS)})")
        found.append(Kernel(name, source, decorator[1], grid[1], decorator[0]))
    return found


def kernel_body(kernel: Kernel) -> str:
    """The kernel's source without its imports, driver switch and heuristics decorator."""
    text = kernel.source.replace(kernel.decorator, "")
    lines = [
        line
        for line in text.splitlines()
        if not line.startswith(("import ", "from ")) and "triton_helpers.set_driver_to_" not in line
    ]
    return "\n".join(lines).strip("\n")


def parameters_of(body: str, name: str) -> list[str]:
    """The kernel's parameter names, from its `def`."""
    header = re.search(rf"^def {name}\((.*?)\):", body, re.S | re.M)
    return [p.split(":")[0].strip() for p in header[1].split(",") if p.strip()]


def autotuned(kernel: Kernel, configs: list[Config]) -> str:
    """The kernel as a plain `@triton.jit` under `@triton.autotune` over Inductor's configs."""
    body = kernel_body(kernel)
    numels = [p for p in parameters_of(body, kernel.name) if p.endswith("numel")]
    mutated = MUTATED.search(kernel.decorator)
    restore = re.findall(r"'(\w+)'", mutated[1]) if mutated else []
    listed = "".join(f"        {c.code()},\n" for c in configs)
    restored = f", restore_value={restore!r}" if restore else ""
    head = (
        f"# Inductor's {kernel.kind} kernel, {kernel.grid_type}; its configs are Inductor's for it.\n"
        f"@triton.autotune(\n    configs=[\n{listed}    ],\n    key={numels!r}{restored},\n)\n"
    )
    return head + body + "\n"


def grid_function(grid_type: str) -> str:
    if grid_type == "Grid2DWithYZOverflow":
        return GRID_2D_YZ_OVERFLOW.format(most=MAX_Y_GRID)
    name, dims = GRIDS[grid_type]
    cells = ", ".join(f'triton.cdiv(meta["{d}numel"], meta.get("{d.upper()}BLOCK", 1))' for d in dims)
    return GRID_FUNCTION.format(name=name, grid_type=grid_type, dims=", ".join(dims), cells=cells)


def host_body(output_code: str) -> tuple[list[str], str]:
    """The host function's argument names and the rest of its body (dedented), from `call(args)`."""
    found = re.search(r"^( *)def call\((?:self, )?args\):\n(.*?)(?=^\S|^\1\S|\Z)", output_code, re.S | re.M)
    if found is None:
        raise Unsupported("Inductor's module has no call(args)")
    body = textwrap.dedent(found[2])
    unpack = re.search(r"^(.*?) = args$", body, re.M)
    if unpack is None:
        raise Unsupported("Inductor's call(args) does not unpack its arguments")
    names = [n.strip() for n in unpack[1].split(",") if n.strip()]
    return names, body[unpack.end() :]


def rewritten_host(body: str, grids: dict[str, str]) -> list[str]:
    """The host code's lines with Inductor's helpers replaced by torch and Triton calls."""
    lines, dedent = [], 0
    for line in body.splitlines():
        if DROPPED.match(line):
            if "_DeviceGuard" in line:  # its block runs as is, one level up
                dedent = 4
            continue
        line = line[dedent:] if line[:dedent].isspace() else line
        line = EMPTY.sub(r"torch.empty_strided(\1, \2, dtype=\3, device=device)", line)
        line = line.replace("reinterpret_tensor(", "torch.as_strided(")
        launch = LAUNCH.match(line)
        if launch:
            indent, name, arguments = launch.groups()
            line = f"{indent}{name}[{grids[name]}]({arguments})"
        if line.strip():
            lines.append(line.rstrip())
    return lines


def undefined_names(lines: list[str], known: set[str]) -> list[str]:
    """Names the host code reads that it neither assigns nor has from this file."""
    tree = syntax.parse("def forward():\n" + "".join(f"    {line}\n" for line in lines))
    assigned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return sorted(read - assigned - known - HOST_NAMES)


@dataclass(frozen=True)
class Host:
    """What the `ModelNew` around the kernels needs from the task: its docstring, `__init__` body (as
    the task file has it), forward arguments, the code of each of Inductor's graph inputs in order
    (parameters first), the forward argument whose device the outputs take, and whether the forward
    returns one tensor (else a tuple)."""

    docstring: str
    init_body: str
    arguments: tuple[str, ...]
    graph_inputs: tuple[str, ...]
    device_of: str
    single_output: bool


def single_returned(line: str) -> str:
    """`return (buf0, )` as `return buf0`: Inductor returns a tuple where the subgraph returns one tensor,
    and the composite hands each subgraph's result to the next as it is. The one element may hold commas
    of its own (`return (torch.as_strided(buf0, (2, 400), (400, 1), 0), )`)."""
    statement = syntax.parse(line.strip()).body[0]
    if isinstance(statement, ast.Return) and isinstance(statement.value, ast.Tuple) and len(statement.value.elts) == 1:
        return line[: len(line) - len(line.lstrip())] + f"return {ast.unparse(statement.value.elts[0])}"
    return line


def model_new(output_code: str, configs: dict[str, list[Config]], host: Host) -> str:
    """The candidate file's text: the kernels, their grids and `ModelNew` running Inductor's host code."""
    found = kernels(output_code)
    if not found:
        raise Unsupported(
            "Inductor generated no Triton kernel for it (only torch ops: "
            + (", ".join(sorted(set(re.findall(r"extern_kernels\.\w+", output_code)))) or "none")
            + ")"
        )
    grids = {k.name: GRIDS[k.grid_type][0] for k in found}
    names, body = host_body(output_code)
    if len(names) != len(host.graph_inputs):
        raise Unsupported(f"Inductor's call takes {len(names)} arguments, the subgraph has {len(host.graph_inputs)}")
    lines = rewritten_host(body, grids)
    # After the rewrite: CUDA's device guard and `set_device` are gone, the outputs take the inputs' device.
    if any("device(" in line for line in lines):
        raise Unsupported("Inductor's host code names a device of its own")
    unknown = undefined_names(lines, set(names) | set(grids) | set(grids.values()))
    if unknown:
        raise Unsupported(f"Inductor's host code calls {', '.join(unknown)}, which has no standalone equivalent")
    if host.single_output:
        lines[-1] = single_returned(lines[-1])
    unpack = f"{', '.join(names)}, = {', '.join(host.graph_inputs)},"
    forward = (
        f"    def forward(self, {', '.join(host.arguments)}):\n"
        "        # Inductor's graph inputs: the parameters (and buffers), then the forward's tensors.\n"
        f"        {unpack}\n        device = {host.device_of}.device\n" + "".join(f"        {line}\n" for line in lines)
    )
    init = textwrap.indent(textwrap.dedent(host.init_body), "        ")
    return (
        f'"""{host.docstring}"""\n'
        + IMPORTS
        + "".join(grid_function(g) for g in dict.fromkeys(k.grid_type for k in found))
        + "".join("\n\n" + autotuned(k, configs[k.name]) for k in found)
        + "\n\nclass ModelNew(nn.Module):\n    def __init__(self):\n"
        + init.rstrip()
        + "\n\n"
        + forward
    )
