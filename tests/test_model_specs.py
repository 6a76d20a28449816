"""Model specs, model families, default model selection, API keys and the guard against real providers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mock_api import MockAPI, oa_text_reply, sse_response

from agentos.agent.agent import Agent
from agentos.config import NO_MODEL_HELP, api_key, default_model
from agentos.errors import AuthenticationError, ConfigError, RealProviderBlockedError
from agentos.providers.anthropic_provider import AnthropicProvider
from agentos.providers.models import OLLAMA_DEFAULT_CONTEXT, ModelSpec, model_info, parse_spec
from agentos.providers.openai_provider import OpenAIProvider
from agentos.providers.registry import resolve_model
from agentos.providers.scripted import ScriptedProvider


@pytest.mark.parametrize("spec, parsed", [
    ("openai/gpt-4.1-mini", ModelSpec("openai", "gpt-4.1-mini")),
    ("anthropic/claude-sonnet-4-5", ModelSpec("anthropic", "claude-sonnet-4-5")),
    ("ollama/llama3.1", ModelSpec("ollama", "llama3.1")),
    ("ollama/llama3.1:8b@http://gpu-box:11434/v1", ModelSpec("ollama", "llama3.1:8b", "http://gpu-box:11434/v1")),
    ("openrouter/anthropic/claude-3.5-sonnet", ModelSpec("openrouter", "anthropic/claude-3.5-sonnet")),
    ("openai-compatible/my-model@http://localhost:9000/v1/", ModelSpec("openai-compatible", "my-model",
                                                                       "http://localhost:9000/v1")),
    ("vllm/Qwen/Qwen2.5-7B-Instruct", ModelSpec("vllm", "Qwen/Qwen2.5-7B-Instruct")),
])
def test_parse_spec(spec: str, parsed: ModelSpec) -> None:
    assert parse_spec(spec) == parsed


@pytest.mark.parametrize("spec, message", [
    ("gpt-4.1-mini", "must look like family/model"),
    ("azure/gpt-4", 'unknown model family "azure"'),
    ("scripted/demo@http://x", "no base URL"),
])
def test_bad_specs_say_what_a_spec_looks_like(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        parse_spec(spec)
    assert "openai/gpt-4.1-mini" in str(info.value)


def test_model_families_have_windows_and_capabilities() -> None:
    assert model_info("openai", "gpt-4.1-mini").context_window == 1_047_576
    assert model_info("openai", "gpt-4o-mini").context_window == 128_000
    assert model_info("openai", "o4-mini").reasoning
    assert model_info("anthropic", "claude-sonnet-4-5").context_window == 200_000
    assert model_info("anthropic", "claude-3-5-haiku-latest").prompt_caching
    assert model_info("openrouter", "anthropic/claude-sonnet-4").context_window == 200_000
    assert model_info("ollama", "llama3.1").context_window == OLLAMA_DEFAULT_CONTEXT
    assert model_info("vllm", "meta-llama/Llama-3.1-8B-Instruct").context_window == 131_072
    assert not model_info("vllm", "meta-llama/Llama-3.1-8B-Instruct").prompt_caching
    assert model_info("lmstudio", "some-unknown-model").context_window == 32_768


def test_resolve_builds_the_right_provider(allow_real_providers: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    openai = resolve_model("openai/gpt-4.1-mini")
    assert isinstance(openai, OpenAIProvider) and openai.context_window == 1_047_576
    claude = resolve_model("anthropic/claude-sonnet-4-5", context_window=50_000)
    assert isinstance(claude, AnthropicProvider) and claude.context_window == 50_000
    ollama = resolve_model("ollama/llama3.1")
    assert ollama.name == "ollama" and ollama.base_url == "http://localhost:11434/v1"
    assert resolve_model("lmstudio/qwen2.5-7b").base_url == "http://localhost:1234/v1"
    assert resolve_model("openai-compatible/m@http://h:1/v1").base_url == "http://h:1/v1"
    assert isinstance(resolve_model("scripted/demo"), ScriptedProvider)


def test_compatible_spec_goes_to_its_base_url(allow_real_providers: None) -> None:
    import httpx2

    api = MockAPI(httpx2.Response(404, json={"error": "no such route"}), sse_response(oa_text_reply("hi from vllm")))
    provider = resolve_model("openai-compatible/local-model@http://127.0.0.1:8000/v1", http_client=api.client())
    from agentos.messages import Message
    from agentos.providers.base import ModelRequest, complete

    assert str(api.requests[0].url) == "http://127.0.0.1:8000/v1/models"  # asked for its window; it did not say
    assert provider.window_source == "model catalogue"
    assert complete(provider, ModelRequest("s", "", [Message.user("x")])).text == "hi from vllm"
    assert str(api.requests[1].url) == "http://127.0.0.1:8000/v1/chat/completions"
    assert api.requests[1].headers["authorization"] == "Bearer not-needed"  # never the OpenAI key


def test_openai_compatible_needs_a_base_url(allow_real_providers: None) -> None:
    with pytest.raises(ConfigError, match="@http://HOST:PORT/v1"):
        resolve_model("openai-compatible/m")


@pytest.mark.parametrize("spec, variable", [("openai/gpt-4.1-mini", "OPENAI_API_KEY"),
                                            ("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
                                            ("openrouter/meta-llama/llama-3.1-8b-instruct", "OPENROUTER_API_KEY")])
def test_a_missing_key_says_which_variable_to_set(allow_real_providers: None, spec: str, variable: str) -> None:
    with pytest.raises(AuthenticationError, match=f"set {variable}") as info:
        resolve_model(spec)
    assert "agentos demo" in str(info.value)


def test_keys_from_the_config_file(allow_real_providers: None, agentos_home: Path) -> None:
    agentos_home.mkdir(parents=True)
    (agentos_home / "config.json").write_text(json.dumps({"api_keys": {"openai": "sk-from-config"}}))
    assert api_key("openai", "OPENAI_API_KEY") == "sk-from-config"
    assert default_model() == "openai/gpt-4.1-mini"
    assert isinstance(resolve_model("openai/gpt-4o"), OpenAIProvider)


def test_default_model_order(monkeypatch: pytest.MonkeyPatch, agentos_home: Path) -> None:
    with pytest.raises(ConfigError) as info:
        default_model()
    assert str(info.value) == NO_MODEL_HELP and "agentos demo" in NO_MODEL_HELP and "AGENTOS_MODEL" in NO_MODEL_HELP
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a")
    assert default_model().startswith("anthropic/")
    monkeypatch.setenv("OPENAI_API_KEY", "o")
    assert default_model().startswith("openai/")
    monkeypatch.setenv("AGENTOS_MODEL", "ollama/llama3.1")
    assert default_model() == "ollama/llama3.1"
    agentos_home.mkdir(parents=True)
    (agentos_home / "config.json").write_text(json.dumps({"model": "anthropic/claude-haiku-4-5"}))
    assert default_model() == "anthropic/claude-haiku-4-5"


def test_real_providers_are_blocked_in_tests_unless_opted_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    with pytest.raises(RealProviderBlockedError):
        resolve_model("openai/gpt-4.1-mini")
    with pytest.raises(RealProviderBlockedError):
        AnthropicProvider("claude-sonnet-4-5", api_key="k")


def test_keys_never_reach_agent_state(allow_real_providers: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-super-secret-123")
    agent = Agent.create("keyless", model="openai/gpt-4.1-mini")
    assert agent.state.model == "openai/gpt-4.1-mini"
    assert "sk-super-secret" not in agent.state.snapshot().model_dump_json() and "sk-super-secret" not in repr(agent.provider)
    loaded = Agent.load("keyless")
    assert isinstance(loaded.provider, OpenAIProvider) and loaded.provider.model == "gpt-4.1-mini"


def test_importing_cli_agent_and_registry_loads_no_sdk() -> None:
    code = ("import sys; import agentos.cli; from agentos.cli import build_parser; build_parser().format_help(); "
            "import agentos.agent.agent, agentos.providers.registry; "
            "print('openai' in sys.modules or 'anthropic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[-1] == "False"


def test_an_agent_overrides_the_context_window(allow_real_providers: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos.agent.state import AgentSettings

    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    agent = Agent.create("small", model="anthropic/claude-sonnet-4-5", settings=AgentSettings(context_window=30_000))
    assert agent.provider.context_window == 30_000
    assert Agent.load("small").provider.context_window == 30_000


def test_show_chat_and_the_pager_take_the_window_from_one_catalogue(allow_real_providers: None) -> None:
    from agentos.cli import main

    Agent.create("llama", model="ollama/llama3.1").close()
    writer = Agent.load("llama")  # with its real (Ollama) provider, as `agentos chat` opens it
    reader = Agent.load("llama", read_only=True)  # with no model at all, as `agentos show` opens it
    assert writer.window == writer.pager.window == reader.window == reader.context_breakdown()["window"] == 4096
    writer.close()
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["show", "llama"]) == 0
    assert "model ollama/llama3.1  window 4,096 tokens" in out.getvalue()
    assert "Context: " in out.getvalue() and "of 4,096 tokens" in out.getvalue()


@pytest.mark.parametrize(("spec", "message"), [
    ("llamacpp/qwen@127.0.0.1:18080/v1", 'the base URL in model spec "llamacpp/qwen@127.0.0.1:18080/v1" has no scheme: '
                                         "write it with http:// or https://, for example "
                                         "llamacpp/qwen@http://127.0.0.1:18080/v1"),
    ("ollama/llama3.1@localhost:11434", "for example ollama/llama3.1@http://localhost:11434"),
    ("llamacpp/q@http://:8080/v1", "names no host; write it like http://127.0.0.1:8080/v1."),
    ("llamacpp/q@http://h:99999/v1", "is not a valid URL (Port out of range 0-65535)."),
])
def test_a_base_url_that_cannot_work_is_refused_when_the_agent_is_created(spec: str, message: str) -> None:
    from agentos.errors import ConfigError

    with pytest.raises(ConfigError) as refused:
        Agent.create("sam", model=spec)
    assert message in str(refused.value)
