"""launch-options: num_warps and num_stages of one launch, chosen by timing on the device."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import libcst as cst

from diagnose.rewrite.edit import expression, fit_launch, operand, replace, set_keyword
from diagnose.rewrite.reach import reached_sites
from diagnose.rewrite.rewrite import Precondition, Rewrite, RewriteContext
from diagnose.rewrite.launches import LaunchSite, launch_sites, literal_binding, sites_of, within
from diagnose.rewrite.source import Kernel, code, dotted, int_value, kernels, keyword, names, walk
from diagnose.task.harness import replay_targets

# Triton's defaults where a launch passes none (CUDAOptions / HIPOptions in Triton 3.6).
DEFAULTS = {"cuda": {"num_warps": 4, "num_stages": 3}, "hip": {"num_warps": 4, "num_stages": 2}}
# 1024 threads per program: 32 warps of 32 threads on NVIDIA, 16 wavefronts of 64 on AMD.
MAX_WARPS = {"cuda": 32, "hip": 16}
STAGES = (1, 2, 3, 4)
SCALE = "num_warps_scale"
# Triton binds a launch's arguments to the kernel's parameters first: where a parameter has an option's
# name, the option can no longer be given (`got multiple values for argument 'num_warps'`).
NAMED_PARAM = "the kernel takes a parameter named {param}: Triton binds the name to it, not to the launch option"


@dataclass(frozen=True)
class OptionSlot:
    """Where one launch option is set: `kwarg` (a literal at the launch), `host` (a name of the launching
    function bound once to a literal, read by this launch alone), `absent` (Triton's default), or
    `computed` (anything else: a settings helper's result, an expression). A computed num_warps this
    rewrite scaled before (`min(E * 2, 32)`, `max(E // 2, 1)`) reads as `E` with its `factor` (2, -2:
    negative divides), so a new choice replaces the scaling instead of compounding it."""

    param: str
    kind: str
    current: int | None
    expression: str | None = None
    factor: int = 1

    def shown(self) -> str:
        if self.kind != "computed":
            return f"{self.param}={self.current}{' (default)' if self.kind == 'absent' else ''}"
        scale = "" if self.factor == 1 else f" x{self.factor}" if self.factor > 0 else f" /{-self.factor}"
        return f"{self.param}={self.expression}{scale}"


@dataclass(frozen=True)
class OptionsPlan:
    kernel: str
    site_index: int
    warps: OptionSlot
    stages: OptionSlot | None  # None: the kernel has no loop to pipeline

    def shown(self) -> str:
        return ", ".join(s.shown() for s in (self.warps, self.stages) if s)


class LaunchOptions(Rewrite):
    """## What it changes
    `num_warps` and, for a kernel with a loop, `num_stages` of one launch of a kernel the task's call
    reaches, nothing else. The smallest edit that sets them where they are set: a literal at the
    launch (`num_warps=4` becomes `num_warps=8`), the literal of a name the launching function binds
    once and passes to this launch alone (`num_warps = 4`), an option the launch leaves to Triton's
    default (added as a keyword), or, where the value is computed (`BLOCK_SIZE, num_warps =
    calculate_settings(n)`), a scaling of the computed value at this launch
    (`num_warps=min(num_warps * 2, 32)`, `num_warps=max(num_warps // 2, 1)`), so the helper's choice
    per shape is kept and only shifted; a computed `num_stages` is replaced by the chosen literal.

    The values are chosen by timing only: the launch-config search times the current values and the
    alternatives nearest to them (num_warps x2, /2, x4, /4; num_stages 1-4) with the harness on the
    device, on every input group of the task, after dropping those that do not compile or spill.
    No estimate can rank warps against each other, so with no device to time on nothing is changed,
    and the rewrite says so; a configuration must beat the current one by more than the search's
    tie margin.

    ## When it is valid
    Any kernel, whatever its source looks like: the launch options change how a program is mapped
    onto threads and how far loads run ahead in loops, never what it computes. The launch is in a
    function of the module the task's call reaches (a module-level function, an autograd
    `Function.forward`, a method, a function nested in one; `diagnose/rewrite/reach.py`), the options
    are passed by keyword or not at all (a `**kwargs` that may set them is not guessed at), the kernel
    is not autotuned (its configs set the options: `add-autotune`'s business; a `triton.heuristics`
    that sets neither option is no matter) and not a bare launch
    replayed from a capture (its options are the capture's). A kernel with a parameter named
    `num_warps` (Liger's neighborhood-attention mask kernel takes `num_stages` and `num_warps` as
    constexprs) cannot have that option set at its launch: Triton binds the name to the parameter;
    a parameter named `num_stages` leaves only num_warps to search. A kernel that reads the warp count
    itself (inline assembly written for one count) would be wrong to retune; none seen so far does.

    ## Why it is faster
    Warps per program trade registers and occupancy against parallelism within a program: a row of
    4096 values over 8 warps holds 16 per thread, over 4 warps 32; a kernel whose programs loop over
    rows may hide memory latency better with fewer, fuller warps, a wide row with more. Stages set how
    many loop iterations of loads are in flight. Which is best depends on the shape and the device,
    which is why only a measurement decides.

    ## Safety
    Safe: the same arithmetic on the same values; only the order of an in-block reduction's tree may
    change with the warp count.

    ## Answers
    The profiling codes PRF001 (memory-bound short of the roof), PRF002 (compute-bound short of
    it), PRF003 (latency-bound), PRF004 (too few programs) and PRF005 (launch-bound): a kernel below
    its roofline bound whose source no other rewrite can read is still worth a measured retune; IR
    evidence RegisterSpill (more warps give each thread fewer values to hold; configurations that
    spill are dropped before timing, the current ones excepted, which the timing compares against).

    ## References
    Triton `triton.Config` (num_warps, num_stages);
    Kernel Tuner and Triton's autotuner (measure, don't model, launch parameters).
    """

    id = "launch-options"
    title = "Retime num_warps and num_stages at the launch, keep the fastest"
    codes = ("PRF001", "PRF002", "PRF003", "PRF004", "PRF005")
    evidence = ("RegisterSpill",)
    backends = ("cuda", "hip")
    conflicts = ("retune-launch", "add-autotune", "wgmma-tiles", "attention-tiles")
    tunable = True
    estimated = False
    timed_configs = 6

    def precondition(self, ctx: RewriteContext) -> Precondition:
        module, targets = ctx.module, replay_targets(ctx.source)
        known, sites = kernels(module), launch_sites(module)
        bare = [
            f"{name}: replayed as a bare launch (its launch options are the capture's)"
            for name in (t for t in targets or () if t in known)
        ]
        return Precondition.first_site(
            reached_sites(module, targets),
            lambda site: _plan(ctx, known[site.kernel], site, sites),
            OptionsPlan,
            lambda plan: f"launched with {plan.shown()}",
            targets,
            bare,
        )

    def search_space(self, ctx: RewriteContext, plan: OptionsPlan) -> list[dict[str, Any]]:
        """The current values first, then the nearest alternatives: one option moved at a time."""
        warps, stages = plan.warps, plan.stages
        current: dict[str, int] = {}
        if warps.kind == "computed":
            current[SCALE] = warps.factor
            exponent = _exponent(warps.factor)
            moves = [{SCALE: _factor(exponent + d)} for d in (1, -1, 2, -2)]
        else:
            current["num_warps"] = warps.current
            top = MAX_WARPS[ctx.target.backend]
            moves = [
                {"num_warps": w}
                for w in (warps.current * 2, warps.current // 2, warps.current * 4, warps.current // 4)
                if 1 <= w <= top
            ]
        if stages is not None:
            now = stages.current if stages.kind != "computed" else None
            current["num_stages"] = now if now is not None else 0  # 0: as computed (kept)
            order = sorted(STAGES, key=lambda s: (abs(s - (now or 3)), -s))
            moves[2:2] = [{"num_stages": s} for s in order if s != now]
        out = [current]
        for move in moves:
            values = {**current, **move}
            if values not in out:
                out.append(values)
        return out

    def transform(self, ctx: RewriteContext, plan: OptionsPlan) -> str:
        chosen = dict(ctx.params)
        site = sites_of(ctx.module, plan.kernel)[plan.site_index]
        mapping: dict[cst.CSTNode, cst.CSTNode] = {}
        added: dict[str, int] = {}
        top = MAX_WARPS[ctx.target.backend]
        factor = int(chosen.get(SCALE, plan.warps.factor))
        if plan.warps.kind == "computed" and factor != plan.warps.factor:
            mapping[option_value(site, "num_warps")] = expression(scaled(plan.warps.expression, factor, top))
        elif plan.warps.kind != "computed" and int(chosen.get("num_warps", plan.warps.current)) != plan.warps.current:
            _set(site, plan.warps, int(chosen["num_warps"]), mapping, added)
        if plan.stages is not None and int(chosen.get("num_stages", 0) or 0) not in (0, plan.stages.current):
            _set(site, plan.stages, int(chosen["num_stages"]), mapping, added)
        module = replace(ctx.module, mapping)
        if added:
            site = sites_of(module, plan.kernel)[plan.site_index]
            call = site.call
            for param, value in added.items():
                call = set_keyword(call, param, cst.Integer(str(value)))
            module = replace(module, {site.call: fit_launch(site, call)})
        return module.code


def _set(site: LaunchSite, slot: OptionSlot, value: int, mapping: dict, added: dict) -> None:
    if slot.kind == "absent":
        added[slot.param] = value
    elif slot.kind == "host":
        mapping[literal_binding(site.host, option_value(site, slot.param).value).literal] = cst.Integer(str(value))
    else:  # a literal at the launch (or in its dict), or a computed num_stages: replaced by the literal
        mapping[option_value(site, slot.param)] = cst.Integer(str(value))


def _plan(ctx: RewriteContext, kernel: Kernel, site: LaunchSite, sites: list[LaunchSite]) -> OptionsPlan | str:
    """The plan for `site` (`sites`: every launch site of the module), or why not."""
    if kernel.decides({"num_warps", "num_stages"}):
        return "autotuned: its configs set num_warps and num_stages (add-autotune)"
    index = next(i for i, s in enumerate(s for s in sites if s.kernel == kernel.name) if s.statement is site.statement)
    # the launches a name of the launching function reaches besides this one
    others = [s for s in sites if within(site, s) and s.statement is not site.statement]
    if "num_warps" in kernel.params:
        return NAMED_PARAM.format(param="num_warps")
    warps = _slot(ctx, site, others, "num_warps")
    if isinstance(warps, str):
        return warps
    stages = None
    if "num_stages" not in kernel.params and any(isinstance(n, (cst.For, cst.While)) for n in walk(kernel.node.body)):
        found = _slot(ctx, site, others, "num_stages")
        # a `**kwargs` that may hold num_stages leaves it alone; num_warps is still worth timing
        stages = found if isinstance(found, OptionSlot) else None
    return OptionsPlan(kernel.name, index, warps, stages)


def _slot(ctx: RewriteContext, site: LaunchSite, others: list[LaunchSite], param: str) -> OptionSlot | str:
    value = option_value(site, param)
    if value is None:
        # Only an option the launch does not name can come from its `**kwargs` (both would be a
        # TypeError): a named one is changed in place whatever the dict holds.
        if site.passes_unpacked(param):
            return f"the launch's **kwargs may set {param}"
        return OptionSlot(param, "absent", DEFAULTS[ctx.target.backend][param])
    literal = int_value(value)
    if literal is not None:
        return OptionSlot(param, "kwarg", literal)
    if isinstance(value, cst.Name):
        binding = literal_binding(site.host, value.value)
        if binding is not None and not any(value.value in names(s.call) for s in others):
            return OptionSlot(param, "host", binding.value)
    base, factor = unscaled(value)
    return OptionSlot(param, "computed", None, code(_bare(base)), factor)


def scaled(base: str, factor: int, top: int) -> str:
    """`base` scaled by `factor` as the launch spells it: `min(E * 2, 32)`, `max(E // 2, 1)`, or `E`."""
    if factor == 1:
        return base
    inner = operand(base)
    return f"min({inner} * {factor}, {top})" if factor > 1 else f"max({inner} // {-factor}, 1)"


def unscaled(value: cst.BaseExpression) -> tuple[cst.BaseExpression, int]:
    """(E, factor) of a value `scaled` wrote (`min(E * 2, 32)` -> (E, 2), `max(E // 2, 1)` -> (E, -2));
    anything else is itself with factor 1."""
    if isinstance(value, cst.Call) and dotted(value.func) in ("min", "max") and len(value.args) == 2:
        inner, bound = value.args[0].value, int_value(value.args[1].value)
        if isinstance(inner, cst.BinaryOperation) and int_value(inner.right) and bound:
            base = inner.left
            if dotted(value.func) == "min" and isinstance(inner.operator, cst.Multiply):
                return _bare(base), int_value(inner.right)
            if dotted(value.func) == "max" and isinstance(inner.operator, cst.FloorDivide) and bound == 1:
                return _bare(base), -int_value(inner.right)
    return value, 1


def _bare(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.with_changes(lpar=(), rpar=()) if getattr(node, "lpar", None) else node


def _exponent(factor: int) -> int:
    return (abs(factor).bit_length() - 1) * (1 if factor > 0 else -1)


def _factor(exponent: int) -> int:
    return 2**exponent if exponent >= 0 else -(2**-exponent)


def option_value(site: LaunchSite, param: str) -> cst.BaseExpression | None:
    """The expression that sets a launch option: its keyword at the launch, or its entry in a dict the
    launch unpacks that the launching function binds once to a display (Liger's `kernel_args =
    {"num_warps": num_warps}`, `kwargs = {"BLOCK_N": 2048, "num_warps": 1}`); None when neither."""
    arg = keyword(site.call, param)
    if arg is not None:
        return arg.value
    for unpacked in (a.value for a in site.call.args if a.star == "**" and isinstance(a.value, cst.Name)):
        bindings = [
            n
            for n in walk(site.host.body)
            if isinstance(n, cst.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0].target, cst.Name)
            and n.targets[0].target.value == unpacked.value
        ]
        if len(bindings) == 1 and isinstance(bindings[0].value, cst.Dict):
            for element in bindings[0].value.elements:
                if (
                    isinstance(element, cst.DictElement)
                    and isinstance(element.key, cst.SimpleString)
                    and element.key.evaluated_value == param
                ):
                    return element.value
    return None
