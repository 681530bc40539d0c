"""The optional LLM proposer (extra `llm`): any OpenAI-compatible endpoint proposes a whole kernel file.

The model gets the target, the findings and the IR evidence (as sentences), and the task's source,
and must answer with the complete file in one ```python block. What comes back is only a proposal:
it becomes a `Candidate` (`made_by=("llm:<model>",)`, `safety="unsafe"`: nobody knows what it
changed) and goes through exactly the same verification as a codemod's output (`evaluate`),
anti-cheat included. A reply without a parsable file defining `ModelNew` and a `@triton.jit`
kernel is a malformed reply, not a candidate.

Configuration (`LLMConfig.from_env`): `OPENAI_BASE_URL` (vLLM, llama.cpp, Ollama, ...),
`OPENAI_API_KEY` (a dummy `EMPTY` is used for a base URL without one), and the model name from the
argument or `DIAGNOSE_LLM_MODEL`. The client retries 408/409/429/5xx and connection errors with
backoff (`max_retries`, honouring `retry-after`) and fails cleanly after that: a failed request is
an `Attempt` with a `failure` (`timeout`, `rate_limited`, `server_error`, `connection`,
`http_<status>`, `malformed`), never an exception.

Tokens: each `Attempt` carries the prompt and completion tokens the server reported; a
`TokenLedger` sums them per task and, given the verdicts, per verified success.

Without the openai package, `llm_propose` raises a `ToolchainError` with one line saying so.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from diagnose import syntax
from diagnose.errors import ToolchainError, UsageError
from diagnose.records import Candidate, Evidence, Finding, Verdict
from diagnose.optimizer.diff import unified_diff
from diagnose.targets import lookup
from diagnose.task.generate import jit_definitions

MISSING = "the LLM proposer needs the openai package: pip install 'diagnose[llm]'"
MODEL_ENV = "DIAGNOSE_LLM_MODEL"
MAX_EVIDENCE = 60
CODE_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.S)
SYSTEM = (
    "You are an expert Triton kernel engineer. You are given a task file in the KernelBench format: a PyTorch "
    "reference `Model`, its inputs, and a Triton implementation `ModelNew`. Make `ModelNew` faster on the target "
    "while computing the same result, using the diagnosis given. Rules: keep `Model`, `get_inputs`, "
    "`get_init_inputs` and `get_input_groups` exactly as they are; do all the computation in Triton kernels "
    "(no torch ops that compute the answer, no calls to the reference, no caching of outputs); keep the kernels "
    "correct for every input size. Reply with the complete Python file in one ```python code block."
)


@dataclass(frozen=True)
class LLMConfig:
    """An OpenAI-compatible endpoint and how to ask it."""

    model: str
    base_url: str | None = None
    api_key: str | None = None
    timeout_s: float = 300.0
    max_retries: int = 2
    temperature: float = 0.2
    max_tokens: int | None = 8192
    attempts: int = 1

    @classmethod
    def from_env(cls, model: str | None = None, **overrides) -> LLMConfig:
        name = model or os.environ.get(MODEL_ENV)
        if not name:
            raise UsageError(f"no LLM model named: pass one or set {MODEL_ENV}")
        base_url = overrides.pop("base_url", None) or os.environ.get("OPENAI_BASE_URL")
        api_key = overrides.pop("api_key", None) or os.environ.get("OPENAI_API_KEY") or ("EMPTY" if base_url else None)
        return cls(model=name, base_url=base_url, api_key=api_key, **overrides)


@dataclass(frozen=True)
class TokenUsage:
    prompt: int = 0
    completion: int = 0

    @property
    def total(self) -> int:
        return self.prompt + self.completion

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(self.prompt + other.prompt, self.completion + other.completion)


@dataclass(frozen=True)
class Attempt:
    """One request: its tokens, and the candidate or the failure it ended in."""

    usage: TokenUsage
    candidate: Candidate | None = None
    failure: str | None = None


@dataclass(frozen=True)
class LLMProposal:
    model: str
    attempts: tuple[Attempt, ...]

    @property
    def candidates(self) -> tuple[Candidate, ...]:
        return tuple(a.candidate for a in self.attempts if a.candidate is not None)

    @property
    def usage(self) -> TokenUsage:
        total = TokenUsage()
        for a in self.attempts:
            total += a.usage
        return total

    @property
    def failures(self) -> tuple[str, ...]:
        return tuple(a.failure for a in self.attempts if a.failure)


@dataclass(frozen=True)
class TokenReport:
    """Tokens of one task's LLM requests, and per candidate that passed verification."""

    prompt: int
    completion: int
    requests: int
    candidates: int
    verified: int

    @property
    def per_success(self) -> float | None:
        return (self.prompt + self.completion) / self.verified if self.verified else None


