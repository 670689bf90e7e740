"""The loop guard's duplicate_action and past_end: side effects made again, pages asked for past the end
(methods of :class:`~tether.guards.loop.LoopGuard`, which holds the state they read)."""

from __future__ import annotations

from rapidfuzz.fuzz import token_sort_ratio as _similarity
from ..messages import ToolCallRequest
from ._evidence import carries_idempotency_key, idempotency_key
from ._base import Intervention
import json

from ._calls import split_free, names_resource, numbered_copy, token_copy, tokens_of, volatile_pair
from ._loop_common import _only_body_differs, _TEMPLATE_FILL, _MIN_CONTENT, _DIGITS_RE, _bound, _ordinal, _short


class _EffectRules:
    """Mixed into :class:`~tether.guards.loop.LoopGuard`."""

    def _fresh_id(self, call: ToolCallRequest, sig: str):
        """The same call answered the same way under a fresh id: it made another one."""
        self._say("loop.duplicate_action", tool=call.name, args=_short(call.arguments), count=1)
        return ("duplicate_action", sig,
                f"{call.name} ({_short(call.arguments)}) was called again with the same arguments and answered the "
                "same way under a new id: it made another one (another task, record or message). Use the one "
                "already made; if it must be done again, say why first.",
                {"count": 2, "limit": 1, "tool": call.name})

    def _duplicate_action(self, call: ToolCallRequest, sig: str):
        """A side-effecting call that already succeeded with these arguments: doing it
        again makes another ticket, message or charge, whatever id it returns (unless it
        carries an idempotency key: then the server does it once)."""
        if carries_idempotency_key(call.arguments):
            # the server does it once, if the key is the one sent before: a fresh key on the same content
            # (the last success of the tool) is a new request
            last = self.sent.get(call.name)
            if last is None or len(last) < 6 or last[5] is None or last[0] != self._pending[1][3] \
                    or last[5] == idempotency_key(call.arguments):
                return None
        done = self.acted.get(sig, 0)
        limit = self.config.max_action_repeats
        if done < limit or self.acted_replied.get(sig, 0) != self.replied:
            return None                     # not done yet; or done, then the user answered (not a refusal): the
                                            # message says "if it must be done again, say why first", and it was said
        self._say("loop.duplicate_action", tool=call.name, args=_short(call.arguments), count=done)
        return ("duplicate_action", sig,
                f"{call.name} ({_short(call.arguments)}) already succeeded {done} time(s) with these arguments; "
                "calling it again repeats the side effect (another record, message or charge). Use the result "
                "you have; if it must be done again, say why first.",
                {"count": done + 1, "limit": limit, "tool": call.name})

    def _resend(self, call: ToolCallRequest, described: tuple):
        """The last success of this side-effecting tool sent the same thing: the
        same resources named, and either free text that only rewords it (at least
        ``resend_similarity`` % alike, the same numbers in it, both at least
        ``_MIN_CONTENT`` characters: "Bug A" / "Bug B" are two things) or other arguments
        that differ only in a counter (``task_progress: "(2/1)"``) next to at least
        ``_MIN_CONTENT`` characters of identical content. A re-sent message or a
        rewrite of the same file is another side effect, not new work."""
        last = self.sent[call.name]
        prev_parts, prev_free, prev_rest = last[:3]
        parts = described[3]
        free, rest = split_free(parts)
        if len(last) > 4 and last[3] >= self.config.max_sends_in_a_row - 1 and last[4] == self.count - 1 \
                and _only_body_differs(prev_parts, parts) and _similarity(free, prev_free) < _TEMPLATE_FILL:
            # a message in other words; one template filled with other values (a notice per service) is a batch
            n = last[3] + 1
            self._say("loop.duplicate_action", tool=call.name, args=_short(call.arguments), count=last[3])
            return ("duplicate_action", f"~sends:{call.name}",
                    f"{call.name} ({_short(call.arguments)}) would be the {_ordinal(n)} message in a row to the same "
                    "place with nothing read or received between them; limit "
                    f"{self.config.max_sends_in_a_row - 1}. Wait for a reply or go on with the task instead of "
                    "sending more.",
                    {"count": n, "limit": self.config.max_sends_in_a_row - 1, "tool": call.name})
        if rest == prev_rest:
            if min(len(free), len(prev_free)) < _MIN_CONTENT or free == prev_free \
                    or _DIGITS_RE.findall(free) != _DIGITS_RE.findall(prev_free) \
                    or _similarity(free, prev_free) < self.config.resend_similarity:
                return None
        elif free != prev_free or prev_parts.keys() != parts.keys():
            return None
        else:
            differ = [k for k in parts if parts[k] != prev_parts[k]]
            same = sum(len(parts[k]) for k in parts if parts[k] == prev_parts[k])
            if same < _MIN_CONTENT or not all((not names_resource(k) and volatile_pair(prev_parts[k], parts[k]))
                                              or self._made_up(prev_parts[k], parts[k]) for k in differ):
                # a name or key made unique anew (a random suffix, a fresh request key) on the same content is
                # the same thing sent again
                return None
        self._say("loop.duplicate_action", tool=call.name, args=_short(call.arguments), count=1)
        return ("duplicate_action", f"resend:{call.name}",
                f"{call.name} ({_short(call.arguments)}) sends what its last call already sent, in other words or "
                "with only a counter changed: another copy, not new work. Use the one already sent.",
                {"count": 2, "limit": 1, "tool": call.name})

    def _created(self, tool: str, parts: dict) -> None:
        """Remember the last successful create of a tool (its arguments) and how
        many numbered copies of it followed."""
        last = self.created.get(tool)
        copy = last is not None and self._copy_of(last[0], parts)
        self.created[tool] = [dict(parts), last[1] + 1 if copy else 1]
        _bound(self.created)

    def _made_up(self, before: str, now: str) -> bool:
        """Two values that differ only in high-entropy tokens, the new ones read in no answer kept:
        made up for this call (a random suffix, a fresh request key), not taken from a listing
        (a customer id read from a list names another customer)."""
        if not token_copy(before, now):
            return False
        if self._restored and len(self._answers) < 16:
            return False        # restored from a checkpoint: the answers read before it, where the token may be, are gone
        recent = list(self._answers.values())[-16:]       # the answers read last (bounded work on a rare path)
        read = json.dumps(recent, ensure_ascii=False, default=str).casefold()
        return not any(t in read for t in tokens_of(now))

    def _made_up_call(self, before: dict, parts: dict) -> bool:
        """Two calls of one tool whose arguments differ only in tokens made up for each (see
        :meth:`_made_up`), next to at least ``_MIN_CONTENT`` characters of the same content."""
        if before.keys() != parts.keys() or before == parts:
            return False
        differ = [k for k in parts if parts[k] != before[k]]
        return sum(len(parts[k]) for k in parts if k not in differ) >= _MIN_CONTENT \
            and all(self._made_up(before[k], parts[k]) for k in differ)

    def _copy_of(self, before: dict, parts: dict) -> bool:
        """The same content (at least ``_MIN_CONTENT`` characters of identical
        arguments) under a name numbered anew."""
        if before.keys() != parts.keys():
            return False
        differ = [k for k in parts if before[k] != parts[k]]
        same = sum(len(parts[k]) for k in parts if k not in differ)
        return bool(differ) and same >= _MIN_CONTENT and all(numbered_copy(before[k], parts[k])
                                                             or self._made_up(before[k], parts[k]) for k in differ)

    def _duplicate_create(self, call: ToolCallRequest, described: tuple):
        """A create whose content already made an object, under a name that differs
        only in a number (``changes/1.5.46 (1).md``, branch ``updates-2``): another
        copy of the same thing, whatever id comes back."""
        last = self.created.get(call.name)
        if last is None or not self._copy_of(last[0], described[3]):
            return None
        self._say("loop.duplicate_action", tool=call.name, args=_short(call.arguments), count=last[1])
        return ("duplicate_action", f"create:{call.name}",
                f"{call.name} ({_short(call.arguments)}) creates the same content again ({_ordinal(last[1] + 1)} "
                "time), only its name numbered anew: another copy, not new work. Use the one already created.",
                {"count": last[1] + 1, "limit": 1, "tool": call.name})

    def _past_end(self, call: ToolCallRequest, described: tuple):
        """Another page of a listing that already said it ended (``has_more: false``,
        an empty page) and answered the pages after that with nothing."""
        sig, skey = described[0], described[2]
        if sig == skey:
            return None                     # no paging argument: not a page request
        listing = self.series.get(skey)
        limit = self.config.max_past_end
        if listing is None or not listing[0] or listing[1] < limit:
            return None
        self._say("loop.past_end", tool=call.name, args=_short(call.arguments), count=listing[1])
        return ("past_end", skey,
                f"{call.name} ({_short(call.arguments)}): the listing already ended (no more pages) and "
                f"{listing[1]} page(s) requested after its end returned nothing new; limit {limit}. "
                "The results are complete: use what the earlier pages returned.",
                {"count": listing[1] + 1, "limit": limit, "tool": call.name})

    def _past_end_now(self, call: ToolCallRequest, listing: list) -> Intervention:
        n = listing[2]
        self._say("loop.past_end", tool=call.name, args=_short(call.arguments), count=n)
        found = ("past_end", call.name,
                 f"{call.name} ({_short(call.arguments)}): {n} empty pages in a row, each promising more; "
                 f"limit {self.config.max_empty_pages - 1}. The listing has nothing more to give: use what the "
                 "earlier pages returned.",
                 {"count": n, "limit": self.config.max_empty_pages - 1, "tool": call.name})
        return self._ladder(*found)
