"""Tools from MCP servers: how an agent reaches a server (`servers`), which of its tools can be offered (`offer`),
one running server (`connection`), their results as text (`content`), and an agent's servers as tools (`toolbox`)."""
