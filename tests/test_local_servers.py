"""`agentos models` lists what a local server offers, and `agentos new --model ollama/...` checks the model is
pulled; both against a local stand-in server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agentos.cli import main

ROUTES: dict[str, Any] = {
    "/v1/models": {"object": "list", "data": [{"id": "qwen2.5-coder-0.5b", "object": "model",
                                               "meta": {"n_ctx": 2048}}]},
    "/api/tags": {"models": [{"name": "qwen2.5:0.5b", "model": "qwen2.5:0.5b"}, {"name": "llama3.1:latest"}]},
}


class StandIn(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        body = ROUTES.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps(body or {"error": "not found"}).encode())

    do_POST = do_GET


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()


def test_models_lists_what_a_server_offers_as_ready_specs(server: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "--base-url", f"{server}/v1", "--family", "llamacpp"]) == 0
    out = capsys.readouterr().out
    assert f"llamacpp at {server}/v1: 1 model(s):\n  llamacpp/qwen2.5-coder-0.5b@{server}/v1\n" in out
    assert out.endswith("Use one with: agentos new NAME --model SPEC\n")


def test_models_says_what_to_do_when_nothing_answers(capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["models", "--base-url", "http://127.0.0.1:9/v1"]) == 1
    out = capsys.readouterr().out
    assert "openai-compatible at http://127.0.0.1:9/v1: not reachable (nothing is listening there)" in out
    assert "No local server offers a model. Start one (ollama serve" in out
    # looking at the usual addresses and finding nothing is an answer, not a failure (the README runs it)
    from agentos.cli import agents
    from agentos.providers import local_servers

    monkeypatch.setattr(agents, "offers", lambda base_url, family: [local_servers.offer("ollama", "http://127.0.0.1:9/v1")])
    assert main(["models"]) == 0
    assert "No local server offers a model" in capsys.readouterr().out


def test_new_with_an_ollama_model_that_is_not_pulled_says_how_to_pull_it(
        server: str, capsys: pytest.CaptureFixture[str], allow_real_providers: None) -> None:
    assert main(["new", "sam", "--model", f"ollama/mistral@{server}/v1"]) == 1
    err = capsys.readouterr().err
    assert f'error: Ollama at {server} has no model "mistral". Pull it first with: ollama pull mistral   ' \
           f"(models it has: llama3.1:latest, qwen2.5:0.5b)" in err
    assert main(["list"]) == 0 and "sam" not in capsys.readouterr().out  # nothing was created
    assert main(["new", "sam", "--model", f"ollama/llama3.1@{server}/v1"]) == 0  # :latest is implied
    assert 'Created agent "sam"' in capsys.readouterr().out


def test_show_gives_the_window_the_local_server_serves_and_where_that_figure_came_from(
        server: str, capsys: pytest.CaptureFixture[str], allow_real_providers: None) -> None:
    ROUTES["/props"] = {"default_generation_settings": {"n_ctx": 2048}}
    try:
        assert main(["new", "sam", "--model", f"llamacpp/qwen@{server}/v1"]) == 0
        capsys.readouterr()
        assert main(["show", "sam"]) == 0
        assert "window 2,048 tokens (served by llama.cpp (/props n_ctx))" in capsys.readouterr().out
    finally:
        del ROUTES["/props"]


def test_models_offers_llama_cpp_python_as_llamacpp_by_the_models_file_name(
        server: str, capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    recorded = json.loads((Path(__file__).parent / "fixtures" / "llama_cpp_python" / "responses.json").read_text())
    listed = ROUTES["/v1/models"]
    ROUTES["/v1/models"] = recorded["models_without_alias"]["body"]  # its id is the GGUF file's path
    try:
        assert main(["models", "--base-url", f"{server}/v1"]) == 0
    finally:
        ROUTES["/v1/models"] = listed
    out = capsys.readouterr().out
    assert f"llamacpp at {server}/v1: 1 model(s):\n  llamacpp/qwen2.5-coder-0.5b-instruct-q4_k_m@{server}/v1\n" in out


def test_models_calls_a_server_that_answers_too_late_busy_not_unreachable(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from agentos.providers import local_servers

    class Busy(StandIn):
        def do_GET(self) -> None:  # noqa: N802
            time.sleep(0.5)  # llama-cpp-python answers nothing while it generates

    monkeypatch.setattr(local_servers, "PROBE_TIMEOUT_S", 0.1)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Busy)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        assert main(["models", "--base-url", f"http://127.0.0.1:{httpd.server_port}/v1"]) == 1
    finally:
        httpd.shutdown()
    out = capsys.readouterr().out
    assert f"at http://127.0.0.1:{httpd.server_port}/v1: busy: it did not answer within 0.1 s" in out
    assert "not reachable" not in out
