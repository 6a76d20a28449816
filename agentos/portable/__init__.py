"""Moving agents in and out: the agentos export file, and Letta Agent Files."""
