"""llama-cpp-python's server, as recorded from llama-cpp-python[server]==0.3.36 (tests/fixtures/llama_cpp_python/):
its window is learnt with a probe, as it states it nowhere; a prompt over its window, which it answers with an empty
stream, is asked again without streaming and compacted as an overflow; tools go with tool_choice "auto"; a reply cut
by the full window is not called an output limit. A stand-in server on 127.0.0.1 replays what it answered."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from mock_api import MockAPI, get_weather, json_response, sse_response

from agentos import Agent
from agentos.agent.state import AgentSettings
from agentos.errors import ContextOverflowError, IncompleteStreamError, WindowWarning
from agentos.events import MessagesEvicted, Notice, ReplyIncomplete, TurnFailed, TurnFinished
from agentos.messages import Message
from agentos.providers import served_window
from agentos.providers.base import ModelRequest, StreamDone, complete
from agentos.providers.openai_provider import OpenAIProvider
from agentos.providers.registry import resolve_model
from agentos.providers.retry import RetryPolicy

pytestmark = pytest.mark.usefixtures("allow_real_providers")

FIXTURES = Path(__file__).parent / "fixtures" / "llama_cpp_python"
RECORDED: dict[str, Any] = json.loads((FIXTURES / "responses.json").read_text())
MODEL = "qwen2.5-coder-0.5b"


class StandIn(BaseHTTPRequestHandler):
    """Answers as the recorded server did: its models list, 404 for /props, and for a chat request over `window`
    (its size in tokens taken as a quarter of its characters) an empty stream, or without streaming the 400."""

    protocol_version = "HTTP/1.1"
    window = 2048
    probe_fits = False  # a server whose window is larger than the probe
    seen: list[dict[str, Any]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        recorded = RECORDED["models"] if self.path == "/v1/models" else RECORDED["props"]
        self._send(recorded["status"], json.dumps(recorded["body"]).encode())

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        tokens = len(json.dumps([body["messages"], body.get("tools")])) // 4
        self.seen.append({**body, "tokens": tokens, "messages": len(body["messages"])})
        if tokens >= self.window and not (self.probe_fits and body.get("max_tokens") == 1):
            if body.get("stream"):  # as recorded: the 200 and the stream's headers, then the body's end at once
                self.send_response(200)
                self.send_header("content-type", RECORDED["overflow_streamed"]["content_type"])
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                time.sleep(0.3)  # then it closes the connection it said it would keep, with the next request unread
                self.close_connection = True
                return
            error = json.loads(json.dumps(RECORDED["overflow_unstreamed"]["body"]))
            asked = tokens + (body.get("max_tokens") or 0)
            error["error"]["message"] = (f"This model's maximum context length is {self.window} tokens. However, you "
                                         f"requested {asked} tokens ({tokens} in the messages, {body.get('max_tokens')} "
                                         f"in the completion). Please reduce the length of the messages or completion.")
            self._send(400, json.dumps(error).encode())
            return
        chunk = {"id": "chatcmpl-1", "model": MODEL, "created": 1796462709, "object": "chat.completion.chunk"}
        if not body.get("stream"):
            self._send(200, json.dumps({**chunk, "object": "chat.completion", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "Noted."}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": tokens, "completion_tokens": 2, "total_tokens": tokens + 2}}).encode())
            return
        events = [{"role": "assistant"}, {"content": "Noted"}, {"content": "."}, {}]
        sse = b"".join(b"data: " + json.dumps({**chunk, "choices": [
            {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None if delta else "stop"}]}).encode()
            + b"\r\n\r\n" for delta in events) + b"data: [DONE]\r\n\r\n"
        self._send(200, sse, "text/event-stream; charset=utf-8")


@pytest.fixture
def server() -> Iterator[type[StandIn]]:
    served_window.forget()
    handler = type("Server", (StandIn,), {"seen": [], "window": 2048, "probe_fits": False})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    handler.url = f"http://127.0.0.1:{httpd.server_port}/v1"  # type: ignore[attr-defined]
    yield handler
    httpd.shutdown()
    served_window.forget()


def no_sleep() -> RetryPolicy:
    return RetryPolicy(max_retries=3, base_delay=0.0, jitter=0.0, sleep=lambda seconds: None)


def test_the_recorded_server_states_no_window_and_refuses_a_longer_probe_naming_it() -> None:
    assert RECORDED["props"]["status"] == 404
    assert served_window.from_models_list(RECORDED["models"]["body"], MODEL, single=True) is None
    assert served_window.is_llama_cpp_python(RECORDED["models"]["body"])
    assert not served_window.is_llama_cpp_python({"data": [{"id": "m", "owned_by": "llamacpp", "meta": {"n_ctx": 1}}]})
    assert served_window.window_in_error(RECORDED["probe"]["body"]["error"]["message"]) == 2048
    assert served_window.window_in_error(RECORDED["overflow_unstreamed"]["body"]["error"]["message"]) == 2048
    assert served_window.window_in_error("Requested tokens (2099) exceed context window of 2048") == 2048


def test_its_window_is_learnt_with_one_probe_and_kept_for_the_process(server: type[StandIn]) -> None:
    spec = f"llamacpp/{MODEL}@{server.url}"  # type: ignore[attr-defined]
    provider = resolve_model(spec)
    assert provider.context_window == 2048  # not the model catalogue's 32,768
    assert provider.window_source == "served by llama-cpp-python (learnt with a probe request)"  # type: ignore[attr-defined]
    [probe] = server.seen
    assert probe["max_tokens"] == 1 and probe["stream"] is False and probe["tokens"] > 131_072 // 2
    assert resolve_model(spec).context_window == 2048 and len(server.seen) == 1  # asked once per process
    agent = Agent.create("sam", model=spec, provider=provider)
    assert agent.window == 2048 and agent.window_source.startswith("served by llama-cpp-python")
    assert agent.output_cap() == 512  # a quarter of the served window, not of the catalogue's


def test_a_window_it_does_not_name_is_warned_about(server: type[StandIn]) -> None:
    server.probe_fits = True
    spec = f"llamacpp/{MODEL}@{server.url}"  # type: ignore[attr-defined]
    provider = resolve_model(spec)
    assert provider.context_window == 32768 and provider.window_source == "model catalogue"  # type: ignore[attr-defined]
    with pytest.warns(WindowWarning, match=r"could not learn the context window qwen2.5-coder-0.5b is served with: "
                                           r"llama-cpp-python's server states its window nowhere.*assumes the model "
                                           r"catalogue's 32,768 tokens.*--window N"):
        Agent.create("sam", model=spec, provider=provider)


def test_a_busy_llama_cpp_server_that_cannot_be_asked_is_warned_about() -> None:
    import httpx2

    api = MockAPI(httpx2.ReadTimeout("busy"), httpx2.ReadTimeout("busy"))
    provider = resolve_model("llamacpp/m@http://127.0.0.1:18080/v1", http_client=api.client())
    assert "did not answer within 1 s (busy with another request?)" in provider.window_warning  # type: ignore[attr-defined]


def test_an_empty_stream_is_asked_again_without_streaming_and_read_as_an_overflow(server: type[StandIn]) -> None:
    provider = OpenAIProvider(MODEL, family="llamacpp", base_url=server.url, retry=no_sleep())  # type: ignore[attr-defined]
    assert provider.context_window == 32768  # not asked: as when the window was not learnt
    long = ModelRequest("S", "", [Message.user("word " * 2000)], max_output_tokens=512)
    with pytest.raises(ContextOverflowError, match="maximum context length is 2048 tokens"):
        list(provider.stream(long))
    assert [r["stream"] for r in server.seen] == [True, False]  # no retries of a "transient" failure
    assert provider.context_window == 2048
    assert provider.window_source == "served by the server (learnt from its refusal of a request too long)"
    short = complete(provider, ModelRequest("S", "", [Message.user("hi")], max_output_tokens=512))
    assert short.text == "Noted." and short.stop_reason == "end_turn"


def test_a_turn_over_the_window_is_compacted_and_answered(server: type[StandIn]) -> None:
    server.window = 10**9
    provider = OpenAIProvider(MODEL, family="llamacpp", base_url=server.url, retry=no_sleep())  # type: ignore[attr-defined]
    agent = Agent.create("sam", model=f"llamacpp/{MODEL}@{server.url}", provider=provider,  # type: ignore[attr-defined]
                         settings=AgentSettings(context_window=32768))  # a window set larger than served
    first = list(agent.turn("first " * 100))
    assert isinstance(first[-1], TurnFinished)
    server.window = server.seen[-1]["tokens"] + 250
    assert isinstance(list(agent.turn("second " * 100))[-1], TurnFinished)
    events = list(agent.turn("third " * 100))
    assert isinstance(events[-1], TurnFinished), events[-1]
    assert not any(isinstance(e, TurnFailed) for e in events)
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert any("rejected the request as too long; compacting" in text for text in notices)
    assert any(isinstance(e, MessagesEvicted) and e.count > 0 for e in events)
    assert provider.context_window == server.window


def test_tools_go_with_tool_choice_auto_but_not_to_vllm() -> None:
    api = MockAPI()
    request = ModelRequest("S", "", [Message.user("hi")], tools=[get_weather])
    for family, expected in (("llamacpp", "auto"), ("openai", "auto"), ("ollama", "auto"), ("vllm", None),
                             ("openai-compatible", None)):
        provider = OpenAIProvider("m", family=family, api_key="k", base_url="http://mock/v1", http_client=api.client())
        assert json.loads(provider.request_body(request)).get("tool_choice") == expected, family
        assert provider.request_params(request).get("tool_choice") == expected, family
    plain = OpenAIProvider("m", family="llamacpp", base_url="http://mock/v1", http_client=api.client())
    assert "tool_choice" not in json.loads(plain.request_body(ModelRequest("S", "", [Message.user("hi")])))


def test_a_reply_cut_by_the_full_window_is_not_called_an_output_limit() -> None:
    recorded = (FIXTURES / "window_full.sse").read_bytes()  # 160 tokens, then "length": the 2,048 were full
    for cap, reason in ((512, "window_full"), (160, "max_tokens")):
        api = MockAPI(sse_response(recorded))
        provider = OpenAIProvider(MODEL, family="llamacpp", base_url="http://mock/v1", http_client=api.client())
        events = list(provider.stream(ModelRequest("S", "", [Message.user("count")], max_output_tokens=cap)))
        assert events[-1] == StreamDone(reason), cap
    api = MockAPI(sse_response(recorded))
    provider = OpenAIProvider(MODEL, family="llamacpp", base_url="http://mock/v1", http_client=api.client())
    agent = Agent.create("counting", provider=provider, settings=AgentSettings(max_output_tokens=512))
    [cut] = [e for e in agent.turn("count") if isinstance(e, ReplyIncomplete)]
    assert (cut.reason, cut.detail) == ("window_full", "the reply was cut off: the conversation filled the model's "
                                                       "context window")


def test_an_empty_stream_asked_again_into_an_error_page_is_still_no_reply() -> None:
    api = MockAPI(*[sse_response(b""), json_response(200, {"error": {"message": "upstream failed"}})] * 2)
    provider = OpenAIProvider(MODEL, family="llamacpp", base_url="http://mock/v1", http_client=api.client(),
                              retry=RetryPolicy(max_retries=1, base_delay=0.0, jitter=0.0, sleep=lambda s: None))
    with pytest.raises(IncompleteStreamError, match="sent no reply"):
        list(provider.stream(ModelRequest("S", "", [Message.user("hi")])))
    assert [json.loads(r.content)["stream"] for r in api.requests] == [True, False, True, False]


def test_show_gives_the_window_learnt_from_llama_cpp_python(server: type[StandIn],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from agentos.cli import main

    assert main(["new", "sam", "--model", f"llamacpp/{MODEL}@{server.url}"]) == 0  # type: ignore[attr-defined]
    capsys.readouterr()
    assert main(["show", "sam"]) == 0
    assert "window 2,048 tokens (served by llama-cpp-python (learnt with a probe request))" in capsys.readouterr().out
