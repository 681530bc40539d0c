"""Handing a verified kernel back: a patch against the user's own file, applied only when asked.

The best candidate of a kernel module's run is a task file (`diagnose/task/harness.py`); cut its
generated section off and it is the new source of the user's module. `write_patch` writes the unified
diff from the module as it is now to that source beside the module, `<stem>.diagnose.patch`, never
touching the module. Its paths are relative to the module's repository (the nearest folder above it with
a `.git`; the module's own folder outside any), so `git -C ROOT apply PATCH` (`apply_command`) takes it
wherever it was written; `apply_patch` writes the new source over the module after copying it to `<name>.diagnose.bak`,
and refuses when the module changed since the run read it (the patch is still there to apply by hand).
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass
from pathlib import Path

from diagnose.errors import UsageError
from diagnose.task.harness import user_part


@dataclass(frozen=True)
class Patch:
    """A written patch: where, how many lines it adds and removes, and the new source."""

    path: Path
    module: Path
    added: int
    removed: int
    new_source: str
    base_sha256: str

    @property
    def lines(self) -> int:
        return self.added + self.removed


def patch_root(module: Path) -> Path:
    """The folder a module's patch is relative to: its git checkout's top, else its own folder."""
    module = module.resolve()
    for folder in module.parents:
        if (folder / ".git").exists():
            return folder
    return module.parent


def apply_command(patch: Path, module: Path) -> str:
    return f"git -C {patch_root(module)} apply {patch.resolve()}"


def diff_text(module: Path, old: str, new: str) -> str:
    name = module.resolve().relative_to(patch_root(module)).as_posix()
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{name}", f"b/{name}"))


def write_patch(module: Path, original_task_text: str, best_task_text: str, folder: Path | None = None) -> Patch | None:
    """The patch from the user's module to the best candidate's source (None when they are the same).

    The candidate's changes are taken relative to the task file the run started from, so edits made to
    the module in the meantime stay the user's; the patch is made against the module as it is now."""
    base = module.read_text(encoding="utf-8")
    started, best = user_part(original_task_text), user_part(best_task_text)
    if started == best:
        return None
    new = best if base == started else _rebase(base, started, best)
    text = diff_text(module, base, new)
    path = (folder or module.parent) / f"{module.stem}.diagnose.patch"
    path.write_text(text)
    added = sum(1 for line in text.splitlines() if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in text.splitlines() if line.startswith("-") and not line.startswith("---"))
    return Patch(path, module, added, removed, new, hashlib.sha256(base.encode()).hexdigest())


def _rebase(base: str, started: str, best: str) -> str:
    """The candidate's edits (started -> best) replayed on `base`, the module as the user has it now:
    each edited block of lines is found in `base` through the lines the two still share; `UsageError`
    when one is not there as the run read it (the user edited those very lines)."""
    old, new, out = started.splitlines(True), best.splitlines(True), base.splitlines(True)
    where: dict[int, int] = {}  # line of `started` -> the same line in `base`
    for tag, i1, i2, j1, _ in difflib.SequenceMatcher(None, old, out, autojunk=False).get_opcodes():
        if tag == "equal":
            where.update({i1 + k: j1 + k for k in range(i2 - i1)})
    where[len(old)] = len(out)
    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        start = where.get(i1) if i1 < i2 else (where[i1 - 1] + 1 if i1 > 0 and i1 - 1 in where else where.get(i1))
        if start is None or any(where.get(i1 + k) != start + k for k in range(i2 - i1)):
            raise UsageError(
                "the module changed since the run read it, where the candidate edits it; "
                "run `diagnose optimize` again on the module as it is now"
            )
        edits.append((start, start + (i2 - i1), new[j1:j2]))
    for start, end, lines in reversed(edits):
        out[start:end] = lines
    return "".join(out)


def apply_patch(patch: Patch) -> Path:
    """Write the patched source over the module, after a backup; return the backup's path."""
    current = patch.module.read_text(encoding="utf-8")
    if hashlib.sha256(current.encode()).hexdigest() != patch.base_sha256:
        raise UsageError(f"{patch.module} changed after the patch was made; apply {patch.path} by hand")
    backup = patch.module.with_name(patch.module.name + ".diagnose.bak")
    backup.write_text(current, encoding="utf-8")
    patch.module.write_text(patch.new_source, encoding="utf-8")
    return backup
