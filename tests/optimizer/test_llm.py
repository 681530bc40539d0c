"""The LLM proposer against a real HTTP server on 127.0.0.1 that speaks chat completions with scripted
replies: a good kernel, broken code, a cheating kernel, malformed replies, a timeout, 429/503. The
client retries and fails cleanly; what it proposes goes through the same verification, which rejects
the cheat; tokens are counted per task and per verified success."""

from __future__ import annotations

import json
import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("openai")

from diagnose.optimizer import evaluate  # noqa: E402
from diagnose.optimizer.llm import LLMConfig, TokenLedger, llm_propose  # noqa: E402
from tests.conftest import EXAMPLES  # noqa: E402
from tests.rewrite.conftest import check_options  # noqa: E402

GOOD = (EXAMPLES / "vector_add.py").read_text().replace("BLOCK_SIZE = 128", "BLOCK_SIZE = 1024")
BROKEN = GOOD.replace("out = torch.empty_like(x)", "out = torch.empty_like(x_undefined)")
CHEAT = GOOD.replace("        return out\n", "        return x + y  # the kernel ran, the answer is torch's\n", 1)


def reply(text: str, prompt: int = 1200, completion: int = 300) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-coder",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


def fenced(source: str) -> str:
    return f"Here is a faster version.\n\n```python\n{source}```\n"


class FakeServer:
    """Chat completions with one scripted answer per request: (status, body, headers, delay_s)."""

    def __init__(self):
        self.script: list[tuple[int, object, dict, float]] = []
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(
                    {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body}
                )
                status, payload, headers, delay = (
                    server.script.pop(0) if server.script else (500, {"error": "no script"}, {}, 0)
                )
                time.sleep(delay)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    fake = FakeServer()
    yield fake
    fake.close()


@pytest.fixture
def task(tmp_path):
    path = tmp_path / "vector_add.py"
    shutil.copy(EXAMPLES / "vector_add.py", path)
    return path


def config(server, monkeypatch, **kw) -> LLMConfig:
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    monkeypatch.setenv("DIAGNOSE_LLM_MODEL", "fake-coder")
    return LLMConfig.from_env(**{"max_retries": 2, "timeout_s": 10.0, **kw})


def findings(task):
    from diagnose.triage.cli import triage_source

    return triage_source(task.read_text(), str(task), "cuda:sm90")


@pytest.mark.slow
def test_good_broken_and_cheating_kernels_go_through_verification(server, task, monkeypatch):
    server.script = [
        (200, reply(fenced(GOOD), 1000, 200), {}, 0),
        (200, reply(fenced(BROKEN), 1100, 210), {}, 0),
        (200, reply(fenced(CHEAT), 1200, 220), {}, 0),
    ]
    cfg = config(server, monkeypatch, attempts=3)
    ledger = TokenLedger()
    proposal = llm_propose(task, findings(task), [], "cuda:sm90", cfg)
    ledger.add(proposal)
    assert len(proposal.candidates) == 3 and not proposal.failures
    assert all(c.made_by == ("llm:fake-coder",) and c.safety == "unsafe" for c in proposal.candidates)
    first = server.requests[0]
    assert first["path"] == "/v1/chat/completions"
    assert first["headers"]["authorization"] == "Bearer sk-local"
    assert first["body"]["model"] == "fake-coder"
    prompt = first["body"]["messages"][1]["content"]
    assert "TRI001" in prompt and "BLOCK_SIZE = 128" in prompt and "cuda:sm90" in prompt

    results = evaluate(task, list(proposal.candidates), "cpu", "cuda:sm90", check=check_options(task))
    by_source = {c.source: v for c, v in results}
    assert by_source[GOOD].passed
    broken = by_source[BROKEN]
    assert not broken.passed and broken.failure is not None and "NameError" in broken.failure.message
    cheat = by_source[CHEAT]
    assert not cheat.passed
    assert any(c.name == "ghost_replay" and not c.passed for c in cheat.checks), cheat.checks

    report = ledger.report(results)
    assert (report.prompt, report.completion, report.requests, report.candidates, report.verified) == (
        3300,
        630,
        3,
        3,
        1,
    )
    assert report.per_success == 3930


def test_malformed_replies_are_failures_not_candidates(server, task, monkeypatch):
    server.script = [
        (200, reply("Sorry, I cannot help with that."), {}, 0),
        (200, reply("```python\ndef broken(:\n```"), {}, 0),
        (200, b"{not json", {}, 0),
        (200, {"object": "chat.completion", "choices": []}, {}, 0),
    ]
    proposal = llm_propose(task, [], [], "cuda:sm90", config(server, monkeypatch, attempts=4, max_retries=0))
    assert proposal.candidates == ()
    assert [f.split(":")[0] for f in proposal.failures] == ["malformed"] * 4, proposal.failures
    assert "does not parse" in proposal.failures[1]
    assert proposal.usage.prompt == 2400, "tokens of readable replies still count"


def test_rate_limits_and_server_errors_are_retried(server, task, monkeypatch):
    quick = {"retry-after-ms": "1"}
    server.script = [
        (429, {"error": {"message": "slow down"}}, quick, 0),
        (503, {"error": {"message": "busy"}}, quick, 0),
        (200, reply(fenced(GOOD)), {}, 0),
    ]
    proposal = llm_propose(task, [], [], "cuda:sm90", config(server, monkeypatch, max_retries=2))
    assert len(proposal.candidates) == 1 and not proposal.failures
    assert len(server.requests) == 3
    assert [r["headers"].get("x-stainless-retry-count") for r in server.requests] == ["0", "1", "2"]


def test_it_fails_cleanly_when_retries_run_out(server, task, monkeypatch):
    quick = {"retry-after-ms": "1"}
    server.script = [(503, {"error": {"message": "busy"}}, quick, 0)] * 3 + [
        (429, {"error": {"message": "no"}}, quick, 0)
    ] * 3
    proposal = llm_propose(task, [], [], "cuda:sm90", config(server, monkeypatch, max_retries=2, attempts=2))
    assert proposal.candidates == ()
    assert proposal.failures[0].startswith("server_error: HTTP 503")
    assert proposal.failures[1].startswith("rate_limited: HTTP 429")
    assert len(server.requests) == 6, "each attempt: one request and two retries"


def test_timeout(server, task, monkeypatch):
    server.script = [(200, reply(fenced(GOOD)), {}, 2.0)]
    start = time.monotonic()
    proposal = llm_propose(task, [], [], "cuda:sm90", config(server, monkeypatch, timeout_s=0.3, max_retries=0))
    assert time.monotonic() - start < 1.8
    assert proposal.candidates == () and proposal.failures[0].startswith("timeout")


def test_without_openai_it_says_so_in_one_line(task, monkeypatch):
    import importlib.util

    from diagnose.errors import ToolchainError
    from diagnose.optimizer import llm

    real = importlib.util.find_spec
    monkeypatch.setattr(llm.importlib.util, "find_spec", lambda name, *a: None if name == "openai" else real(name, *a))
    assert llm.available() == (False, llm.MISSING)
    with pytest.raises(ToolchainError) as info:
        llm_propose(task, [], [], "cuda:sm90", LLMConfig(model="m", base_url="http://127.0.0.1:9/v1"))
    assert "\n" not in str(info.value) and "pip install" in str(info.value)


def test_model_name_is_required(monkeypatch):
    from diagnose.errors import UsageError

    monkeypatch.delenv("DIAGNOSE_LLM_MODEL", raising=False)
    with pytest.raises(UsageError, match="DIAGNOSE_LLM_MODEL"):
        LLMConfig.from_env()
