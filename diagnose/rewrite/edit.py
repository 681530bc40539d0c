"""Editing libcst trees: replacing nodes by identity, new statements from text, launch arguments.

Every edit replaces nodes by identity (`replace`), so libcst keeps every untouched byte as it was,
whatever depth the node sits at (a launch in a `with` block of an autograd `Function.forward`, in a
nested function); new code is parsed from text (`statement`, `statements`, `expression`) and
re-indented by libcst where it lands. Calls whose arguments grow are broken at `fit_call`'s limit,
aligned under their parenthesis (or at their indentation, when they hang below it), the way
hand-written launches are.
"""

from __future__ import annotations

import textwrap
from typing import Iterable

import libcst as cst

from diagnose.rewrite.launches import LaunchSite, kernel_name, with_kernel_name
from diagnose.rewrite.source import assigned_names, code, keyword, names, walk

# One indentation level, to measure the lines of a launch an edit moves into a new block (libcst writes
# the block with the module's own indentation, four spaces nearly always).
INDENT = 4
# Where a line an edit grows is broken (the width of the project's own code).
LINE_LIMIT = 110


class _Replace(cst.CSTTransformer):
    def __init__(self, mapping: dict[cst.CSTNode, cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel]):
        super().__init__()
        self.mapping = mapping

    def on_leave(self, original_node, updated_node):
        new = self.mapping.get(original_node, updated_node)
        return new(updated_node) if callable(new) else new


def replace(tree: cst.CSTNode, mapping: dict) -> cst.CSTNode:
    """Replace nodes of `tree` (a module, or any node) by identity (values may be nodes,
    `cst.RemoveFromParent()` or a FlattenSentinel, or a function of the node with its own children
    already replaced, for edits that nest: a mask added to a load whose address changes too)."""
    return tree.visit(_Replace(mapping)) if mapping else tree


# Expressions that bind as one operand of any operator without parentheses.
ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer)


def is_operand(node: cst.BaseExpression) -> bool:
    """Whether `node` binds as one operand as it is written (an atom, or already parenthesised)."""
    return isinstance(node, ATOMS) or bool(getattr(node, "lpar", None))


def operand(node: cst.BaseExpression | str) -> str:
    """The expression's text, parenthesised unless it binds as one operand: `x`, `f(x)`, `(a + b)`."""
    node = expression(node) if isinstance(node, str) else node
    text = code(node)
    return text if is_operand(node) else f"({text})"


