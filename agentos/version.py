"""The version of agentos, in one place: the CLI, exports and agent files name it."""

__version__ = "0.1.0"
