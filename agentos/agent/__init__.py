"""The agent: a facade (`agent.py`) over its session (storage life), its turns (`turn.py`), its model roles and the
requests it sends (`requests.py`), with the one owner of its mutable state (`turn_state.py`)."""
