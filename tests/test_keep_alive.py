"""A finished OpenAI stream leaves its connection open for the next call, and a server slow to end the body
never holds up the reply."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from mock_api import oa_text_reply

from agentos.messages import Message
from agentos.providers.base import ModelRequest, complete
from agentos.providers.openai_provider import OpenAIProvider

pytestmark = pytest.mark.usefixtures("allow_real_providers")


class LocalServer(ThreadingHTTPServer):
    """Answers every POST with one streamed reply, in chunked encoding as real servers do; counts connections.
    With `hold`, the body's end is sent only once `release` is set."""

    daemon_threads = True

    def __init__(self, hold: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.connections = 0
        self.hold = hold
        self.release = threading.Event()
        self.held = threading.Event()
        self.ended = threading.Event()  # a held body was ended


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LocalServer

    def setup(self) -> None:
        super().setup()
        self.server.connections += 1

    def do_POST(self) -> None:  # noqa: N802 - the http.server name
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        payload = oa_text_reply("hello")
        self.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
        self.wfile.flush()
        if self.server.hold:
            self.server.held.set()
            self.server.release.wait(30)
            self.server.ended.set()
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serving(hold: bool = False) -> Iterator[LocalServer]:
    server = LocalServer(hold)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.release.set()
        server.shutdown()
        server.server_close()


def provider_for(server: LocalServer) -> OpenAIProvider:
    return OpenAIProvider("local", family="openai-compatible", base_url=f"http://127.0.0.1:{server.server_address[1]}/v1")


def request() -> ModelRequest:
    return ModelRequest("static", "dynamic", [Message.user("hi")])


def test_calls_share_one_connection() -> None:
    with serving() as server:
        provider = provider_for(server)
        texts = [complete(provider, request()).text for _ in range(4)]
    assert texts == ["hello"] * 4
    assert server.connections == 1


def test_a_server_that_does_not_end_the_body_still_gets_the_reply_at_once() -> None:
    with serving(hold=True) as server:
        provider = provider_for(server)
        reply = complete(provider, request())
        still_holding = server.held.is_set() and not server.ended.is_set()
        server.release.set()
        again = complete(provider, request())  # on a new connection, as the first could not be kept
    assert reply.text == "hello" and still_holding
    assert again.text == "hello"


def test_providers_of_different_agents_share_the_connection_pool() -> None:
    with serving() as server:
        first, second = provider_for(server), provider_for(server)
        texts = [complete(provider, request()).text for provider in (first, second, first, second)]
    assert texts == ["hello"] * 4
    assert server.connections == 1
