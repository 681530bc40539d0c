"""What a task file's module-level code changed in torch, and putting it back before the reference runs.

A one-file task holds the reference (`Model`) and the candidate (`ModelNew`) in one file, so importing
it for the reference also runs the candidate's module-level code. That code could make the reference
itself wrong in the candidate's favour: replace `torch.softmax` or `F.gelu` with a cheaper
approximation, or lower the precision of every matmul (`torch.backends.cuda.matmul.allow_tf32 = True`,
`torch.set_float32_matmul_precision("medium")`). `snapshot()` is taken before the import; `restore`
afterwards puts back every attribute of torch's public namespaces and every precision switch that
changed, and names them, so the reference computes with torch as it ships and the verdict says what
the file tried. The candidate's own process keeps whatever its file set.

Attributes added by the file (new names) are left: nothing of torch's reads them. A change made later,
inside `Model.__init__` or `forward`, is not seen here (a reference that changes torch when it runs is
the task's own definition).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from diagnose.task import import_task_file
from diagnose.verify.inputs import seed_all

# Every random generator is seeded with this before a reference file is imported: values the file draws
# at import are the same in every process that imports it (`diagnose.verify.recipes`).
IMPORT_SEED = 0


def namespaces() -> dict[str, Any]:
    import torch  # deferred: torch is heavy
    import torch.nn.functional  # deferred: torch is heavy

    return {
        "torch": torch,
        "torch.nn.functional": torch.nn.functional,
        "torch.Tensor": torch.Tensor,
        "torch.linalg": torch.linalg,
        "torch.special": torch.special,
        "torch.fft": torch.fft,
    }


def switches() -> dict[str, tuple[Callable[[], Any], Callable[[Any], None]]]:
    """Global settings that change what torch computes: (read, write) per name."""
    import torch  # deferred: torch is heavy

    def attribute(owner, name):
        return (lambda: getattr(owner, name)), (lambda value: setattr(owner, name, value))

    table = {
        "torch.backends.cuda.matmul.allow_tf32": attribute(torch.backends.cuda.matmul, "allow_tf32"),
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": attribute(
            torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction"
        ),
        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": attribute(
            torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction"
        ),
        "torch.backends.cudnn.allow_tf32": attribute(torch.backends.cudnn, "allow_tf32"),
        "torch.set_float32_matmul_precision": (torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
        "torch.set_default_dtype": (torch.get_default_dtype, torch.set_default_dtype),
    }
    return table


@dataclass(frozen=True)
class Snapshot:
    attributes: dict[str, dict[str, Any]]
    settings: dict[str, Any]


def snapshot() -> Snapshot:
    attributes = {name: dict(vars(space)) for name, space in namespaces().items()}
    settings = {}
    for name, (read, _write) in switches().items():
        try:
            settings[name] = read()
        except Exception:  # noqa: BLE001 - a switch this build of torch does not have
            continue
    return Snapshot(attributes, settings)


def restore(before: Snapshot) -> list[str]:
    """Put back what changed since `before`; the names of what was put back."""
    restored = []
    for name, space in namespaces().items():
        for key, value in before.attributes[name].items():
            if vars(space).get(key, value) is not value:
                setattr(space, key, value)
                restored.append(f"{name}.{key}")
    table = switches()
    for name, value in before.settings.items():
        read, write = table[name]
        if read() != value:
            write(value)
            restored.append(name)
    return restored


def import_reference(path: str):
    """The reference task file's module, with torch put back as it ships when the file changed it at
    import (`restore`), and the names of what was put back."""
    before = snapshot()
    seed_all(IMPORT_SEED)
    module = import_task_file(path)
    # A kernel module's reference is the user's own module: what it sets at import is its behaviour.
    restored = [] if getattr(getattr(module, "Model", None), "replays_module", False) else restore(before)
    return module, restored
