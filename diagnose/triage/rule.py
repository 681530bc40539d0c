"""The rule interface. A rule is a class whose docstring is its documentation and whose `check`
yields `Hit`s; the engine turns hits into `Finding`s with evidence, so rules stay short.

The docstring is Markdown in fixed sections, in this order (tests hold every rule to it):
What it finds / Why it is slow / Example / Use instead / Known false positives (the shapes of real code it
misreads, or "none known" with what it was measured on) / Targets / References.
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Iterator

from diagnose.records import Confidence, EvidenceKind, Severity

if TYPE_CHECKING:
    from diagnose.triage.context import Context
    from diagnose.targets import Target

SECTIONS = (
    "What it finds",
    "Why it is slow",
    "Example",
    "Use instead",
    "Known false positives",
    "Targets",
    "References",
)


@dataclass(frozen=True)
class Span:
    """A source range without an AST node (a syntax error). Lines 1-based, columns 0-based chars."""

    line: int
    col: int = 0
    end_line: int | None = None
    end_col: int | None = None


@dataclass(frozen=True)
class Hit:
    """What a rule reports: where, the formatted message, typed args for the evidence, and context."""

    node: ast.AST | Span
    message: str
    args: tuple[tuple[str, Any], ...] = ()
    secondary: tuple[ast.AST, ...] = ()
    confidence: Confidence | None = None
    severity: Severity | None = None  # None: the rule's (TRI000's "needs a newer Python" is info)


class Rule:
    """Base class; subclasses set the class attributes and implement `check`."""

    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case, names the bad pattern
    message: ClassVar[str]  # terse, `str.format` template over the hit's args
    fix_title: ClassVar[str]  # imperative: what to do instead
    severity: ClassVar[Severity] = "warning"
    confidence: ClassVar[Confidence] = "medium"
    targets: ClassVar[tuple[str, ...]] = ("cuda", "hip", "ascend")
    archs: ClassVar[tuple[str, ...]] = ()  # empty: every arch of the families in `targets`
    evidence_kind: ClassVar[EvidenceKind] = "missed"

    def check(self, ctx: Context) -> Iterator[Hit]:
        raise NotImplementedError

    def hit(self, node: ast.AST | Span, *, secondary=(), confidence: Confidence | None = None, **args: Any) -> Hit:
        return Hit(node, self.message.format(**args), tuple(args.items()), tuple(secondary), confidence)

    @classmethod
    def applies_to(cls, target: Target) -> bool:
        if target.family not in cls.targets:
            return False
        return not cls.archs or any(target.short_arch.startswith(a) for a in cls.archs)

    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def sections(cls) -> dict[str, str]:
        """The docstring's `## Section` blocks, by title."""
        parts = re.split(r"^## +(.+?)\s*$", cls.doc(), flags=re.M)
        return {title: body.strip() for title, body in zip(parts[1::2], parts[2::2])}

    @classmethod
    def summary(cls) -> str:
        """First sentence of "What it finds": the one-line description."""
        text = " ".join(cls.sections().get("What it finds", cls.message).split())
        return re.split(r"(?<!e\.g\.)(?<!i\.e\.)(?<=\.)\s+(?=[A-Z`(])", text, maxsplit=1)[0]
