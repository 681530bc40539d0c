"""The shape of a rewrite: what every codemod declares, the context it reads, the answer it gives.

A rewrite is a class (one per module under `diagnose/rewrite/codemods/`) whose docstring is its
documentation, in fixed sections (tests hold every rewrite to them):

    What it changes / When it is valid / Why it is faster / Safety / Answers / References

It declares its `id`, `title`, `safety` (`safe`: the same arithmetic, at most in another summation
order; `unsafe`: numerics may change, e.g. a lower-precision dot), the finding `codes` and IR
`evidence` names that call for it, the `backends` it is meant for, and `conflicts` (rewrites that
change the same thing another way). `precondition(ctx)` looks at the source (and the IR evidence
where useful) and says whether the pattern is there and regular enough to transform safely; its
`plan` carries what it found to `transform(ctx, plan)`, which returns the new source.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, ClassVar, Iterable, Literal

import libcst as cst

from diagnose import syntax
from diagnose.records import Evidence, Finding
from diagnose.rewrite.launches import alias_kept
from diagnose.rewrite.source import parsed
from diagnose.targets import DEFAULT_TARGET, Target, lookup

Safety = Literal["safe", "unsafe"]
SECTIONS = ("What it changes", "When it is valid", "Why it is faster", "Safety", "Answers", "References")


class NotApplicable(Exception):
    """The rewrite's precondition does not hold; the message says why (one line)."""


@dataclass(frozen=True)
class Precondition:
    """Whether a rewrite applies, why (or why not), the kernels it would change and what it found."""

    holds: bool
    reason: str
    kernels: tuple[str, ...] = ()
    plan: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def no(cls, reason: str) -> Precondition:
        return cls(False, reason)

    @classmethod
    def yes(cls, reason: str, kernels: tuple[str, ...] = (), plan: Any = None) -> Precondition:
        return cls(True, reason, tuple(kernels), plan)

    @classmethod
    def first_kernel(
        cls,
        kernels: Iterable[Any],
        plan_of: Callable[[Any], Any],
        holds: type,
        describe: Callable[[Any], str],
        nothing: str,
    ) -> Precondition:
        """The first kernel whose `plan_of(kernel)` is a `holds` plan, described; else every kernel's
        reason why not (a string plan; `None` for a kernel with nothing to say) joined, or `nothing`."""
        reasons = []
        for kernel in kernels:
            plan = plan_of(kernel)
            if isinstance(plan, holds):
                return cls.yes(f"{kernel.name}: {describe(plan)}", (kernel.name,), plan)
            if plan:
                reasons.append(f"{kernel.name}: {plan}")
        return cls.no("; ".join(reasons) or nothing)

    @classmethod
    def first_site(
        cls,
        sites: Iterable[Any],
        plan_of: Callable[[Any], Any],
        holds: type,
        describe: Callable[[Any], str],
        targets: tuple[str, ...] | None,
        reasons: Iterable[str] = (),
    ) -> Precondition:
        """The first launch site (`launches.LaunchSite`, in the order the replay reaches them) whose
        `plan_of(site)` is a `holds` plan, described; else `reasons` and every site's reason why not."""
        found = list(reasons)
        for site in sites:
            plan = plan_of(site)
            where = f"{site.kernel} in {site.host_name}"
            if isinstance(plan, holds):
                return cls.yes(f"{where}: {describe(plan)}", (site.kernel,), plan)
            found.append(f"{where}: {plan}")
        if not found:
            return cls.no(
                "no launch of a kernel in the module"
                if targets is None
                else f"the replayed call ({', '.join(targets)}) reaches no launch in the module"
            )
        return cls.no("; ".join(dict.fromkeys(found)))