@dataclass
class TokenLedger:
    """Accumulates the LLM proposals of one task (an explicit object the caller owns, not global state)."""

    proposals: list[LLMProposal] = field(default_factory=list)

    def add(self, proposal: LLMProposal) -> None:
        self.proposals.append(proposal)

    def report(self, results: Iterable[tuple[Candidate, Verdict]] = ()) -> TokenReport:
        mine = {c.id for p in self.proposals for c in p.candidates}
        verified = sum(1 for c, v in results if c.id in mine and v.passed)
        usage = TokenUsage()
        for p in self.proposals:
            usage += p.usage
        return TokenReport(
            usage.prompt, usage.completion, sum(len(p.attempts) for p in self.proposals), len(mine), verified
        )


def available() -> tuple[bool, str]:
    if importlib.util.find_spec("openai") is None:
        return False, MISSING
    return True, ""


def build_messages(source: str, findings: Iterable[Finding], evidence: Iterable[Evidence], target: str) -> list[dict]:
    spec = lookup(target)
    finding_lines = [f"- {f.code} line {f.location.line}: {f.message}" for f in findings]
    evidence_lines = [f"- {e}" for e in evidence if e.kind in ("missed", "analysis")][:MAX_EVIDENCE]
    user = "\n".join(
        [
            f"Target: {spec.name} ({spec.device}).",
            "Findings (source rules):",
            *(finding_lines or ["- none"]),
            "Compiler evidence (offline compile for the target):",
            *(evidence_lines or ["- none"]),
            "The task file:",
            "```python",
            source.rstrip(),
            "```",
        ]
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


class MalformedReply(Exception):
    pass


def extract_source(reply: str | None) -> str:
    """The proposed file: the last ```python block (or the whole reply when it is bare code)."""
    if not reply or not reply.strip():
        raise MalformedReply("empty reply")
    blocks = CODE_BLOCK.findall(reply)
    text = blocks[-1] if blocks else reply
    try:
        tree = syntax.parse(text)
    except SyntaxError as exc:
        raise MalformedReply(f"the proposed file does not parse: line {exc.lineno}: {exc.msg}") from None
    defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    if "ModelNew" not in defined or not jit_definitions(tree):
        raise MalformedReply("the proposed file has no ModelNew or no @triton.jit kernel")
    return text if text.endswith("\n") else text + "\n"


def client(config: LLMConfig):
    ok, why = available()
    if not ok:
        raise ToolchainError(why)
    import openai  # optional: openai (the llm extra; available() checked it)

    return openai.OpenAI(
        base_url=config.base_url,
        api_key=config.api_key or "EMPTY",
        timeout=config.timeout_s,
        max_retries=config.max_retries,
    )


def llm_propose(
    task_path: str | Path, findings: Iterable[Finding], evidence: Iterable[Evidence], target: str, config: LLMConfig
) -> LLMProposal:
    """Ask the endpoint `config.attempts` times; every reply becomes a candidate or a recorded failure."""
    path = Path(task_path)
    source = path.read_text(encoding="utf-8")
    api = client(config)
    import openai  # optional: openai (the llm extra)

    messages = build_messages(source, list(findings), list(evidence), target)
    attempts = []
    for _ in range(max(1, config.attempts)):
        try:
            response = api.chat.completions.create(
                model=config.model, messages=messages, temperature=config.temperature, max_tokens=config.max_tokens
            )
        except openai.APITimeoutError as exc:
            attempts.append(Attempt(TokenUsage(), failure=f"timeout: {exc}"))
            continue
        except openai.RateLimitError as exc:
            attempts.append(Attempt(TokenUsage(), failure=f"rate_limited: {_status_line(exc)}"))
            continue
        except openai.APIStatusError as exc:
            kind = "server_error" if exc.status_code >= 500 else f"http_{exc.status_code}"
            attempts.append(Attempt(TokenUsage(), failure=f"{kind}: {_status_line(exc)}"))
            continue
        except openai.APIConnectionError as exc:
            attempts.append(Attempt(TokenUsage(), failure=f"connection: {exc}"))
            continue
        except (openai.OpenAIError, ValueError) as exc:  # a body the client cannot read (bad JSON, wrong shape)
            attempts.append(Attempt(TokenUsage(), failure=f"malformed: {type(exc).__name__}: {exc}"[:300]))
            continue
        usage = _usage(response)
        try:
            content = response.choices[0].message.content if response.choices else None
            proposed = extract_source(content)
        except (MalformedReply, AttributeError, IndexError, TypeError) as exc:
            attempts.append(Attempt(usage, failure=f"malformed: {exc}"))
            continue
        digest = hashlib.sha256(proposed.encode()).hexdigest()[:8]
        candidate = Candidate(
            id=f"{path.stem.replace('.', '_')}-llm-{digest}",
            source=proposed,
            diff=unified_diff(source, proposed, str(path)),
            made_by=(f"llm:{config.model}",),
            safety="unsafe",
            answers=tuple(f"{f.code}@{path.name}:{f.location.line}" for f in findings),
        )
        attempts.append(Attempt(usage, candidate))
    return LLMProposal(config.model, tuple(attempts))


def _usage(response) -> TokenUsage:
    usage = getattr(response, "usage", None)
    return TokenUsage(int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0))


def _status_line(exc) -> str:
    return f"HTTP {getattr(exc, 'status_code', '?')}: {str(exc).splitlines()[0][:200]}"