def expression(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


def statements(text: str) -> list[cst.BaseStatement]:
    """Statements from dedented text, to place in any block (libcst re-indents them)."""
    return list(cst.parse_module(textwrap.dedent(text).strip("\n") + "\n").body)


def statement(text: str) -> cst.BaseStatement:
    (only,) = statements(text)
    return only


def with_comment(stmt: cst.SimpleStatementLine | cst.BaseCompoundStatement, comment: str) -> cst.CSTNode:
    """The statement with a `# comment` line above it."""
    line = cst.EmptyLine(comment=cst.Comment(f"# {comment}"))
    return stmt.with_changes(leading_lines=[*stmt.leading_lines, line])


def set_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with keyword `name=value`, replacing an existing one or appending it."""
    arg = keyword(call, name)
    if arg is not None:
        return call.with_deep_changes(arg, value=value)
    args = list(call.args)
    new = cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    unpacked = next((i for i, a in enumerate(args) if a.star == "**"), None)
    if unpacked is not None:  # keywords go before `**kwargs`, where a reader looks for them
        new = new.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return call.with_changes(args=[*args[:unpacked], new, *args[unpacked:]])
    if args:
        last = args[-1]
        # what closes the list (the line break before a hanging call's `)`) moves to the new last argument
        new = new.with_changes(whitespace_after_arg=last.whitespace_after_arg)
        last = last.with_changes(whitespace_after_arg=cst.SimpleWhitespace(""))
        after = cst.SimpleWhitespace(" ")
        if isinstance(last.comma, cst.Comma):  # a trailing comma (`...,\n)`): the new last argument keeps it
            new = new.with_changes(comma=last.comma)
            # one argument per line: the new one gets a line of its own, as the others have
            breaks = [getattr(a.comma, "whitespace_after", None) for a in args]
            if len(args) > 1 and all(isinstance(b, cst.ParenthesizedWhitespace) for b in breaks):
                after = breaks[-2]
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=after))
    return call.with_changes(args=[*args, new])


def fit_call(call: cst.Call, indent: int, limit: int = LINE_LIMIT, lead: int = 0) -> cst.Call:
    """Break a call's argument list where a line would pass `limit` columns, aligned under its paren,
    or, for a call whose arguments start on the line after its paren (`kernel[grid](\n    x, y,`), at
    their indentation.

    Only breaks between arguments that sit on the same line (existing breaks are kept, moved under the
    paren where the call's head changed width); `indent` is
    the column the statement starts at, `lead` the width of what precedes the call on its line
    (`out = `).
    """
    hanging = _hanging(call)
    open_col = len(hanging.last_line.value) if hanging is not None else lead + len(code(call.func)) + 1
    column = indent + open_col
    args = list(call.args)
    for i, arg in enumerate(args):
        text = code(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT))
        if "\n" in text:
            column = len(text.rsplit("\n", 1)[1])
            continue
        if i and column + len(text) + 2 > limit:
            prev = args[i - 1]
            broken_already = isinstance(getattr(prev.comma, "whitespace_after", None), cst.ParenthesizedWhitespace)
            if isinstance(prev.comma, cst.Comma) and not broken_already:
                args[i - 1] = prev.with_changes(
                    comma=prev.comma.with_changes(
                        whitespace_after=cst.ParenthesizedWhitespace(
                            first_line=cst.TrailingWhitespace(),
                            indent=True,
                            last_line=cst.SimpleWhitespace(" " * open_col),
                        )
                    )
                )
                column = indent + open_col
        if isinstance(arg.comma, cst.Comma) and isinstance(arg.comma.whitespace_after, cst.ParenthesizedWhitespace):
            if hanging is None:  # an existing break stays, realigned under the paren (the grid may have grown)
                args[i] = arg = arg.with_changes(
                    comma=arg.comma.with_changes(
                        whitespace_after=arg.comma.whitespace_after.with_changes(
                            last_line=cst.SimpleWhitespace(" " * open_col)
                        )
                    )
                )
            column = indent + len(arg.comma.whitespace_after.last_line.value)
        else:
            column += len(text) + 2
    return call.with_changes(args=args)


def _hanging(call: cst.Call) -> cst.ParenthesizedWhitespace | None:
    """The line break right after the call's paren, when its arguments hang below it (indented from the
    statement, not aligned under the paren)."""
    ws = call.whitespace_before_args
    return ws if isinstance(ws, cst.ParenthesizedWhitespace) and ws.indent else None


def fit_launch(site: LaunchSite, call: cst.Call, deeper: int = 0) -> cst.Call:
    """`fit_call` for a new call at `site`'s place (`deeper` columns further in, for a launch moved into
    a new block), wherever its host is: a method, a module-level function, a `with` block."""
    return fit_call(call, indent=site.indent + deeper, lead=site.lead)


def relaunch(site: LaunchSite, call: cst.Call, **changes) -> cst.SimpleStatementLine:
    """The launch statement with `call` in place of its call (an assignment `out = ...` stays one)."""
    return site.statement.with_changes(body=[site.statement.body[0].with_changes(value=call)], **changes)


def and_mask(access: cst.Call, extra: cst.BaseExpression) -> cst.Call:
    """A `tl.load` / `tl.store` with `& extra` on its mask (keyword or positional), or `mask=extra` where it
    had none."""
    mask = keyword(access, "mask")
    given = [a for a in access.args if a.keyword is None]
    index = 2 if code(access.func).endswith("store") else 1
    if mask is None and len(given) > index:
        mask = given[index]
    if mask is None:
        return set_keyword(access, "mask", extra)
    both = cst.parse_expression(f"{operand(mask.value)} & {operand(extra)}")
    return access.with_changes(args=[a.with_changes(value=both) if a is mask else a for a in access.args])


def drop_keyword(call: cst.Call, name: str) -> cst.Call:
    args = [a for a in call.args if not (a.keyword is not None and a.keyword.value == name)]
    if args and args[-1].comma is not cst.MaybeSentinel.DEFAULT:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=args)


def drop_arguments(call: cst.Call, params: list[str], drop: Iterable[str]) -> cst.Call | None:
    """The launch without the arguments of the parameters in `drop`, whether passed by keyword or by
    position (`params`: the kernel's, in order). A positional argument after a dropped one is passed by
    keyword instead, so that it still binds to its own parameter. None when an unpacked argument
    (`*args`) stands before a dropped one's place and positions cannot be told."""
    drop = set(drop)
    args: list[cst.Arg] = []
    position, shifted = 0, False
    for arg in call.args:
        if arg.keyword is not None or arg.star == "**":
            if not (arg.keyword is not None and arg.keyword.value in drop):
                args.append(arg)
            continue
        if arg.star == "*":
            if shifted or drop & set(params[position:]):
                return None  # its values would slide into a dropped place, or take one
            args.append(arg)
            continue
        param = params[position] if position < len(params) else None
        position += 1
        if param in drop:
            shifted = True
            continue
        if shifted and param is not None:
            arg = arg.with_changes(
                keyword=cst.Name(param),
                equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
                ),
            )
        args.append(arg)
    if args and args[-1].comma is not cst.MaybeSentinel.DEFAULT:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=args)


