"""Fact memory: facts consolidated from the conversation in the background, never destroyed (superseded with
validity intervals): the tier, its rows and retention, consolidation, its extraction prompts and its settings."""
