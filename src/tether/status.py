"""Terminal statuses: how a run ended.

Seed 004 section 11.5 lists the business endings (submitted, succeeded,
rejected, needs_human, failed, unknown, step_limit); the run loop adds its own
(completed, awaiting_user, budget_exceeded, loop_aborted, error); a record that
only saw an agent's tool calls (an MCP gateway window) ends ``ended``.
"""

from __future__ import annotations

from enum import StrEnum


class TerminalStatus(StrEnum):
    COMPLETED = "completed"            # the agent gave a final answer
    AWAITING_USER = "awaiting_user"    # the agent asked the user and nobody answered
    SUBMITTED = "submitted"            # handed to an external system, outcome pending
    SUCCEEDED = "succeeded"            # the external effect is confirmed done
    REJECTED = "rejected"              # a business rule said no
    NEEDS_HUMAN = "needs_human"        # escalated to a person
    FAILED = "failed"                  # a technical failure the agent reported
    UNKNOWN = "unknown"                # an external side effect's state is unknown
    STEP_LIMIT = "step_limit"          # the step cap was reached
    BUDGET_EXCEEDED = "budget_exceeded"
    LOOP_ABORTED = "loop_aborted"
    ERROR = "error"                    # the run itself crashed (model error, bug)
    PARTIAL = "partial"                # answered, but the goal's acceptance evidence is missing
    INVENTED_COMPLETION = "invented_completion"  # the reply claims what no tool result supports
    ENDED = "ended"                    # the record stopped with no outcome to judge: tool calls seen, no final
                                       # answer (an MCP gateway window closed by an idle gap or the client leaving)

    @property
    def is_clean_ending(self) -> bool:
        """Endings where the agent itself chose to stop and said something."""
        return self in {
            TerminalStatus.COMPLETED,
            TerminalStatus.AWAITING_USER,
            TerminalStatus.SUBMITTED,
            TerminalStatus.SUCCEEDED,
            TerminalStatus.REJECTED,
        }
