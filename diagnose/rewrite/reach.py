"""Which kernels a task's replayed calls launch: a module's rewrite should change what is measured.

A kernel module's task replays host calls (`rms_norm_backward(...)`, `LigerFn.apply(...)`, or a bare
launch `kernel[grid](...)`; `diagnose/task/harness.py` writes them into the task file). A module
usually holds more kernels than one call launches (a forward and a backward, a fast path and a
fallback), and a rewrite of a kernel the replay never launches is verified and timed for nothing.
`reached_sites` follows the calls of the replayed functions through the module's own functions
and classes (`helper(x)`, `Cls.apply(...)` is `Cls.forward`, `Cls.method(...)`, `self.method(...)`,
functions nested in a reached one) to the launch sites they contain, in the order they are reached.
A call through anything else (another module, a variable holding a function) is not followed.
"""

from __future__ import annotations

import libcst as cst

from diagnose.rewrite.launches import LaunchSite, launch_sites
from diagnose.rewrite.source import dotted, kernels, walk


def functions(module: cst.Module) -> dict[str, cst.FunctionDef]:
    """Module-level functions and the methods of module-level classes, by qualified name."""
    out: dict[str, cst.FunctionDef] = {}
    for node in module.body:
        if isinstance(node, cst.FunctionDef):
            out[node.name.value] = node
        elif isinstance(node, cst.ClassDef):
            for item in node.body.body:
                if isinstance(item, cst.FunctionDef):
                    out[f"{node.name.value}.{item.name.value}"] = item
    return out


def _entry(name: str, known: dict[str, cst.FunctionDef]) -> str | None:
    """The function a call of `name` runs: `Cls.apply` of an autograd function runs `Cls.forward`."""
    if name in known:
        return name
    if name.endswith(".apply") and f"{name[: -len('.apply')]}.forward" in known:
        return f"{name[: -len('.apply')]}.forward"
    return None


def _callees(name: str, node: cst.FunctionDef, known: dict[str, cst.FunctionDef]) -> list[str]:
    cls = name.rsplit(".", 1)[0] if "." in name else None
    out = []
    for call in walk(node):
        if not isinstance(call, cst.Call):
            continue
        called = dotted(call.func) or ""
        if cls and called.startswith(("self.", "cls.")):
            called = f"{cls}.{called.split('.', 1)[1]}"
        entry = _entry(called, known)
        if entry is not None and entry not in out:
            out.append(entry)
    return out


def reached_sites(module: cst.Module, targets: tuple[str, ...] | None) -> list[LaunchSite]:
    """The launch sites the replay of `targets` runs, in the order reached; with no targets (a task
    file of the KernelBench format), every launch site of the module, in source order."""
    sites = launch_sites(module)
    if targets is None:
        return sites
    known = functions(module)
    out: list[LaunchSite] = []
    pending = [e for e in (_entry(t, known) for t in targets) if e is not None]
    seen: set[str] = set()
    while pending:
        name = pending.pop(0)
        if name in seen:
            continue
        seen.add(name)
        out += [
            s
            for s in sites
            if (s.host_name == name or s.host_name.startswith(f"{name}.<locals>."))
            and not any(s.statement is o.statement for o in out)
        ]
        pending += [c for c in _callees(name, known[name], known) if c not in seen]
    return out


def reached_kernels(module: cst.Module, targets: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """The kernels the replay of `targets` launches, in the order reached (a bare launch's kernel
    first); None with no targets (a task file of the KernelBench format: every kernel counts)."""
    if targets is None:
        return None
    direct = [t for t in targets if t in kernels(module)]
    return tuple(dict.fromkeys([*direct, *(s.kernel for s in reached_sites(module, targets))]))