def rename_call(call: cst.Call, kernel: str) -> cst.Call:
    """`other[grid](...)` for `kernel[grid](...)`, continuation lines kept aligned under the paren
    (hanging arguments, on the lines after the paren, stay where they are)."""
    delta = 0 if _hanging(call) is not None else len(kernel) - len(kernel_name(call.func.value).value)
    return shift_continuations(
        call.with_changes(func=call.func.with_changes(value=with_kernel_name(call.func.value, kernel))), delta
    )


class _Shift(cst.CSTTransformer):
    def __init__(self, delta: int):
        super().__init__()
        self.delta = delta

    def leave_ParenthesizedWhitespace(self, original_node, updated_node):
        width = max(0, len(updated_node.last_line.value) + self.delta)
        return updated_node.with_changes(last_line=cst.SimpleWhitespace(" " * width))


def shift_continuations(node: cst.CSTNode, delta: int) -> cst.CSTNode:
    """Move every continuation line inside `node` by `delta` columns (after a rename before a paren)."""
    return node.visit(_Shift(delta)) if delta else node


def rename_function(node: cst.FunctionDef, name: str) -> cst.FunctionDef:
    """The function under another name, its parameter continuation lines kept aligned."""
    params = shift_continuations(node.params, len(name) - len(node.name.value))
    return node.with_changes(name=cst.Name(name), params=params)


def with_params(node: cst.FunctionDef, *params: str) -> cst.FunctionDef:
    """The function with parameters appended, each `name` or `name: annotation` (`BLOCK: tl.constexpr`).
    After a parameter with a default each gets `=1` too, or the function does not parse (the launches
    the codemods write pass every new parameter by keyword, so the default is never read). A signature
    written one parameter per line with a trailing comma (black's style) gets each new one on a line of
    its own, the trailing comma kept."""
    old = list(node.params.params)
    needs_default = any(p.default is not None for p in old)
    closing = None  # what followed the last parameter before `)` (a line break there): it follows the new last one
    if old and not isinstance(old[-1].comma, cst.Comma):
        closing = old[-1].whitespace_after_param
        old[-1] = old[-1].with_changes(whitespace_after_param=cst.SimpleWhitespace(""))
    new = []
    for text in params:
        name, _, annotation = (part.strip() for part in text.partition(":"))
        param = cst.Param(
            name=cst.Name(name), annotation=cst.Annotation(cst.parse_expression(annotation)) if annotation else None
        )
        if needs_default:
            space = cst.SimpleWhitespace(" " if annotation else "")
            param = param.with_changes(
                default=cst.Integer("1"), equal=cst.AssignEqual(whitespace_before=space, whitespace_after=space)
            )
        new.append(param)
    if closing is not None and new:
        new[-1] = new[-1].with_changes(whitespace_after_param=closing)
    trailing = old[-1].comma if old and isinstance(old[-1].comma, cst.Comma) else None
    between = old[-2].comma if len(old) > 1 else None
    if (
        trailing is not None
        and isinstance(trailing.whitespace_after, cst.ParenthesizedWhitespace)
        and isinstance(getattr(between, "whitespace_after", None), cst.ParenthesizedWhitespace)
    ):
        old[-1] = old[-1].with_changes(comma=between)
        new = [p.with_changes(comma=between) for p in new[:-1]] + [new[-1].with_changes(comma=trailing)]
        return node.with_changes(params=node.params.with_changes(params=[*old, *new]))
    space = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    new = [p.with_changes(comma=space) for p in new[:-1]] + new[-1:]
    if old:
        old[-1] = old[-1].with_changes(comma=space)
    grown = node.with_changes(params=node.params.with_changes(params=[*old, *new]))
    if old and _header_width(grown) > LINE_LIMIT:  # the new ones on a line of their own, under the others
        breaks = [
            p.comma.whitespace_after
            for p in old[:-1]
            if isinstance(p.comma, cst.Comma) and isinstance(p.comma.whitespace_after, cst.ParenthesizedWhitespace)
        ]
        under = breaks[-1].last_line.value if breaks else " " * (len("def ") + len(node.name.value) + 1)
        old[-1] = old[-1].with_changes(
            comma=cst.Comma(
                whitespace_after=cst.ParenthesizedWhitespace(
                    first_line=cst.TrailingWhitespace(), indent=True, last_line=cst.SimpleWhitespace(under)
                )
            )
        )
        grown = node.with_changes(params=node.params.with_changes(params=[*old, *new]))
    return grown


