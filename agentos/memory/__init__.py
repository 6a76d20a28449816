"""Memory tiers behind one interface (`tier.py`): recall and archival, their search and embedders."""
