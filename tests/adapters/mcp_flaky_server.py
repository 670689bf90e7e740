"""A small real MCP server (stdio) for the proxy tests: one tool that always
fails the same way, one that works."""

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("flaky-reports")


@server.tool()
def fetch_report(report_id: str) -> str:
    """Fetch a report by id."""
    raise ToolError(f"report {report_id}: access denied for this account")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    server.run()
