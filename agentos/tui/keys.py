"""The TUI's keys: the list F1 shows (every action has a key), and the app's keys for the conversation: PageUp,
PageDown, Ctrl-Home and Ctrl-End scroll it wherever the focus is on the main screen, and F4 moves onto its
expandable lines (tool calls, the summary marker). AgentApp has them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.binding import Binding

from agentos.commands.slash import help_text

if TYPE_CHECKING:
    from agentos.tui.conversation import Conversation

KEYS = """Keys:
  Enter            send the message (or run the /command)
  Escape           cancel the reply in progress (also during a retry's wait)
  PageUp/PageDown  scroll the conversation (from anywhere on the main screen)
  Ctrl-Home        the top of the conversation
  Ctrl-End         its bottom (new text is followed again)
  F4               onto the conversation's tool calls and summary marker: Up/Down choose
                   one, Enter or Space opens or closes it, Home/End the first or last;
                   Escape or F4 goes back to the input
  Tab              into the memory pane (Shift-Tab back): on a block, h shows its history,
                   e edits it, Up/Down scroll the pane; closing the history or the editor
                   puts the focus back on the block
  Ctrl-S           in a block's editor: save (logged as your edit); Escape cancels
  Ctrl-P           command palette: switch agent, search memory, export, rewind, edit a block…
  F1               this help (Up/Down and PageUp/PageDown scroll it; Escape closes it)
  F2               switch agent, or create one
  F3               show or hide the memory pane
  Ctrl-C           quit (the agent is saved after every step)"""
HELP = help_text(KEYS)


class ConversationKeys(App[int]):
    """Scrolling the conversation, and choosing among its expandable lines, from the keyboard."""

    BINDINGS = [  # F4 is the app's, after F3 in the footer
        Binding("pageup", "scroll_conversation('page_up')", "Page up", show=False, priority=True),
        Binding("pagedown", "scroll_conversation('page_down')", "Page down", show=False, priority=True),
        Binding("ctrl+home", "scroll_conversation('home')", "Top", show=False, priority=True),
        Binding("ctrl+end", "scroll_conversation('end')", "Bottom", show=False, priority=True),
    ]

    if TYPE_CHECKING:  # the app's own

        @property
        def conversation(self) -> Conversation: ...

        def focus_input(self, *_: Any) -> None: ...

    def action_browse(self) -> None:
        """F4: onto the conversation's expandable lines (the newest first); again, back to the input."""
        if self.conversation.browsing:
            self.focus_input()
        elif not self.conversation.browse():
            self.notify("No tool call or summary to open yet.", timeout=3)

    def action_back_to_input(self) -> None:
        self.focus_input()

    def action_scroll_conversation(self, where: str) -> None:
        conversation = self.conversation
        scroll = {"page_up": conversation.scroll_page_up, "page_down": conversation.scroll_page_down,
                  "home": conversation.scroll_home}.get(where, conversation.scroll_end)
        scroll(animate=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The conversation's keys work on the main screen only (a dialog keeps PageUp and the rest)."""
        if action in ("scroll_conversation", "browse"):
            return self.screen is self.screen_stack[0]
        return True
