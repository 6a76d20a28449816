"""Memory tiers behind one interface (`tier.py`, one agent's set in `tiers.py`): recall, archival and facts (a
package of its own), what recall ranks with (the entity graph, exchanges), and background news (`news.py`)."""
