"""The `inductor` candidate of a subgraph: the Triton kernels Inductor generates for it, extracted as a
standalone Triton `ModelNew` (`<name>.inductor.py` beside the subgraph's task file).

Worker side (`inductor_job`, one worker for all the subgraphs of a model; their task files are ours,
but their parameter values and shapes are the user's model's): each task's `Model` is built as the
task file builds it, and traced with `make_fx` as a function of its parameters and buffers (in
`named_parameters`, then `named_buffers` order) followed by its forward's tensors, so the order of
Inductor's graph inputs is the one we gave. `torch._inductor.compile_fx.compile_fx` compiles that
graph under `torch._inductor.utils.get_code`, which keeps the output code and skips compiling the
kernels (on CPU, `cpu_backend = "triton"` makes Inductor write Triton kernels where there is no
Triton backend to compile them; the CPU stand-in answers its device queries). Caches are off
(`force_disable_caches`): a cached graph would give no code, a cached config would stand for the
list. Each kernel's source is then run with its own `@triton_heuristics` decorator, which builds
Inductor's `CachingAutotuner` (nothing compiled) and so gives Inductor's own list of configs for it.
`inductor_source.model_new` writes the file.

Shapes are static, those of the whole model's forward (the task files say `FIXED_SHAPES`). A
subgraph Inductor gives no Triton kernel (a lone matmul: `extern_kernels.mm`), or code this rewrite
does not handle, gets no candidate and a one-line reason.
"""

from __future__ import annotations

import ast
import tempfile
from dataclasses import dataclass
from pathlib import Path

from diagnose import syntax
from diagnose.decompose import inductor_source
from diagnose.decompose.inductor_source import Config, Host, Unsupported
from diagnose.decompose.subtask import owner_of
from diagnose.runtime.runner import call
from diagnose.task import import_task_file

ENTRY = "diagnose.decompose.inductor:inductor_job"
SUFFIX = ".inductor.py"
DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class Extraction:
    """A subgraph's Inductor candidate file, or None and why there is none."""

    path: Path | None
    reason: str = ""


def extract(task_files: tuple[Path, ...], device: str, timeout_s: float) -> dict[Path, Extraction]:
    """Write `<name>.inductor.py` beside each task file that Inductor gives Triton kernels for (in one
    worker); task file -> what came of it."""
    if device not in DEVICES:
        return {f: Extraction(None, f"Inductor candidates are made on cpu or cuda, not {device}") for f in task_files}
    result = call(ENTRY, {"tasks": [str(f) for f in task_files], "device": device}, timeout_s=timeout_s)
    if not result.ok:
        first = (result.failure.message.strip().splitlines() or [""])[0]
        return {
            f: Extraction(None, f"Inductor's worker failed: {result.failure.kind}: {first}"[:200]) for f in task_files
        }
    made = result.value
    return {
        f: Extraction(Path(made[str(f)]["path"]) if made[str(f)].get("path") else None, made[str(f)].get("reason", ""))
        for f in task_files
    }


def inductor_job(payload: dict) -> dict:
    device = payload["device"]
    if device == "cpu":
        from diagnose.runtime import cpu_standin  # deferred: the stand-in imports torch

        cpu_standin.install("cuda:sm90", interpreter=False)
    import torch._inductor.config  # deferred: torch is heavy

    torch._inductor.config.cpu_backend = "triton"
    torch._inductor.config.force_disable_caches = True
    out = {}
    for task in payload["tasks"]:
        try:
            out[task] = {"path": str(write_candidate(Path(task), device))}
        except Unsupported as exc:
            out[task] = {"reason": str(exc)}
        except Exception as exc:  # noqa: BLE001 - Inductor failing on one subgraph is that subgraph's reason
            first = (str(exc).strip().splitlines() or [""])[0]
            out[task] = {"reason": f"Inductor failed: {type(exc).__name__}: {first}"[:200]}
    return out


