"""A stdio MCP server with a large tool list (200 tools) for the tool_search tests.

196 generated tools ``{area}_{verb}_{thing}`` answer ``"{tool name}: {text}"``; four
hand-written ones do real work the tests can check: ``convert_currency``,
``count_words``, ``reverse_text`` and ``invoice_total``.
"""

from __future__ import annotations

import itertools

from mcp.server.fastmcp import FastMCP

server = FastMCP("deerflow-large")

AREAS = ("crm", "calendar", "storage", "chat", "wiki", "deploy", "monitor")
VERBS = ("create", "list", "update", "delete", "archive", "export", "import")
THINGS = ("record", "entry", "item", "report")
RATES = {"EUR": 0.5, "GBP": 0.25, "JPY": 100.0}


def _generated(name: str, area: str, verb: str, thing: str):
    def tool(text: str) -> str:
        return f"{name}: {text}"

    tool.__name__ = name
    tool.__doc__ = f"{verb.capitalize()} a {thing} in the {area} system."
    return tool


for area, verb, thing in itertools.islice(itertools.product(AREAS, VERBS, THINGS), 196):
    name = f"{area}_{verb}_{thing}"
    server.add_tool(_generated(name, area, verb, thing), name=name)


@server.tool()
def convert_currency(amount: float, to: str) -> str:
    """Convert an amount of US dollars into another currency (EUR, GBP or JPY) at a fixed exchange rate."""
    return f"{amount} USD = {amount * RATES[to.upper()]:g} {to.upper()}"


@server.tool()
def count_words(text: str) -> str:
    """Count the words of a text."""
    return str(len(text.split()))


@server.tool()
def reverse_text(text: str) -> str:
    """Reverse the characters of a text."""
    return text[::-1]


@server.tool()
def invoice_total(amounts: list[float]) -> str:
    """Add up the line amounts of an invoice."""
    return f"{sum(amounts):g}"


if __name__ == "__main__":
    server.run("stdio")
