"""An agent's memory as an MCP server: how it reaches the agent without a second writer (`gate`), the tools it
offers (`tools`), its resources (`resources`) and the server itself (`server`)."""