def write_candidate(task: Path, device: str) -> Path:
    """Compile the task's `Model` with Inductor and write its candidate file; its path."""
    import torch  # deferred: torch is heavy
    from torch._inductor.compile_fx import compile_fx  # deferred: torch is heavy
    from torch._inductor.utils import get_code  # deferred: torch is heavy
    from torch.fx.experimental.proxy_tensor import make_fx  # deferred: torch is heavy

    module = import_task_file(task)
    model = module.Model().to(device)
    inputs = [v.to(device) if isinstance(v, torch.Tensor) else v for v in module.get_inputs()]
    state = [*model.named_parameters(), *model.named_buffers()]
    tensors = [i for i, v in enumerate(inputs) if isinstance(v, torch.Tensor)]
    if not tensors:
        raise Unsupported("the subgraph has no tensor input")

    def forward(*flat):
        # Numbers the forward reads keep their one value (the shapes are fixed); tensors are inputs.
        given = dict(zip(tensors, flat[len(state) :]))
        values = dict(zip((n for n, _ in state), flat[: len(state)]))
        return torch.func.functional_call(model, values, tuple(given.get(i, v) for i, v in enumerate(inputs)))

    example = [v.detach() for _, v in state] + [inputs[i] for i in tensors]
    with torch.no_grad():  # traced on fake tensors: nothing computed at the model's real sizes
        graph = make_fx(forward, tracing_mode="fake")(*example)
    returned = next(n for n in graph.graph.nodes if n.op == "output").args[0]
    single = isinstance(returned, torch.fx.Node)
    if not single and not (isinstance(returned, tuple) and all(isinstance(v, torch.fx.Node) for v in returned)):
        raise Unsupported(f"the subgraph returns a {type(returned).__name__}, not a tensor or a tuple of tensors")
    codes = get_code(lambda: compile_fx(graph, example))
    if not codes:
        raise Unsupported("Inductor wrote no code for it")
    output_code = codes[0]
    found = inductor_source.kernels(output_code)
    arguments = forward_arguments(task)
    graph_inputs = [parameter_code(n, model) for n, _ in state] + [arguments[i] for i in tensors]
    host = Host(
        docstring(task, len(found), device, torch.__version__),
        init_body(task),
        tuple(arguments),
        tuple(graph_inputs),
        arguments[tensors[0]],
        single,
    )
    text = inductor_source.model_new(output_code, {k.name: configs_of(k) for k in found}, host)
    path = task.with_name(task.stem + SUFFIX)
    path.write_text(text)
    return path


def configs_of(kernel: inductor_source.Kernel) -> list[Config]:
    """Inductor's configs for the kernel: its source run with its own heuristics decorator, which builds
    a `CachingAutotuner` (nothing is compiled) over the configs Inductor chose for its sizes."""
    source = "\n".join(line for line in kernel.source.splitlines() if "set_driver_to_cpu()" not in line)
    with tempfile.TemporaryDirectory() as folder:
        # A file of its own: the heuristics read their autotune cache beside `__file__`; there is none.
        filename = str(Path(folder) / f"{kernel.name}.py")
        Path(filename).write_text(source)
        scope = {"__file__": filename, "__name__": f"inductor_{kernel.name}"}
        exec(compile(source, filename, "exec"), scope)  # noqa: S102 - Inductor's own kernel source
    tuner = scope[kernel.name]
    return [Config(tuple(sorted(c.kwargs.items())), c.num_warps, c.num_stages) for c in tuner.configs]


def parameter_code(name: str, model) -> str:
    """The code that reads parameter or buffer `name` of `ModelNew` (`self.norm.weight`)."""
    owner, _, leaf = name.rpartition(".")
    if leaf.isidentifier():
        return f"{owner_of(owner)}.{leaf}"
    getter = "get_parameter" if name in dict(model.named_parameters()) else "get_buffer"
    return f"self.{getter}({name!r})"


def task_model(task: Path) -> ast.ClassDef:
    tree = syntax.parse(task.read_text())
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")


def forward_arguments(task: Path) -> list[str]:
    forward = next(n for n in task_model(task).body if isinstance(n, ast.FunctionDef) and n.name == "forward")
    return [a.arg for a in forward.args.args[1:]]


def init_body(task: Path) -> str:
    """The task `Model`'s `__init__` body as its file has it: the same layers, the same values loaded."""
    text = task.read_text()
    init = next(n for n in task_model(task).body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    return "\n".join(ast.get_source_segment(text, s, padded=True) for s in init.body)


def docstring(task: Path, count: int, device: str, version: str) -> str:
    return (
        f"Subgraph {task.stem} ({task.name}) as Inductor compiles it: {count} Triton kernel"
        f"{'s' if count != 1 else ''}.\n\nWritten by `diagnose decompose` from Inductor's output code "
        f"(torch {version}, generated on {device}): each kernel a\nplain `@triton.jit` autotuned over "
        "Inductor's own configs for it, `ModelNew.forward` its host code. The\nparameters are the "
        f"task's (loaded as {task.name} loads them); the shapes are the whole model's forward's only.\n"
    )