def _header_width(node: cst.FunctionDef) -> int:
    """The longest line of a function's `def` line(s), as written at column 0."""
    header = code(
        node.with_changes(
            decorators=[], leading_lines=[], body=cst.IndentedBlock([cst.SimpleStatementLine([cst.Pass()])])
        )
    )
    return max(len(line) for line in header.split(":\n", 1)[0].splitlines())


def unique_name(taken: Iterable[str], base: str) -> str:
    taken = set(taken)
    if base not in taken:
        return base
    i = 2
    while f"{base}_{i}" in taken:
        i += 1
    return f"{base}_{i}"


def restarted_each_iteration(
    body: list[cst.BaseStatement], params: Iterable[str], taken: Iterable[str]
) -> tuple[list[cst.BaseStatement], list[cst.BaseStatement]]:
    """For wrapping `body` in a loop: the kernel parameters it moves (`X += row * stride`, pointer
    bumping) would start each iteration where the last one left them. Returns the statements to put
    before the loop (`X_start = X`) and at the head of each iteration (`X = X_start`); both empty when
    the body moves no parameter."""
    moved = [p for p in params if p in assigned_names(cst.IndentedBlock(body))]
    taken = set(taken)
    saves, restores = [], []
    for param in moved:
        start = unique_name(taken, f"{param}_start")
        taken.add(start)
        saves.append(statement(f"{start} = {param}\n"))
        restores.append(statement(f"{param} = {start}\n"))
    return saves, restores


def insert_after(module: cst.Module, anchor: cst.CSTNode, new: list[cst.BaseStatement]) -> cst.Module:
    """`new` statements right after the top-level statement `anchor`, each with two blank lines above."""
    body = []
    for node in module.body:
        body.append(node)
        if node is anchor:
            for stmt in new:
                body.append(stmt.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]))
    return module.with_changes(body=body)


def guarded_launch(
    site: LaunchSite, twin: str, condition: str, twin_keywords: dict[str, str], comment: str, setup: list[str] = ()
) -> cst.FlattenSentinel:
    """`setup; if condition: twin[grid](..., **twin_keywords) else: <the original launch>`, in place of
    the launch statement (in whatever block of its host it sits)."""
    call = rename_call(site.call, twin)
    for key, value in twin_keywords.items():
        call = set_keyword(call, key, expression(value))
    call = fit_launch(site, call, deeper=INDENT)
    switch = statement(f"if {condition}:\n    pass\nelse:\n    pass\n")
    switch = switch.with_changes(
        body=switch.body.with_changes(body=[relaunch(site, call, leading_lines=[])]),
        orelse=switch.orelse.with_changes(
            body=switch.orelse.body.with_changes(body=[site.statement.with_changes(leading_lines=[])])
        ),
    )
    before = [statement(s) for s in setup]
    lead = [*site.statement.leading_lines, cst.EmptyLine(comment=cst.Comment(f"# {comment}"))]
    if before:
        before[0] = before[0].with_changes(leading_lines=lead)
    else:
        switch = switch.with_changes(leading_lines=lead)
    return cst.FlattenSentinel([*before, switch])


