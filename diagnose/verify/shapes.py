"""Unseen shapes: each input group checked once more at sizes the task did not name.

A kernel written for the exact sizes of the task's groups (a block as wide as the row, no mask, a grid
that assumes divisibility, a size copied in as a constant) is correct there and wrong elsewhere; checked
only at those sizes it passes. So the reference job draws one more case per group with the task's size
constants changed, and the candidate must match the reference there too.

Which sizes: the module-level integers (2 or more; not `bool`) that the group's input function reads,
directly or through the module's own helper functions, and that neither `get_init_inputs` nor any method
of `Model` reads. Those shape only the inputs: the model is built as before and the reference sees
tensors of another size. KernelBench-style tasks keep their sizes in exactly such constants
(`batch_size = 16`, `dim = 16384`). Each becomes odd and a little larger (`n + 1` when even, `n + 2`
when odd): no power of two, no multiple of a block.

Not perturbed: a task that declares `FIXED_SHAPES = True` (the verdict says so), groups given as lists
of tensors rather than functions, sizes that come from anywhere else (a replayed launch's captured
shapes: those are the real ones). When the reference itself fails at the new sizes, the group's
sizes are fixed in fact: the case is dropped with a note, never held against the candidate.
"""

from __future__ import annotations

import types
from contextlib import contextmanager
from typing import Any, Iterator

FIXED = "FIXED_SHAPES"
SUFFIX = "@"


def names_read(fn: Any, module: types.ModuleType, seen: set | None = None) -> set[str]:
    """Global names the function's code reads, nested code (comprehensions, lambdas) and the module's
    own functions it calls included."""
    seen = set() if seen is None else seen
    code = getattr(fn, "__code__", None)
    if code is None or code in seen:
        return set()
    seen.add(code)
    names: set[str] = set()
    stack = [code]
    while stack:
        current = stack.pop()
        names.update(current.co_names)
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    for name in list(names):
        helper = vars(module).get(name)
        if isinstance(helper, types.FunctionType) and helper.__module__ == module.__name__:
            names |= names_read(helper, module, seen)
    return names


def model_reads(module: types.ModuleType) -> set[str]:
    """What building the model or running `Model` reads from the module."""
    names = names_read(getattr(module, "get_init_inputs", None), module)
    model = getattr(module, "Model", None)
    for klass in getattr(model, "__mro__", ()) if model is not None else ():
        if getattr(klass, "__module__", None) != module.__name__:
            continue
        for value in vars(klass).values():
            names |= names_read(getattr(value, "__func__", value), module)
    return names


def size_constants(module: types.ModuleType, group_value: Any) -> dict[str, int]:
    """The module's integer constants that shape this group's inputs and nothing of the model."""
    if not callable(group_value):
        return {}
    model = model_reads(module)
    sizes = {}
    for name in sorted(names_read(group_value, module) - model):
        value = vars(module).get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 2:
            sizes[name] = value
    return sizes


def unseen(n: int) -> int:
    """An odd size a little above `n`."""
    return n + 1 if n % 2 == 0 else n + 2


def perturbation(module: types.ModuleType, group_value: Any) -> dict[str, tuple[int, int]]:
    """name -> (the task's size, the size checked); empty when nothing can or may be changed."""
    if getattr(module, FIXED, False) is True:
        return {}
    return {name: (n, unseen(n)) for name, n in size_constants(module, group_value).items()}


def label(group: str, changed: dict[str, tuple[int, int]]) -> str:
    """The case's group name: the group and the sizes it was checked at, `default@batch_size=17,dim=4097`."""
    return group + SUFFIX + ",".join(f"{name}={new}" for name, (_old, new) in changed.items())


def base_group(name: str) -> str:
    """The group a case belongs to, whether at the task's sizes or at unseen ones."""
    return name.split(SUFFIX, 1)[0]


@contextmanager
def sizes_set(module: types.ModuleType, changed: dict[str, tuple[int, int]]) -> Iterator[None]:
    """The module's constants at their perturbed values while inside, put back after."""
    namespace = vars(module)
    try:
        for name, (_old, new) in changed.items():
            namespace[name] = new
        yield
    finally:
        for name, (old, _new) in changed.items():
            namespace[name] = old
