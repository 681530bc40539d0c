"""An autotuned kernel's config list as its source writes it: the expression of its `configs=`, the
constexprs the configs must set (read from the launch, since a helper or a YAML file may build the list),
the values of the configs written out, and a list with new configs put first, laid out like the rest.
`extend-autotune` reads and edits through it."""

from __future__ import annotations

import libcst as cst

from diagnose.rewrite.launch_values import config_values
from diagnose.rewrite.launches import LaunchSite
from diagnose.rewrite.source import Kernel, code, dotted, heuristic_keys, keyword, param_default

# The decorators that take `configs=[triton.Config(...)]`: Triton's own and FlagGems' `libtuner`, an
# `Autotuner` subclass with the same arguments.
TUNERS = ("autotune", "libtuner")
# Columns a spread config list may take on one line before it goes one config a line.
LINE = 100


def tuner_configs(kernel: Kernel) -> cst.BaseExpression | None:
    """The `configs=` value (or first positional argument) of the kernel's autotune decorator."""
    for decorator in kernel.node.decorators:
        call = decorator.decorator
        if isinstance(call, cst.Call) and (dotted(call.func) or "").rsplit(".", 1)[-1] in TUNERS:
            arg = keyword(call, "configs") or (call.args[0] if call.args and call.args[0].keyword is None else None)
            return arg.value if arg is not None else None
    return None


def tuned_by_configs(kernel: Kernel, site: LaunchSite) -> list[str] | str:
    """The constexprs the autotune configs must set: no default, not passed at the launch, set by no
    `triton.heuristics`; or why they cannot be told."""
    set_by_heuristics: set[str] = set()
    for decorator in kernel.decorators:
        if decorator.split("(")[0].endswith("heuristics"):
            keys = heuristic_keys(decorator)
            if keys is None:
                return "a triton.heuristics whose keys cannot be read may set the block size"
            set_by_heuristics |= keys
    out = []
    for param in kernel.constexprs:
        if site.passes_unpacked(param):
            return f"the launch's **kwargs may set {param}"
        if site.arg(kernel, param) is None and param not in set_by_heuristics and param_default(kernel, param) is None:
            out.append(param)
    return out


def written_values(configs: cst.BaseExpression) -> tuple[dict, ...]:
    """The written configs' values, where the list is written out (its `*spread` elements skipped; both
    sides of `[...] + helper()`)."""
    if isinstance(configs, cst.BinaryOperation) and isinstance(configs.operator, cst.Add):
        return written_values(configs.left) + written_values(configs.right)
    if not isinstance(configs, cst.List):
        return ()
    found = (config_values(e.value) for e in configs.elements if isinstance(e, cst.Element))
    return tuple(f for f in found if f is not None)


def prepended(configs: cst.List, new: list[cst.BaseExpression]) -> cst.List:
    """The written-out list with `new` before its first element, laid out like it: each gets the comma
    that separates the authors' elements (a line break and their indent in a list written one per
    line); the authors' elements keep their own (and the comments after them)."""
    elements = list(configs.elements)
    between = next(
        (e.comma for e in elements[:-1] if e.comma is not cst.MaybeSentinel.DEFAULT),
        cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
    )
    return configs.with_changes(elements=[*(cst.Element(v, comma=between) for v in new), *elements])


def spread(expression: str, added: list[str], indent: str) -> str:
    """`[new, ..., *their_configs()]`: on one line where it fits beside a one-line expression, else one
    config a line."""
    one_line = f"[{', '.join(added)}, *{expression}]"
    if "\n" not in expression and len(indent) + len(one_line) <= LINE:
        return one_line
    spread = "*" + expression.replace("\n", "\n    ")  # its own lines move in with it
    return "[\n" + "".join(f"{indent}    {item},\n" for item in (*added, spread)) + f"{indent}]"


def indent_of(source: str, node: cst.BaseExpression) -> str:
    """The indentation of the line that holds `node`'s first line (`    configs=...`)."""
    first = code(node).splitlines()[0]
    lines = source.splitlines()
    # `configs=[` first: a bare `[` or a helper's name may open other lines of the module too
    for line in [*(x for x in lines if f"configs={first}" in x), *(x for x in lines if first in x)]:
        return line[: len(line) - len(line.lstrip())]
    return ""
