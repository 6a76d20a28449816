"""A mock HTTP transport for the real OpenAI/Anthropic SDK clients, and builders of their SSE bodies."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any, Union

import httpx2

from agentos.providers.retry import RETRY_TICK
from agentos.tools import tool

Reply = Union[httpx2.Response, BaseException, Callable[[httpx2.Request], httpx2.Response]]
SSE_HEADERS = {"content-type": "text/event-stream"}


class MockAPI:
    """Answers requests from a queue of replies (responses, exceptions to raise, or functions) and records them."""

    def __init__(self, *replies: Reply) -> None:
        self.replies: list[Reply] = list(replies)
        self.requests: list[httpx2.Request] = []

    def add(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if not self.replies:
            raise AssertionError(f"unexpected request #{len(self.requests)} to {request.url}")
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            if isinstance(reply, httpx2.RequestError):
                reply.request = request
            raise reply
        return reply(request) if callable(reply) else reply

    def client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self.handler))

    def body(self, index: int = -1) -> dict[str, Any]:
        """The JSON body of a recorded request."""
        return json.loads(self.requests[index].content)


class Backoffs:
    """A fake `RetryPolicy.sleep` that never sleeps: it records each tick, and adds up the ticks slept between two
    attempts (counted by `attempts()`, e.g. the requests a MockAPI got) into that back-off's wait."""

    def __init__(self, attempts: Callable[[], int]) -> None:
        self.attempts = attempts
        self.ticks: list[tuple[int, float]] = []

    def __call__(self, seconds: float) -> None:
        assert 0 < seconds <= RETRY_TICK, f"slept {seconds} s in one go: a back-off sleeps in ticks"
        self.ticks.append((self.attempts(), seconds))

    @property
    def waits(self) -> list[float]:
        """The whole wait of each back-off, in order."""
        totals: dict[int, float] = {}
        for attempt, seconds in self.ticks:
            totals[attempt] = totals.get(attempt, 0.0) + seconds
        return list(totals.values())


def sse_response(body: bytes | Iterator[bytes] | httpx2.SyncByteStream) -> httpx2.Response:
    if isinstance(body, bytes):
        return httpx2.Response(200, headers=SSE_HEADERS, content=body)
    if isinstance(body, httpx2.SyncByteStream):
        return httpx2.Response(200, headers=SSE_HEADERS, stream=body)
    return httpx2.Response(200, headers=SSE_HEADERS, content=body)


def json_response(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(status, json=body, headers=headers)


class ChunkStream(httpx2.SyncByteStream):
    """A response body sent chunk by chunk; it can raise part-way, or run forever; it records close()."""

    def __init__(self, chunks: list[bytes], *, then: BaseException | None = None, forever: bytes | None = None) -> None:
        self.chunks, self.then, self.forever = chunks, then, forever
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks
        if self.then is not None:
            raise self.then
        while self.forever is not None and not self.closed:
            time.sleep(0.001)
            yield self.forever

    def close(self) -> None:
        self.closed = True


# -- OpenAI Chat Completions: `data: <chunk>` lines, then `data: [DONE]` -------------------------

def oa_event(chunk: dict[str, Any]) -> bytes:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-4.1-mini"}
    return f"data: {json.dumps({**base, **chunk})}\n\n".encode()


def oa_delta(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def oa_tool(index: int | None, *, id: str | None = None, name: str | None = None, args: str = "") -> dict[str, Any]:
    """One tool-call fragment; the first of a call carries id, type and name."""
    fragment: dict[str, Any] = {"function": {"arguments": args}}
    if index is not None:
        fragment["index"] = index
    if id:
        fragment.update(id=id, type="function")
    if name:
        fragment["function"]["name"] = name
    return fragment


def oa_usage(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    """The final chunk that `stream_options.include_usage` adds: no choices, just usage."""
    return {"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                     "total_tokens": prompt + completion,
                                     "prompt_tokens_details": {"cached_tokens": cached}}}


def oa_sse(*chunks: dict[str, Any], done: bool = True) -> bytes:
    return b"".join(oa_event(c) for c in chunks) + (b"data: [DONE]\n\n" if done else b"")


def oa_text_reply(text: str, prompt: int = 50, completion: int = 5) -> bytes:
    return oa_sse(oa_delta({"role": "assistant", "content": ""}), oa_delta({"content": text}),
                  oa_delta({}, "stop"), oa_usage(prompt, completion))


def oa_tool_reply(call_id: str, name: str, arguments: str) -> bytes:
    return oa_sse(oa_delta({"role": "assistant", "content": None, "tool_calls": [oa_tool(0, id=call_id, name=name)]}),
                  oa_delta({"tool_calls": [oa_tool(0, args=arguments)]}), oa_delta({}, "tool_calls"),
                  oa_usage(60, 12))


def oa_error(status: int, message: str, type_: str, code: str | None = None,
             headers: dict[str, str] | None = None) -> httpx2.Response:
    return json_response(status, {"error": {"message": message, "type": type_, "param": None, "code": code}}, headers)


# -- Anthropic Messages: `event: <type>` + `data: <json>` ------------------------------------------

def an_event(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def an_start(input_tokens: int = 20, cache_read: int = 0, cache_write: int = 0) -> dict[str, Any]:
    return {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1,
                  "cache_creation_input_tokens": cache_write, "cache_read_input_tokens": cache_read}}}


def an_text(index: int, *pieces: str) -> list[dict[str, Any]]:
    return [{"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
            *({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}} for p in pieces),
            {"type": "content_block_stop", "index": index}]


def an_tool(index: int, id: str, name: str, *json_pieces: str) -> list[dict[str, Any]]:
    return [{"type": "content_block_start", "index": index,
             "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}},
            *({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": p}}
              for p in json_pieces),
            {"type": "content_block_stop", "index": index}]


def an_end(stop_reason: str | None, output_tokens: int = 15) -> list[dict[str, Any]]:
    return [{"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
             "usage": {"output_tokens": output_tokens}},
            {"type": "message_stop"}]


def an_sse(*events: dict[str, Any] | list[dict[str, Any]]) -> bytes:
    flat: list[dict[str, Any]] = []
    for e in events:
        flat.extend(e if isinstance(e, list) else [e])
    return b"".join(an_event(e) for e in flat)


def an_text_reply(text: str, stop: str = "end_turn") -> bytes:
    return an_sse(an_start(), {"type": "ping"}, an_text(0, text), an_end(stop))


def an_tool_reply(call_id: str, name: str, arguments: str) -> bytes:
    return an_sse(an_start(), an_tool(0, call_id, name, arguments), an_end("tool_use"))


def an_error(status: int, type_: str, message: str, headers: dict[str, str] | None = None) -> httpx2.Response:
    return json_response(status, {"type": "error", "error": {"type": type_, "message": message}}, headers)

@tool
def get_weather(city: str) -> str:
    """Get the weather.

    Args:
        city: The city.
    """
    return f"sunny in {city}"
