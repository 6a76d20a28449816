"""The agent: its state, the turn loop and the context it sends to the model."""
