"""load-other: `tl.load(p, mask=m)` then `tl.where(m, x, v)` becomes `tl.load(p, mask=m, other=v)`."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from diagnose.rewrite.edit import replace, set_keyword, statement
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.source import (
    Kernel,
    assigned_names,
    is_tl_call,
    keyword,
    kernels,
    names,
    positional,
    read_names,
    same,
    simple_assignment,
    walk,
)


@dataclass(frozen=True)
class Site:
    """One load and the `tl.where` that fills its masked-off lanes."""

    load_stmt: cst.SimpleStatementLine
    load: cst.Call
    where_stmt: cst.SimpleStatementLine
    where: cst.Call  # the `tl.where` call, the statement's value or the receiver of casts on it
    loaded: str
    target: str
    fill: cst.BaseExpression


@dataclass(frozen=True)
class OtherPlan:
    sites: tuple[Site, ...]
    kernels: tuple[str, ...]


class LoadOther(Rewrite):
    """## What it changes
    `x = tl.load(p, mask=m)` followed in the same block by `y = tl.where(m, x, v)` (v a constant)
    becomes `x = tl.load(p, mask=m, other=v)`; the `tl.where` becomes `y = x`, or disappears when
    it assigned `x` itself. A where under casts (`y = tl.where(m, x, v).to(tl.float32)`, as row
    kernels upcast their loads) keeps the casts: `y = x.to(tl.float32)`.

    ## When it is valid
    The where's condition is the load's mask (the same expression, its names not reassigned in
    between), its true branch is the loaded value and its false branch a constant; the load has no
    `other=` yet; and the loaded variable is read nowhere else before it is reassigned, so filling
    its masked-off lanes with `v` changes nothing but the where's result, which it equals.

    ## Why it is faster
    On Ascend, a masked load without `other` is filled by the vector unit first and then copied by
    MTE2, serializing the two; with `other=` the fill is part of the transfer. Everywhere, the
    separate select (and its mask registers) goes away.

    ## Safety
    Safe: the value is the same in every lane.

    ## Answers
    ASC008 (where-after-masked-load).

    ## References
    triton-ascend performance guide, "masked loads" (Example 1); mindspore-ai/akg improvement skill
    (`other=` rather than load-then-`tl.where`).
    """

    id = "load-other"
    title = "Fill masked-off lanes in the load (`other=`) instead of a later `tl.where`"
    codes = ("ASC008",)
    evidence = ("MaskedLoadPadding",)  # Ascend: a fill before the masked load

    def precondition(self, ctx: RewriteContext) -> Precondition:
        sites, found_in = [], []
        for kernel in kernels(ctx.module).values():
            mine = _sites(kernel)
            if mine:
                sites += mine
                found_in.append(kernel.name)
        if not sites:
            return Precondition.no("no masked load whose masked-off lanes a tl.where fills with a constant")
        return Precondition.yes(
            f"{len(sites)} load(s) followed by tl.where on their mask",
            tuple(found_in),
            OtherPlan(tuple(sites), tuple(found_in)),
        )

    def transform(self, ctx: RewriteContext, plan: OtherPlan) -> str:
        mapping = {}
        for site in plan.sites:
            mapping[site.load] = set_keyword(site.load, "other", site.fill)
            if site.where is not simple_assignment(site.where_stmt)[1]:
                mapping[site.where] = cst.Name(site.loaded)  # `y = tl.where(m, x, v).to(t)`: `y = x.to(t)`
            elif site.target == site.loaded:
                mapping[site.where_stmt] = cst.RemoveFromParent()
            else:
                mapping[site.where_stmt] = statement(f"{site.target} = {site.loaded}").with_changes(
                    leading_lines=site.where_stmt.leading_lines
                )
        return replace(ctx.module, mapping).code


def _blocks(kernel: Kernel):
    for node in walk(kernel.node):
        if isinstance(node, cst.IndentedBlock):
            yield list(node.body)


def _sites(kernel: Kernel) -> list[Site]:
    out = []
    for block in _blocks(kernel):
        for i, stmt in enumerate(block):
            loaded, load = simple_assignment(stmt)
            if loaded is None or not is_tl_call(load, "load"):
                continue
            mask = keyword(load, "mask") or (positional(load)[1] if len(positional(load)) > 1 else None)
            if mask is None or keyword(load, "other") is not None or len(positional(load)) > 2:
                continue
            site = _matching_where(block, i, stmt, load, loaded, mask.value)
            if site is not None:
                out.append(site)
    return out


def _matching_where(block, i, stmt, load, loaded, mask) -> Site | None:
    watched = names(mask) | {loaded}
    for later in block[i + 1 :]:
        target, value = simple_assignment(later)
        value = _peel_casts(value)
        if (
            target is not None
            and is_tl_call(value, "where")
            and len(value.args) == 3
            and all(a.keyword is None for a in value.args)
        ):
            cond, true, false = (a.value for a in value.args)
            if (
                same(cond, mask)
                and isinstance(true, cst.Name)
                and true.value == loaded
                and not (names(false) - {"float", "int"})
                and _read_only_there(block, i, later, loaded, target)
            ):
                return Site(stmt, load, later, value, loaded, target, false)
        if loaded in names(later) or assigned_names(later) & watched:
            return None
    return None


def _peel_casts(value):
    """The receiver of `value`'s chain of `.to(...)` casts (`tl.where(m, x, v).to(tl.float32)`: the where);
    a cast of a filled lane is the cast of the fill, so the fill may move into the load under it."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "to":
        value = value.func.value
    return value


def _read_only_there(block, i, where_stmt, loaded, target) -> bool:
    """`loaded` is not read after the where (before it is reassigned), unless the where rebinds it."""
    if target == loaded:
        return True
    after = block[block.index(where_stmt) + 1 :]
    for stmt in after:
        if loaded in read_names(stmt):
            return False
        if loaded in assigned_names(stmt):
            return True
    return True
