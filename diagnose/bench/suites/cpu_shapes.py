"""Scaled-down shapes for suites that ship only GPU-sized inputs, so that they can run on the CPU.

KernelBench problems (and MultiKernelBench's classic tasks, written the same way) size their inputs
with module-level constants (`batch_size = 4096`, `dim = 393216`: a median level-1 input of about
500 M elements); NPUKernelBench tasks read theirs from a `.json` file of cases beside the reference.
The Triton interpreter on two CPU cores cannot run those sizes. On the `cpu` device only, and only in
worker processes (the parent never runs a suite's code), the sizes are scaled down:

- a problem module (`load_problem`): it is imported as it is, then each top-level assignment made only
  of integer literals, names of such constants and arithmetic (`dim = 4096 * 2`, `shape = (128, 512)`)
  is evaluated again, in order, with every integer literal of at least `MIN_SIZE` divided by a factor
  (at least 1; kernel sizes, strides and channel counts below `MIN_SIZE` are left alone). Factors are
  tried from 1 up: the first whose inputs and parameters hold at most `ELEMENTS` elements (counted on
  the `meta` device, nothing allocated) and whose reference forward runs at that size is kept; where
  none does, the smallest size up to `FALLBACK_ELEMENTS` whose forward runs, else the sizes as written
  (the worker's memory limit and timeout then apply). Model code is never changed;
- a `.json` case (`scale_case`): every dimension of at least `MIN_SIZE` in any input's shape is
  divided by the factor, and an integer attribute equal to such a dimension (`normalized_shape`)
  follows it, so shapes stay consistent; the case is then built by the reference's own
  `get_input_groups()` and checked the same way.

The choice is written to a record file beside the generated task (read again by the verification's
other workers, and by the adapter for its rows: "scaled for the CPU: dim 393216 -> 384, ...").
"""

from __future__ import annotations

import ast
import contextlib
import copy
import importlib.util
import json
import math
import sys
import uuid
from pathlib import Path
from types import ModuleType

from diagnose import syntax

ELEMENTS = 1 << 18
FALLBACK_ELEMENTS = 1 << 24  # where no factor within ELEMENTS runs: the most tried before keeping the sizes as written
MIN_SIZE = 16
FACTORS = tuple(2**i for i in range(17))
PURE = (
    ast.Expression,
    ast.Constant,
    ast.Name,
    ast.Load,
    ast.BinOp,
    ast.UnaryOp,
    ast.Tuple,
    ast.List,
    ast.operator,
    ast.unaryop,
)


