"""The loop guard's question_repeat: questions to the user asked again
(methods of :class:`~tether.guards.loop.LoopGuard`, which holds the state they read)."""

from __future__ import annotations

from typing import Any
from .. import i18n
from ..events import AgentMessage, UserMessage
from ..messages import DecisionKind
from . import _questions as Q
from ._evidence import asks_for_information
from ._base import GuardContext, Intervention
from ._loop_common import _last_decision


class _QuestionRules:
    """Mixed into :class:`~tether.guards.loop.LoopGuard`."""

    def after_model(self, ctx: GuardContext, response: Any) -> Intervention | None:
        self._in_after = False
        events = ctx.trajectory.events
        if len(events) > self.heard + 1:
            self._heard(events)             # a reply from the user since the last decision is news
        decision = getattr(response, "decision", None) or _last_decision(ctx)
        if decision is None or decision.kind != DecisionKind.QUESTION or "question_repeat" not in self.config.rules:
            return None
        self._read_questions(ctx)
        self._language(ctx)
        words = Q.content(decision.text)
        cfg = self.config
        similar = [q for q in self.asked if Q.overlap(words, frozenset(q[0])) >= cfg.question_overlap]
        refused = sum(1 for q in similar if q[1])
        if refused >= cfg.max_question_repeats:
            why, n, limit = "refused or left unanswered", refused, cfg.max_question_repeats
        elif len(similar) >= cfg.max_question_asks:
            why, n, limit = "asked and answered", len(similar), cfg.max_question_asks
        elif any(q[1] is False for q in similar) and asks_for_information(decision.text):
            # a question for a piece of information the user already gave (not a yes/no offer made again after
            # new results: "want me to check again?")
            why, n, limit = "asked and answered", len(similar), 1
        elif self.told:
            # the user already said they had answered, and the agent asks for information again
            why, n, limit = "answered (the user said so)", len(self.asked), 0
        elif similar and self.reasked >= cfg.max_reasks:
            why, n, limit = "answered (and an answered question was already asked again)", len(similar), \
                cfg.max_reasks
        else:
            return None
        message = (f"this question (or a rewording of it) was already {why} {n} time(s); limit {limit}. "
                   "Do not ask it again: use the answers you have, offer a sensible default and go on with it, "
                   "or stop and explain what cannot be done without this information and what the user can do "
                   "instead.")
        self._say("loop.question_repeat", reason=i18n.QUESTION_REASONS.get(self._lang or "", {}).get(why, why),
                  count=n, limit=limit)
        return self._ladder("question_repeat", "question", message, {"count": n, "limit": limit, "reason": why})

    def _heard(self, events: list) -> None:
        """The user answered since the last call (not a refusal): a call made again after
        it is not a repeat ("check again this afternoon", then the same lookup). Only the
        last few events are read: a reply is news to the calls right after it."""
        n = len(events)
        start = max(self.heard + 1, n - 8)
        for k in range(start, n):
            event = events[k]
            if type(event) is UserMessage and not Q.is_refusal(event.content):
                self.progressed += 1
                if not self._asked_again(events, k):
                    self.replied += 1       # a go-ahead: no stop, no duplicate on the calls before it
                break
        self.heard = n - 1

    def _asked_again(self, events: list, k: int) -> bool:
        """The question a reply answers repeats one asked before (``Delete a.txt?`` ... ``Delete a.txt
        now?``): the answer is no new go-ahead, only the old one again. Read only when the user replies,
        over the last 200 events."""
        low = max(0, k - 200)
        for j in range(k - 1, low - 1, -1):
            event = events[j]
            if isinstance(event, AgentMessage) and event.kind == "question":
                words = Q.content(event.content)
                return any(isinstance(e, AgentMessage) and e.kind == "question"
                           and Q.overlap(words, Q.content(e.content)) >= self.config.question_overlap
                           for e in events[low:j])
        return False

    def _read_questions(self, ctx: GuardContext) -> None:
        """Fold the questions to the user and their replies since the last look."""
        events = ctx.trajectory.events
        for event in events[self.scanned:]:
            if isinstance(event, AgentMessage) and event.kind == "question":
                if self.asked and self.asked[-1][1] is None:
                    self.asked[-1][1] = True        # asked again before any reply: left unanswered
                words = Q.content(event.content)
                if any(Q.overlap(words, frozenset(q[0])) >= self.config.question_overlap for q in self.asked):
                    self.reasked += 1               # a question asked again
                self.asked.append([sorted(words), None])
            elif isinstance(event, UserMessage) and self.asked and self.asked[-1][1] is None:
                self.asked[-1][1] = Q.is_refusal(event.content)
                if Q.said_already(event.content) and not self.told:
                    self.told, self.told_at = 1, len(self.asked) - 1
        self.scanned = len(events)
