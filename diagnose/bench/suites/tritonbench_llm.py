"""TritonBench's LLM-output files (`LLM_generated/*/*.jsonl`) as candidates, and the candidate code
TritonBench's own evaluator runs (the task format: `diagnose/bench/suites/tritonbench.py`).

A file holds a JSON object a line with `predict` (the model's answer), `label`, and `instruction` or
`prompt`. Lines are matched to tasks as `EVAL/eval_G|T/0_call_acc.py` matches them: a G line by its
`label`, the original code part that contains it (else, for a label edited since, the original holding
at least half of its lines); a T line (empty `label`) by the "Functional Description:" of its prompt
against `description` in `data/TritonBench_T_v1.json[l]`, else by the function named after "Wrapper
Entry Information:". diagnose's candidate is what follows the last "```python" up to the next "```"
(all of it without a fence), written to `<cache>/tritonbench/<file>-<hash>/<folder>/<name>.py` with the
raw answer beside it (`<name>.predict.txt`).
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from pathlib import Path

from diagnose import syntax
from diagnose.cache import cache_root, write_bytes_atomic

# The chat-template tokens TritonBench's evaluator strips from LLM output.
CHAT_TOKENS = ("<|im_end|>", "<|EOT|>")


def clean(text: str) -> str:
    for token in CHAT_TOKENS:
        text = text.replace(token, "")
    return text


def extracted_code(predict: str) -> str:
    """The Python of an LLM answer: what follows the last "```python" up to the next "```" (all of it
    when there is no such fence)."""
    text = clean(predict)
    if "```python" in text:
        text = text.split("```python")[-1].split("```")[0]
    return text.strip() + "\n"


def tritonbench_code(predict: str, kind: str) -> str:
    """The candidate code TritonBench's own evaluator would run (`EVAL/eval_G|T/0_call_acc.py`): for T
    the text after the last "```python" (closing fence included); for G that, parsed, as its imports
    and function definitions (nested ones too), or the text as it is when it does not parse."""
    code = clean(predict.split("```python")[-1]) if "```python" in predict else predict
    if kind != "G":
        return code
    try:
        tree = syntax.parse(code)
    except (SyntaxError, ValueError):
        return code
    imports = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    functions = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    return "\n".join(imports) + "\n\n" + "\n".join(functions)


def descriptions(root: Path) -> dict[str, str]:
    """{file: description} of `data/TritonBench_T_v1.json[l]` under (or beside) `root`, where present."""
    for base in (root, *root.parents[:2]):
        for path in (
            base / "data/TritonBench_T_v1.json",
            base / "data/TritonBench_T_v1.jsonl",
            base / "TritonBench_T_v1.json",
            base / "TritonBench_T_v1.jsonl",
        ):
            if path.is_file():
                text = path.read_text(encoding="utf-8")
                try:
                    items = json.loads(text)
                except json.JSONDecodeError:
                    items = [json.loads(line) for line in text.splitlines() if line.strip()]
                return {i["file"]: i.get("description", "") for i in items if isinstance(i, dict) and "file" in i}
    return {}


def read_jsonl(path: Path) -> list[dict]:
    lines = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path.name}:{number}: malformed JSON line: {exc.msg}") from None
        if not isinstance(item, dict) or "predict" not in item:
            raise ValueError(f"{path.name}:{number}: a line has no `predict`")
        lines.append(item)
    return lines


def match_lines(items: list[dict], files: dict[Path, str], root: Path) -> dict[Path, dict]:
    """{task file: its jsonl line}, as TritonBench's evaluator pairs them (see the module docstring)."""
    out: dict[Path, dict] = {}
    described = descriptions(root)
    by_name = {p.name: p for p in files}
    for item in items:
        label = clean(item.get("label") or "").strip()
        prompt = item.get("instruction") or item.get("prompt") or ""
        if label:
            free = [p for p in files if p not in out]
            hits = [p for p in free if label in files[p]]
            if not hits:  # an edited original: the one holding most of the label's lines (half at least)
                shared = {p: line_overlap(label, files[p]) for p in free}
                best = max(shared, key=shared.get, default=None)
                hits = [best] if best is not None and shared[best] >= 0.5 else []
            if hits:
                exact = [p for p in hits if files[p].strip() == label]
                out[(exact or hits)[0]] = item
            continue
        found = re.search(r"Functional Description: (.*?)Wrapper Entry Information:", prompt, re.S)
        if found and described:
            wanted = found.group(1).replace("\n", "")
            names = [f for f, d in described.items() if wanted and wanted in d.replace("\n", "")]
            if len(names) == 1 and names[0] in by_name:
                out[by_name[names[0]]] = item
                continue
        entry = re.search(r"Wrapper Entry Information:\s*(?:def\s+)?([A-Za-z_]\w*)\s*\(", prompt)
        if entry and f"{entry.group(1)}.py" in by_name and by_name[f"{entry.group(1)}.py"] not in out:
            out[by_name[f"{entry.group(1)}.py"]] = item
    return out


def line_overlap(label: str, code: str) -> float:
    """The share of the label's non-blank lines that are lines of `code` (stripped)."""
    wanted = [line.strip() for line in label.splitlines() if line.strip()]
    have = {line.strip() for line in code.splitlines()}
    return sum(line in have for line in wanted) / len(wanted) if wanted else 0.0


def materialize(jsonl: Path, matched: dict[Path, dict]) -> dict[Path, Path]:
    """Write each matched line's code (`<name>.py`) and raw answer (`<name>.predict.txt`) to the cache."""
    digest = hashlib.sha256(jsonl.read_bytes()).hexdigest()[:16]
    folder = cache_root() / "tritonbench" / f"{jsonl.stem}-{digest}"
    out = {}
    for task, item in matched.items():
        kind_folder = folder / task.parent.name
        solution = kind_folder / task.name
        if not solution.is_file():
            write_bytes_atomic(kind_folder / f"{task.stem}.predict.txt", str(item["predict"]).encode())
            write_bytes_atomic(solution, extracted_code(str(item["predict"])).encode())
        out[task] = solution
    return out