def scaled(value: int, factor: int) -> int:
    return max(1, value // factor) if value >= MIN_SIZE else value


def size_assignments(tree: ast.Module) -> list[tuple[str, ast.expr]]:
    """Top-level `NAME = <integer arithmetic>` assignments, in order (names of other such ones allowed)."""
    out: list[tuple[str, ast.expr]] = []
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        known = {name for name, _ in out}
        nodes = list(ast.walk(node.value))
        if (
            all(isinstance(n, PURE) for n in nodes)
            and any(isinstance(n, (ast.Constant, ast.Name)) for n in nodes)
            and all(type(n.value) is int for n in nodes if isinstance(n, ast.Constant))
            and all(n.id in known for n in nodes if isinstance(n, ast.Name))
        ):
            out.append((node.targets[0].id, node.value))
    return out


class _Scale(ast.NodeTransformer):
    def __init__(self, factor: int) -> None:
        self.factor = factor

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        return ast.copy_location(ast.Constant(scaled(node.value, self.factor)), node)


def apply_factor(module: ModuleType, assignments: list[tuple[str, ast.expr]], original: dict, factor: int) -> dict:
    """Set the module's size constants for `factor` (1: as written); the ones that changed."""
    changed = {}
    for name, expr in assignments:
        tree = ast.fix_missing_locations(ast.Expression(_Scale(factor).visit(copy.deepcopy(expr))))
        value = eval(compile(tree, "<sizes>", "eval"), {"__builtins__": {}}, vars(module))  # noqa: S307 - literals only
        setattr(module, name, value)
        if value != original[name]:
            changed[name] = f"{original[name]} -> {value}"
    return changed


@contextlib.contextmanager
def on_meta():
    """Factories make `meta` tensors, and `.cuda()` / `.to(device)` leave a meta tensor where it is."""
    import torch  # deferred: torch is heavy
    from torch.overrides import TorchFunctionMode  # deferred: torch is heavy

    class StayOnMeta(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if (
                func in (torch.Tensor.cuda, torch.Tensor.cpu, torch.Tensor.to)
                and args
                and isinstance(args[0], torch.Tensor)
                and args[0].is_meta
            ):
                dtype = kwargs.get("dtype") or next((a for a in args[1:] if isinstance(a, torch.dtype)), None)
                return args[0] if dtype is None else torch.empty_like(args[0], dtype=dtype)
            return func(*args, **kwargs)

    with torch.device("meta"), StayOnMeta():
        yield


def elements(module: ModuleType) -> float:
    """Input elements plus parameters at the module's current sizes (meta tensors); inf where unknown."""
    import torch  # deferred: torch is heavy

    try:
        with on_meta():
            inputs = list(module.get_inputs())
            model = module.Model(*module.get_init_inputs())
        return sum(t.numel() for t in inputs if isinstance(t, torch.Tensor)) + sum(
            p.numel() for p in model.parameters()
        )
    except Exception:  # noqa: BLE001 - user code: its size stays unknown
        return math.inf


def runs(module: ModuleType, inputs=None) -> bool:
    """Whether the reference forward runs (real CPU tensors, at the current sizes)."""
    import torch  # deferred: torch is heavy

    try:
        with torch.no_grad():
            module.Model(*module.get_init_inputs())(*(module.get_inputs() if inputs is None else inputs))
        return True
    except Exception:  # noqa: BLE001 - user code
        return False


def import_file(path: Path, name: str | None = None) -> ModuleType:
    """Import a suite file by path, its folder first on `sys.path` (for the helpers beside it), as
    `name` (a stable name lets its functions be pickled by name) or a fresh one."""
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = name or f"diagnose_suite_{path.stem}_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_LOADED: dict[tuple[str, str], ModuleType] = {}


def load_problem(path: str, device: str, record: str | None = None) -> ModuleType:
    """Import a problem file; on the CPU with its size constants scaled down (module docstring)."""
    if (path, device) in _LOADED:  # one module per worker: the reference's Model is the one constructed
        return _LOADED[path, device]
    module = import_file(Path(path))
    _LOADED[path, device] = module
    assignments = size_assignments(syntax.parse(Path(path).read_text(encoding="utf-8"), filename=path))
    if device != "cpu" or not assignments:
        return module
    original = {name: getattr(module, name) for name, _ in assignments}
    saved = json.loads(Path(record).read_text()) if record and Path(record).is_file() else None
    if saved is not None:
        apply_factor(module, assignments, original, saved["factor"])
        return module
    tried: list[tuple[float, int]] = []
    chosen = None
    for factor in FACTORS:
        apply_factor(module, assignments, original, factor)
        size = elements(module)
        tried.append((size, factor))
        if size <= ELEMENTS and runs(module):
            chosen = factor
            break
    for size, factor in sorted(tried) if chosen is None else ():  # nothing small enough runs: the smallest that does
        if size != math.inf and size > FALLBACK_ELEMENTS:
            break
        apply_factor(module, assignments, original, factor)
        if runs(module):
            chosen = factor
            break
    chosen = chosen or 1
    changed = apply_factor(module, assignments, original, chosen)
    if record:
        Path(record).write_text(json.dumps({"factor": chosen, "changed": changed}))
    return module


def scale_case(case: dict, factor: int) -> dict:
    """A `.json` case with its dimensions of at least `MIN_SIZE` divided by `factor` (module docstring)."""
    dims = {
        d
        for spec in case.get("inputs", [])
        if isinstance(spec, dict) and isinstance(spec.get("shape"), list)
        for d in spec["shape"]
        if isinstance(d, int) and d >= MIN_SIZE
    }

    def follow(value):
        if type(value) is int and value in dims:
            return scaled(value, factor)
        if isinstance(value, list):
            return [follow(v) for v in value]
        return value

    inputs = []
    for spec in case.get("inputs", []):
        if isinstance(spec, dict):
            spec = dict(spec)
            if isinstance(spec.get("shape"), list):
                spec["shape"] = [scaled(d, factor) if isinstance(d, int) else d for d in spec["shape"]]
            if "value" in spec:
                spec["value"] = follow(spec["value"])
        inputs.append(spec)
    return {**case, "inputs": inputs}


def case_elements(case: dict) -> int:
    return sum(
        math.prod(spec["shape"])
        for spec in case.get("inputs", [])
        if isinstance(spec, dict)
        and isinstance(spec.get("shape"), list)
        and all(isinstance(d, int) for d in spec["shape"])
    )
