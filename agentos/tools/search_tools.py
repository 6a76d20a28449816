"""The recall and archival tools: conversation_search, archival_insert, archival_search."""

from __future__ import annotations

from agentos.memory.search import check_page, date_range, format_page
from agentos.tools.decorator import Tool, ToolContext, tool


@tool
def conversation_search(
    query: str,
    ctx: ToolContext,
    page: int = 0,
    start_date: str | None = None,
    end_date: str | None = None,
    roles: list[str] | None = None,
) -> str:
    """Search your whole past conversation (recall memory), including messages no longer in view.

    Args:
        query: Words or a phrase to look for; leave empty to list messages between the dates.
        page: Which page of results to show, starting at 0.
        start_date: Only messages on or after this date (YYYY-MM-DD or YYYY-MM-DDTHH:MM, UTC).
        end_date: Only messages on or before this date (YYYY-MM-DD or YYYY-MM-DDTHH:MM, UTC).
        roles: Only messages from these roles: "user", "assistant".
    """
    start, end = date_range(start_date, end_date)
    result = ctx.agent.tiers.recall.search(query, page=check_page(page), start=start, end=end, roles=roles)
    return format_page(result, "messages", query)


@tool
def archival_insert(content: str, ctx: ToolContext, tags: list[str] | None = None) -> str:
    """Save text to your archival memory, a long-term store you can search later. Long text is split into passages.

    Args:
        content: The text to remember; self-contained, with names and dates spelled out.
        tags: Optional labels to filter by later, e.g. ["project", "preferences"].
    """
    tiers = ctx.agent.tiers
    done = tiers.archival.insert(content, tags=tags)
    total = tiers.refresh_archival_count()
    if not done.ids:
        return f"Already in archival memory (passage {', '.join(dict.fromkeys(done.duplicates))}); nothing stored twice."
    text = f"Stored {len(done.ids)} passage(s): {', '.join(done.ids)}."
    if done.duplicates:
        text += f" {len(done.duplicates)} part(s) were already stored and were skipped."
    return f"{text} Archival memory now holds {total} passage(s)."


@tool
def archival_search(
    query: str,
    ctx: ToolContext,
    page: int = 0,
    tags: list[str] | None = None,
    start_date: str | None = None,
    end_date: str | None = None,
) -> str:
    """Search your archival memory by words and meaning.

    Args:
        query: What to look for; leave empty to list passages, newest first.
        page: Which page of results to show, starting at 0.
        tags: Only passages carrying any of these tags.
        start_date: Only passages saved on or after this date (YYYY-MM-DD or YYYY-MM-DDTHH:MM, UTC).
        end_date: Only passages saved on or before this date (YYYY-MM-DD or YYYY-MM-DDTHH:MM, UTC).
    """
    start, end = date_range(start_date, end_date)
    result = ctx.agent.tiers.archival.search(query, page=check_page(page), tags=tags, start=start, end=end)
    return format_page(result, "passages", query)


def search_tools() -> list[Tool]:
    """The recall and archival tools every agent has."""
    return [conversation_search, archival_insert, archival_search]
