"""The window a local server serves is asked of it (recorded bodies of each server), used instead of the model
family's figure, shown with its source, and a configured window larger than it is warned about."""

from __future__ import annotations

import httpx2
import pytest
from mock_api import MockAPI

from agentos import Agent
from agentos.errors import WindowWarning
from agentos.providers.registry import resolve_model

pytestmark = pytest.mark.usefixtures("allow_real_providers")

LLAMACPP_PROPS = {"default_generation_settings": {"n_ctx": 2048, "params": {"n_predict": -1}},
                  "total_slots": 1, "model_path": "/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"}
OLLAMA_SHOW = {"modelfile": "FROM qwen2.5:0.5b", "parameters": 'stop "<|im_end|>"\nnum_ctx 8192',
               "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}}
OLLAMA_SHOW_DEFAULT = {"parameters": 'stop "<|im_end|>"', "model_info": {"qwen2.context_length": 32768}}
VLLM_MODELS = {"object": "list", "data": [{"id": "Qwen/Qwen2.5-7B-Instruct", "object": "model",
                                           "max_model_len": 16384, "owned_by": "vllm"}]}
LMSTUDIO_MODELS = {"data": [{"id": "qwen2.5-7b-instruct", "state": "loaded", "max_context_length": 32768,
                             "loaded_context_length": 4096}]}


def _served(spec: str, *replies: httpx2.Response, **kw: object) -> tuple[object, MockAPI]:
    api = MockAPI(*replies)
    return resolve_model(spec, http_client=api.client(), **kw), api  # type: ignore[arg-type]


def test_llamacpp_props() -> None:
    provider, api = _served("llamacpp/qwen2.5-coder-0.5b@http://127.0.0.1:18080/v1",
                            httpx2.Response(200, json=LLAMACPP_PROPS))
    assert str(api.requests[0].url) == "http://127.0.0.1:18080/props"
    assert provider.context_window == 2048  # type: ignore[attr-defined]  # not qwen2.5's 32,768
    assert provider.window_source == "served by llama.cpp (/props n_ctx)"  # type: ignore[attr-defined]


def test_llamacpp_without_props_falls_back_to_its_models_list() -> None:
    provider, api = _served("llamacpp/m@http://127.0.0.1:18080/v1", httpx2.Response(404),
                            httpx2.Response(200, json={"data": [{"id": "m", "meta": {"n_ctx": 4096, "n_ctx_train": 32768}}]}))
    assert str(api.requests[1].url) == "http://127.0.0.1:18080/v1/models"
    assert provider.context_window == 4096  # type: ignore[attr-defined]


def test_ollama_num_ctx_and_its_silent_default() -> None:
    provider, api = _served("ollama/qwen2.5:0.5b", httpx2.Response(200, json=OLLAMA_SHOW))
    assert str(api.requests[0].url) == "http://localhost:11434/api/show"
    assert api.body(0) == {"model": "qwen2.5:0.5b"}
    assert provider.context_window == 8192  # type: ignore[attr-defined]
    provider, _ = _served("ollama/qwen2.5:0.5b", httpx2.Response(200, json=OLLAMA_SHOW_DEFAULT))
    assert provider.context_window == 4096  # type: ignore[attr-defined]
    assert provider.window_source == "Ollama's default num_ctx, 4,096, assumed; the model supports 32,768"  # type: ignore[attr-defined]
    assert "If `ollama serve` runs with a larger OLLAMA_CONTEXT_LENGTH" in provider.window_advice  # type: ignore[attr-defined]


def test_vllm_and_lmstudio() -> None:
    provider, api = _served("vllm/Qwen/Qwen2.5-7B-Instruct", httpx2.Response(200, json=VLLM_MODELS))
    assert str(api.requests[0].url) == "http://localhost:8000/v1/models" and provider.context_window == 16384  # type: ignore[attr-defined]
    provider, api = _served("lmstudio/qwen2.5-7b-instruct", httpx2.Response(200, json=LMSTUDIO_MODELS))
    assert str(api.requests[0].url) == "http://localhost:1234/api/v0/models"
    assert provider.context_window == 4096  # type: ignore[attr-defined]  # what is loaded, not the model's maximum


def test_a_server_that_does_not_say_leaves_the_catalogue_figure() -> None:
    provider, _ = _served("vllm/Qwen/Qwen2.5-7B-Instruct", httpx2.Response(200, text="not json"))
    assert provider.context_window == 32768 and provider.window_source == "model catalogue"  # type: ignore[attr-defined]
    provider, _ = _served("llamacpp/m@http://127.0.0.1:9/v1", httpx2.ConnectError("refused"), httpx2.ConnectError("x"))
    assert provider.window_source == "model catalogue"  # type: ignore[attr-defined]


def test_a_configured_window_larger_than_served_is_warned_about_and_shown_with_its_source(
        capsys: pytest.CaptureFixture[str]) -> None:
    from agentos.agent.state import AgentSettings

    api = MockAPI(httpx2.Response(200, json=LLAMACPP_PROPS))
    provider = resolve_model("llamacpp/qwen@http://127.0.0.1:18080/v1", context_window=8192, http_client=api.client())
    with pytest.warns(WindowWarning, match=r"this agent's context window is set to 8,192 tokens, but the server serves "
                                           r"2,048 \(served by llama.cpp \(/props n_ctx\)\)"):
        agent = Agent.create("sam", model="llamacpp/qwen@http://127.0.0.1:18080/v1", provider=provider,
                             settings=AgentSettings(context_window=8192))
    assert agent.window_source == "this agent's setting"
    served = resolve_model("llamacpp/qwen@http://127.0.0.1:18080/v1",
                           http_client=MockAPI(httpx2.Response(200, json=LLAMACPP_PROPS)).client())
    other = Agent.create("kim", model="llamacpp/qwen@http://127.0.0.1:18080/v1", provider=served)
    from agentos.formatting import describe_agent

    assert "window 2,048 tokens (served by llama.cpp (/props n_ctx))" in describe_agent(other)


def test_a_model_the_list_does_not_name_takes_no_other_models_window() -> None:
    provider, _ = _served("lmstudio/qwen2.5-7b", httpx2.Response(200, json=LMSTUDIO_MODELS), httpx2.Response(404))
    assert provider.window_source == "model catalogue"  # type: ignore[attr-defined]


def test_a_window_below_one_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    from agentos.cli import main

    with pytest.raises(SystemExit):
        main(["new", "sam", "--model", "scripted/demo", "--window", "-5"])
    assert "argument --window: -5 must be above zero" in capsys.readouterr().err
