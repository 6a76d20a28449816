"""Memory tiers: core blocks (always in context); recall and archival live in storage."""
