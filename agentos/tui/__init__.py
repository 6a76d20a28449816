"""The Textual TUI behind `agentos tui NAME`; it consumes the core's events and nothing imports it."""