def insert_before(module: cst.Module, anchor: cst.CSTNode, new: list[cst.BaseStatement]) -> cst.Module:
    """Top-level statements right before `anchor` (which keeps its leading comments), two blank lines apart."""
    body = []
    for node in module.body:
        if node is anchor:
            for i, stmt in enumerate(new):
                lead = node.leading_lines if i == 0 else [cst.EmptyLine(), cst.EmptyLine()]
                body.append(stmt.with_changes(leading_lines=lead))
            node = node.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
        body.append(node)
    return module.with_changes(body=body)


def insert_before_host(module: cst.Module, site: LaunchSite, new: list[cst.BaseStatement]) -> cst.Module:
    """Top-level statements (a helper the launch calls) placed right before the top-level statement that
    holds `site`'s host: the function itself, or its class (`ModelNew`, an autograd `Function`); two
    blank lines around them, the anchor's own comments kept above it. `module` is the one `site` was
    read from (the anchor is found by identity); edits by `replace` can follow, as the nodes under the
    anchor stay the same objects."""
    body = []
    for node in module.body:
        if any(n is site.statement for n in walk(node)):
            for stmt in new:
                body.append(stmt.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()]))
            comments = list(node.leading_lines)
            while comments and comments[0].comment is None:
                comments.pop(0)
            node = node.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine(), *comments])
        body.append(node)
    return module.with_changes(body=body)


def early_returns_as_guards(statements: list) -> list | str:
    """`statements` with each `if test: ...; return` (an `if` with no `else`) turned into `if test: ...`
    and `if not (test): <the statements after it>`, and a last bare `return` dropped: the same work with
    no `return` left, as the body of a loop that a rewrite wraps around a kernel's work needs (a loop
    cannot return); or why not. Two `if`s, not an `if`/`else`: Triton merges the names both branches
    bind and refuses them at different types (`Mismatched type for s_out`), where a returning branch
    never merged. A name the returning branch rebinds from before it would merge with
    its old value the same way: declined."""
    out: list = []
    bound: set[str] = set()
    for i, stmt in enumerate(statements):
        if isinstance(stmt, cst.SimpleStatementLine) and [type(s) for s in stmt.body] == [cst.Return]:
            if stmt.body[0].value is not None or i != len(statements) - 1:
                return "returns a value or before its last statement"
            return out
        if not any(isinstance(node, cst.Return) for node in walk(stmt)):
            out.append(stmt)
            bound |= assigned_names(stmt)
            continue
        body = _block_statements(stmt.body) if isinstance(stmt, cst.If) and stmt.orelse is None else []
        last = body[-1] if body else None
        ends = (
            isinstance(last, cst.SimpleStatementLine)
            and [type(s) for s in last.body] == [cst.Return]
            and last.body[0].value is None
        )
        if not ends or any(isinstance(n, cst.Return) for s in body[:-1] for n in walk(s)):
            return "returns early from inside a loop or a nested block (a loop cannot return)"
        kept = body[:-1]
        rebound = set().union(*map(assigned_names, kept)) & (bound | names(stmt.test))
        if rebound:
            return f"the branch that returns early rebinds {', '.join(sorted(rebound))}, bound before it"
        rest = early_returns_as_guards(statements[i + 1 :])
        if isinstance(rest, str):
            return rest
        guards = [stmt.with_changes(body=cst.IndentedBlock(kept))] if kept else []
        if rest:
            test = cst.parse_expression(f"not ({code(stmt.test)})")
            guards.append(cst.If(test=test, body=cst.IndentedBlock(rest)))
        return [*out, *guards]
    return out


def _block_statements(block: cst.BaseSuite) -> list:
    """The statements of an `if` body, a one-line `if c: return` as one statement line."""
    if isinstance(block, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=list(block.body))]
    return list(block.body)
