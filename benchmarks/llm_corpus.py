"""Write TritonBench's LLM-written Triton files out as one Python file each: first versions nobody here
wrote, to measure triage and the rewrites on (`rewrite_reach.py`, `diagnose triage`).

    python benchmarks/llm_corpus.py <tritonbench checkout> <out folder>

TritonBench (thunlp/TritonBench) ships, in `LLM_generated/Bench_T_general_purpose/output_<model>.jsonl`,
what five LLMs wrote for its 166 TritonBench-T operators (one JSON record per operator: `instruction`,
`predict`, `label`). Each record's `predict`, its fenced code blocks joined (the whole text where it has
none), becomes `<out>/<model>/<nnn>_<operator>.py`; the `_rag` files are left out. Prints how many files
were written and how many parse. The checkout is fetched at development time, never committed.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

FENCED = re.compile(r"```(?:python|py)?\n(.*?)```", re.S)
OPERATOR = re.compile(r"Wrapper Entry Information: (\w+)")


def main(checkout: Path, out: Path) -> int:
    folder = checkout / "LLM_generated" / "Bench_T_general_purpose"
    if not folder.is_dir():
        sys.exit(f"llm_corpus: no {folder} (extract LLM_generated from a TritonBench checkout first)")
    written = parsed = 0
    for path in sorted(folder.glob("output_*.jsonl")):
        if "_rag" in path.name:
            continue
        model = path.stem.removeprefix("output_")
        (out / model).mkdir(parents=True, exist_ok=True)
        for i, line in enumerate(path.read_text().splitlines()):
            record = json.loads(line)
            text = record.get("predict") or ""
            source = "\n\n".join(FENCED.findall(text)) or text
            name = OPERATOR.search(record.get("instruction", ""))
            (out / model / f"{i:03d}_{name.group(1) if name else 'task'}.py").write_text(source)
            written += 1
            try:
                ast.parse(source)
                parsed += 1
            except SyntaxError:
                pass
    print(f"{written} files written, {parsed} parse")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.splitlines()[3].strip())
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