@dataclass(frozen=True)
class RewriteContext:
    """What a rewrite may read: the source, its path, the target, findings and IR evidence, and the
    launch values chosen for it (`params`, by the launch-config search or the caller)."""

    source: str
    path: str = "<source>"
    target: Target = field(default_factory=lambda: lookup(DEFAULT_TARGET))
    findings: tuple[Finding, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    params: tuple[tuple[str, Any], ...] = ()

    @cached_property
    def module(self) -> cst.Module:
        return parsed(self.source)

    def param(self, key: str, default: Any = None) -> Any:
        return dict(self.params).get(key, default)

    def with_source(self, source: str) -> RewriteContext:
        """The same request on a rewritten source (chosen params do not carry over)."""
        return dataclasses.replace(self, source=source, params=())

    def with_params(self, params: dict[str, Any]) -> RewriteContext:
        return dataclasses.replace(self, params=tuple(sorted(params.items())))

    @property
    def codes(self) -> set[str]:
        return {f.code for f in self.findings}

    def evidence_named(self, name: str) -> list[Evidence]:
        return [e for e in self.evidence if e.name == name]


class Rewrite:
    """Base class; subclasses set the class attributes and implement `precondition` and `transform`."""

    id: ClassVar[str]
    title: ClassVar[str]
    safety: ClassVar[Safety] = "safe"
    codes: ClassVar[tuple[str, ...]] = ()
    evidence: ClassVar[tuple[str, ...]] = ()
    backends: ClassVar[tuple[str, ...]] = ("cuda", "hip", "npu")
    conflicts: ClassVar[tuple[str, ...]] = ()
    # Launch values the launch-config search may choose (see `search_space`).
    tunable: ClassVar[bool] = False
    # Whether the static estimate may choose among them where nothing can be timed (else nothing changes).
    estimated: ClassVar[bool] = True
    # How many configurations a device times (None: the search's own `top_k`, best estimate first; a
    # rewrite that is not `estimated` has them timed in the order of its search space).
    timed_configs: ClassVar[int | None] = None
    # The precondition reads IR evidence (`ctx.evidence`); without it the rewrite says so.
    needs_ir: ClassVar[bool] = False

    def check(self, ctx: RewriteContext) -> Precondition:
        if ctx.target.backend not in self.backends:
            return Precondition.no(f"meant for {', '.join(self.backends)}, not {ctx.target.name}")
        try:
            return self.precondition(ctx)
        except (cst.ParserSyntaxError, SyntaxError) as exc:
            return Precondition.no(f"the source does not parse: {str(exc).splitlines()[0]}")
        except Exception as exc:  # noqa: BLE001 - one rewrite's bug on code it did not expect is its own "no"
            return Precondition.no(f"internal error reading the kernel: {type(exc).__name__}: {exc}")

    def apply(self, ctx: RewriteContext) -> str:
        """The rewritten source; `NotApplicable` when the precondition does not hold."""
        pre = self.check(ctx)
        if not pre.holds:
            raise NotApplicable(f"{self.id}: {pre.reason}")
        new = self.transform(ctx, pre.plan)
        validate(new, self.id)
        if new == ctx.source:
            raise NotApplicable(f"{self.id}: changes nothing")
        broken = alias_kept(ctx.module, new)
        if broken:
            raise NotApplicable(f"{self.id}: {broken}")
        return new

    def precondition(self, ctx: RewriteContext) -> Precondition:
        raise NotImplementedError

    def transform(self, ctx: RewriteContext, plan: Any) -> str:
        raise NotImplementedError

    def answers(self, evidence: Evidence) -> bool:
        """Whether this IR fact calls for the rewrite (by default: a missed fact of a listed name)."""
        return evidence.name in self.evidence and evidence.kind == "missed"

    def search_space(self, ctx: RewriteContext, plan: Any) -> list[dict[str, Any]]:
        """Launch values worth compiling, for a tunable rewrite (the first is the default)."""
        return []

    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def summary(cls) -> dict[str, Any]:
        return {
            "id": cls.id,
            "title": cls.title,
            "safety": cls.safety,
            "codes": list(cls.codes),
            "evidence": list(cls.evidence),
            "backends": list(cls.backends),
        }


def missed(evidence: Evidence, name: str, *reasons: str) -> bool:
    """A missed IR fact called `name`, with one of `reasons` (any reason when none is given)."""
    return evidence.name == name and evidence.kind == "missed" and (not reasons or evidence.arg("reason") in reasons)


def validate(source: str, rewrite_id: str) -> None:
    """A rewrite must hand back Python that parses and compiles (libcst keeps the formatting)."""
    try:
        syntax.compile_source(source, "<rewrite>")
    except SyntaxError as exc:  # a bug in the rewrite, not the user's fault
        raise RuntimeError(f"rewrite {rewrite_id} produced invalid Python: line {exc.lineno}: {exc.msg}") from exc
