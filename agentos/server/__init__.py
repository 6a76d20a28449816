"""`agentos serve`: agents behind an HTTP API (FastAPI on uvicorn), the same event stream as the TUI, over SSE.

Imported only when something is served: the CLI reaches it through `agentos.cli.serve`, lazily."""
