"""The LLM simulated user: any Model, through the Model seam, plays the persona.

Its system prompt renders the persona (goal, facts with the rule "reveal a fact
only when asked about it", refusals, patience); the messages are the
conversation so far from the user's point of view (the agent speaks as
``user``, the simulated user's own lines are ``assistant``, as in tau2-bench).
The reply is the model's decision text. The model ends the conversation with
the stop token (``###STOP###``); ``max_rounds`` and ``patience`` are also
enforced without asking the model. Every reply is checked for persona breaks
(:func:`tether.evals.simulator.persona_break`); a break, a tool call, an empty
reply or a failing model makes the trial a simulator fault.

Each request goes through :func:`tether.runtime.session.side_request`: it is
recorded in the run as a ``model_request`` / ``model_decision`` pair with
``role="user"``, its usage kept apart from the agent's
(``Trajectory.usage("user")``).
"""

from __future__ import annotations

from ..errors import UsageError
from ..events import AgentMessage, Trajectory, UserMessage
from ..messages import Message, Usage
from ..models import Model, ModelRequest
from ..runtime.session import side_request
from .case import Persona
from .simulator import DEFAULT_REFUSAL, PersonaUser, persona_break

STOP_TOKEN = "###STOP###"
# The agent's greeting that opens the conversation from the user's side, so the
# first message the simulator model sees is from the agent (as tau2-bench does).
OPENING = "您好！请问有什么可以帮您？"
_PREFIXES = ("用户：", "用户:", "user:", "User:")


def render_persona(persona: Persona, *, stop_token: str = STOP_TOKEN) -> str:
    """The simulator's system prompt."""
    lines = [
        "你在扮演一位正在和 AI 助手对话的用户。你是用户，不是助手：只以用户的身份、用第一人称简短地回答助手；"
        "不要主动提供帮助，不要说要去搜索或查询，不要自称助手或 AI，不要输出 JSON 或工具调用。",
    ]
    if persona.description:
        lines.append(f"你的人设：{persona.description}")
    if persona.goal:
        lines.append(f"你的目标：{persona.goal}")
    refused = persona.refused_topics
    facts: dict[str, list[str]] = {}
    for key, fact in persona.reveals.items():
        if key not in refused:
            facts.setdefault(fact, []).append(key)
    if facts:
        lines.append("你知道的信息。规则：只有当助手问到某个话题时，才说出对应的那条信息；助手没有问到的信息，不要主动透露。")
        lines += [f"- 问到{'、'.join(f'「{k}」' for k in keys)}时：{fact}" for fact, keys in facts.items()]
    if refused:
        example = (persona.refusal_replies or [DEFAULT_REFUSAL])[0]
        lines.append(f"你拒绝谈论这些话题：{'、'.join(refused)}。被问到时只拒绝（例如「{example}」），绝不透露相关信息。")
    if persona.withheld:
        lines.append("下面这些信息你知道，但无论如何都不能说出来：")
        lines += [f"- {key}：{fact}" for key, fact in persona.withheld.items()]
    if persona.replies:
        lines.append("助手问到其他问题时，你可以这样回答：" + "；".join(f"「{r}」" for r in persona.replies))
    elif persona.default_reply:
        lines.append(f"助手问到其他问题时，你可以这样回答：「{persona.default_reply}」")
    if persona.patience is not None:
        closing = f"（例如「{persona.closing}」）" if persona.closing else ""
        lines.append(f"你的耐心有限：整段对话里你最多回答助手的 {persona.patience} 个问题（包括之前已经回答过的）。"
                     f"之后助手如果还在提问，说一句简短的结束语{closing}，然后输出 {stop_token}。")
    lines.append(f"当你的目标已经达成，或者你不想再继续对话时，在回复末尾输出 {stop_token}。")
    lines.append(f"整段对话最多 {persona.max_rounds} 轮。每次只说一两句话，像真实用户一样。")
    return "\n".join(lines)


def user_view(trajectory: Trajectory, question: str) -> list[Message]:
    """The conversation so far from the user's side: the agent's turns as ``user``,
    the simulated user's own turns as ``assistant``; ends with ``question``."""
    turns: list[tuple[str, str]] = [("user", OPENING)]
    for e in trajectory:
        if isinstance(e, UserMessage):
            turns.append(("assistant", e.content))
        elif isinstance(e, AgentMessage):
            turns.append(("user", e.content))
    if turns[-1] != ("user", question):
        turns.append(("user", question))
    merged: list[Message] = []
    for role, content in turns:
        if merged and merged[-1].role == role:
            merged[-1] = Message(role=role, content=f"{merged[-1].content}\n{content}")
        else:
            merged.append(Message(role=role, content=content))
    return merged


class LLMUser(PersonaUser):
    """A simulated user played by ``model``. One instance serves one run."""

    def __init__(self, persona: Persona, model: Model, *, stop_token: str = STOP_TOKEN):
        super().__init__(persona)
        self.model = model
        self.stop_token = stop_token
        self.system_prompt = render_persona(persona, stop_token=stop_token)
        self.usage = Usage()

    def state(self) -> dict:
        return {**super().state(), "usage": self.usage.model_dump()}

    def load_state(self, state: dict) -> None:
        super().load_state(state)
        if state.get("usage"):
            self.usage = Usage.model_validate(state["usage"])

    async def reply(self, question: str, trajectory: Trajectory) -> str | None:
        if self.closed:
            return None
        ended, line = self._limits(trajectory)
        if ended:
            return line
        request = ModelRequest(messages=[Message(role="system", content=self.system_prompt),
                                         *user_view(trajectory, question)], tools=[], step=self.asked)
        try:
            # recorded as events of the run (role "user"), so the simulator's cost is kept apart from the agent's
            response = await side_request(self.model, request, role="user")
        except UsageError:
            raise
        except Exception as exc:   # a failing simulator is its fault, not the agent's
            self._broke(f"simulator_error: {type(exc).__name__}: {exc}")
            return None
        self.usage = self.usage + response.usage
        decision = response.decision
        if decision.tool_calls:
            self._broke(f"persona_break: spoke as the assistant: called {', '.join(c.name for c in decision.tool_calls)}")
            return None
        text = decision.text.strip()
        stopped = self.stop_token in text
        text = text.replace(self.stop_token, "").strip()
        for prefix in _PREFIXES:
            text = text.removeprefix(prefix).strip()
        if text or not stopped:
            why = persona_break(self.persona, question, text, trajectory)
            if why:
                shown = text if len(text) <= 80 else text[:80] + "…"
                self._broke(f"persona_break: {why}; reply 「{shown}」")
                return None
        if stopped:
            return self._end("stop_token", f"the simulator said {self.stop_token}", text or None)
        return text
