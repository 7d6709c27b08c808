"""Outbound requests the gateway makes for a capability or an MCP server: the URL guard that decides where one
may go, and the HTTP client that holds every connection to that decision."""
