"""A labelled corpus of agent trajectories for measuring loop detection.

Every item is a tether trajectory (the events ``tether guard-check`` reads)
written from a failure pattern, or a legitimate pattern that looks like one,
reported in a public agent-framework issue thread (``source``; see README.md).
None is taken from tether's C4 cases.

* ``label == "loop"``: a good detector must trip (hint, block or stop) by the
  agent action ``trip_by`` (1-based; actions are tool calls and questions to
  the user, in order). Deadlines count from where the loop starts: the 4th
  identical call, the 5th attempt of a transiently failing call (three
  attempts is the usual SDK retry budget), the 3rd round of a cycle, the 7th
  reworded search, the 5th call into an outage, the 3rd ask of a refused
  question, the 13th poll of a status that never changes.
* ``label == "ok"``: legitimate work; any trip at all is a false alarm.

    python tests/data/loop_corpus/corpus.py            # list the items
    python tests/data/loop_corpus/corpus.py --write D  # one JSONL trace per item in D

Items stay under 20 tool calls so the reference budget (25 calls, a hint at
20) never speaks: the corpus measures loop detection, not spending caps.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from tether.events import (
    AgentMessage,
    ModelDecisionEvent,
    ModelRequestEvent,
    RunFinished,
    RunStarted,
    ToolCallEvent,
    ToolResultEvent,
    Trajectory,
    UserMessage,
)
from tether.messages import DecisionKind, ToolCallRequest
from tether.status import TerminalStatus

GH = "https://github.com/"
SRC = {
    "fastclaw": GH + "fastclaw-ai/fastclaw/pull/80",
    "openmono": GH + "StartupHakk/OpenMonoAgent.ai/issues/47",
    "cogtrix": GH + "NorthlandPositronics/Cogtrix/pull/474",
    "zeroclaw": GH + "zeroclaw-labs/zeroclaw/pull/2153",
    "zeroclaw_np": GH + "zeroclaw-labs/zeroclaw/pull/7681",
    "weave": GH + "weave-os/router/pull/1123",
    "futureagi": GH + "future-agi/future-agi/pull/1201",
    "openclaw_poll": GH + "openclaw/openclaw/pull/17118",
    "openclaw_pingpong": GH + "openclaw/openclaw/issues/64500",
    "superplane": GH + "superplanehq/superplane/issues/4123",
    "nanobot_guard": GH + "HKUDS/nanobot/pull/2195",
    "nanobot_read": GH + "HKUDS/nanobot/pull/3077",
    "nanobot_warn": GH + "HKUDS/nanobot/pull/5344",
    "thoughtcoding": GH + "zengxinyueooo/ThoughtCoding/issues/33",
    "pi_ls": GH + "earendil-works/pi/issues/6158",
    "pi_noop": GH + "earendil-works/pi/issues/9637",
    "opencode_loop": GH + "anomalyco/opencode/issues/43800",
    "opencode_exec": GH + "anomalyco/opencode/issues/28596",
    "stella": GH + "macanderson/stella/issues/359",
    "anolisa": GH + "agentic-os-org/ANOLISA/pull/2719",
    "autopilot": GH + "daymanondev/pi-auto-pilot/issues/46",
    "gemini_batch": GH + "google-gemini/gemini-cli/pull/20701",
    "deepchat": GH + "ThinkInAIXYZ/deepchat/issues/2292",
    "n8n": GH + "n8n-io/n8n/pull/32755",
    "claude_reask": GH + "anthropics/claude-code/issues/80917",
    "dify": GH + "langgenius/dify/issues/23560",
    "hermes_429": GH + "nesquena/hermes-webui/issues/4980",
    "crush_429": GH + "charmbracelet/crush/issues/3024",
    "agentuity": GH + "agentuity/sdk/pull/1009",
    "sinas": GH + "sinas-platform/sinas/issues/131",
    "buzz": GH + "builderz-labs/marketing-dashboard/issues/11",
    "apify": GH + "rocketride-org/rocketride-server/pull/1224",
    "langchain": GH + "langchain-ai/langchain/pull/37864",
    "openhands_mcp": GH + "OpenHands/software-agent-sdk/issues/3928",
    "hermes_mcp": GH + "NousResearch/hermes-agent/issues/37768",
}


@dataclass
class Item:
    id: str
    label: str               # "loop" or "ok"
    pattern: str             # what the issue asks to cover
    source: str              # the public thread the pattern comes from
    trajectory: Trajectory
    trip_by: int | None = None


class Run:
    """Builds a trajectory the way the run loop records one."""

    def __init__(self, task: str, tools: list[str]):
        self.tools = tools
        self.t = Trajectory()
        self.step = 0
        self.ms = 0.0
        self._add(RunStarted(run_id="corpus", model="corpus", tools=tools))
        self._add(UserMessage(content=task))

    def _add(self, event: Any) -> None:
        self.ms += 40.0
        event.at_ms = self.ms
        self.t.append(event)

    def _decide(self, kind: DecisionKind, **kw: Any) -> None:
        self.step += 1
        self._add(ModelRequestEvent(step=self.step, message_count=2 * self.step, tools=self.tools))
        self._add(ModelDecisionEvent(step=self.step, kind=kind, **kw))

    def call(self, tool: str, args: dict[str, Any], data: Any = None, *, error: str | None = None,
             error_type: str | None = None) -> "Run":
        cid = f"call_{self.step + 1}"
        self._decide(DecisionKind.TOOL_CALLS, tool_calls=[ToolCallRequest(id=cid, name=tool, arguments=args)])
        self._add(ToolCallEvent(step=self.step, call_id=cid, tool=tool, arguments=args))
        self._add(ToolResultEvent(step=self.step, call_id=cid, tool=tool, ok=error is None,
                                  data=data if error is None else None, error=error,
                                  error_type=(error_type or "tool_error") if error is not None else None))
        return self

    def history_question(self, question: str, reply: str) -> "Run":
        self._add(AgentMessage(content=question, kind="question", source="history"))
        self._add(UserMessage(content=reply, source="history"))
        return self

    def ask(self, question: str, reply: str) -> "Run":
        self._decide(DecisionKind.QUESTION, text=question)
        self._add(AgentMessage(content=question, kind="question", step=self.step))
        self._add(UserMessage(content=reply, source="simulator"))
        return self

    def final(self, text: str = "Done.", status: TerminalStatus = TerminalStatus.COMPLETED) -> Trajectory:
        self._decide(DecisionKind.FINAL, text=text)
        self._add(RunFinished(status=status, reply=text, steps=self.step))
        return self.t

    def cut(self, reason: str = "step cap reached") -> Trajectory:
        self._add(RunFinished(status=TerminalStatus.STEP_LIMIT, reply="", steps=self.step, reason=reason))
        return self.t


ITEMS: list[Callable[[], Item]] = []


def item(id: str, label: str, pattern: str, source: str, trip_by: int | None = None):
    def register(build: Callable[[], Trajectory]):
        ITEMS.append(lambda: Item(id, label, pattern, SRC[source], build(), trip_by))
        return build
    return register


# ============================ loops ==================================================

# -- identical repeats, identical successes -------------------------------------------
@item("L01-read-same-offset", "loop", "identical success", "nanobot_read", trip_by=4)
def _():
    r = Run("what happened recently?", ["read_file", "list_dir"])
    for _ in range(15):
        r.call("read_file", {"path": "~/.nanobot/workspace/memory/history.jsonl", "limit": 50, "offset": 1},
               {"lines": ["2026-04-11 user asked about the weather", "2026-04-11 assistant answered"]})
    return r.cut()


@item("L02-ls-six-times", "loop", "identical success", "pi_ls", trip_by=4)
def _():
    r = Run("install the custom css for jupyter", ["bash", "write_file"])
    for _ in range(6):
        r.call("bash", {"command": "ls /home/dev/.jupyter/custom/"}, {"stdout": "custom.css\ncustom.js\n", "exit_code": 0})
    for _ in range(5):
        r.call("bash", {"command": "ls -la /home/dev/.jupyter/custom/"},
               {"stdout": "-rw-r--r-- custom.css\n-rw-r--r-- custom.js\n", "exit_code": 0})
    return r.cut()


@item("L03-noop-echo", "loop", "identical success", "pi_noop", trip_by=4)
def _():
    r = Run("keep the fabric session alive while the build runs", ["fabric_exec"])
    for _ in range(19):
        r.call("fabric_exec", {"cmd": "bash echo noop"}, {"stdout": "noop\n"})
    return r.cut()


@item("L04-git-status-again", "loop", "identical success", "opencode_loop", trip_by=6)
def _():
    r = Run("commit the refactor", ["bash", "read", "edit"])
    r.call("read", {"path": "src/app.ts"}, {"content": "export const app = createApp()"})
    r.call("edit", {"path": "src/app.ts", "old": "createApp()", "new": "createApp({strict: true})"}, {"ok": True})
    for _ in range(8):
        r.call("bash", {"command": "git status --short"}, {"stdout": " M src/app.ts\n"})
    return r.cut()


@item("L05-query-order-12", "loop", "identical success", "langchain", trip_by=4)
def _():
    r = Run("查一下订单 10086 的物流", ["query_order", "query_logistics"])
    for _ in range(12):
        r.call("query_order", {"order_id": 10086}, {"order_id": 10086, "status": "已发货", "logistics_no": None})
    return r.cut()


@item("L06-list-resources", "loop", "identical success", "superplane", trip_by=4)
def _():
    r = Run("wire the github trigger to the deploy component", ["list_integration_resources", "describe_trigger",
                                                                "list_components"])
    for _ in range(9):
        r.call("list_integration_resources", {"integration": "github", "type": "repository"}, [])
    return r.cut()


# -- identical repeats, identical errors ----------------------------------------------
@item("L07-write-file-denied", "loop", "identical error", "nanobot_guard", trip_by=4)
def _():
    r = Run("save the summary to notes.md", ["write_file", "read_file"])
    for _ in range(10):
        r.call("write_file", {"path": "/etc/notes.md", "content": "summary"},
               error="EACCES: permission denied, open '/etc/notes.md'", error_type="permission_denied")
    return r.cut()


@item("L08-bad-date-format", "loop", "identical error", "thoughtcoding", trip_by=4)
def _():
    r = Run("下周五从杭州去成都的高铁", ["search_trains", "web_search"])
    for _ in range(9):
        r.call("search_trains", {"from": "杭州", "to": "成都", "date": "下周五"},
               error="参数错误：date 需要 YYYY-MM-DD 格式", error_type="invalid_argument")
    return r.cut()


@item("L09-exec-same-args", "loop", "identical error", "opencode_exec", trip_by=4)
def _():
    r = Run("run the migration", ["exec", "read"])
    for _ in range(12):
        r.call("exec", {"command": "npm run migrate"},
               error="Error: Cannot find module 'knex'\nRequire stack: ./migrate.js", error_type="exit_1")
    return r.cut()


@item("L10-same-comment-resent", "loop", "identical success (action)", "nanobot_guard", trip_by=4)
def _():
    r = Run("tell the channel the deploy is done", ["send_message", "list_channels"])
    for _ in range(7):
        r.call("send_message", {"channel": "#deploys", "text": "Deploy finished ✅"}, {"ok": True, "ts": "1712.01"})
    return r.cut()


@item("L11-transient-forever", "loop", "identical transient error", "buzz", trip_by=6)
def _():
    r = Run("summarise the last 20 support tickets", ["llm_summarise", "list_tickets"])
    r.call("list_tickets", {"limit": 20}, {"tickets": [f"T-{i}" for i in range(20)]})
    for _ in range(14):
        r.call("llm_summarise", {"ticket_ids": "T-0..T-19"},
               error="429 rate_limit_exceeded: output_tokens rate limit exceeded, retry after 2s", error_type="rate_limit")
    return r.cut()


@item("L12-503-unbounded", "loop", "identical transient error", "apify", trip_by=5)
def _():
    r = Run("scrape the pricing page", ["apify_run_actor", "web_fetch"])
    for _ in range(12):
        r.call("apify_run_actor", {"actor": "website-content-crawler", "url": "https://example.com/pricing"},
               error="HTTP 503 Service Unavailable", error_type="http_error")
    return r.cut()


# -- polls that never progress -------------------------------------------------------
@item("L13-poll-forever", "loop", "poll without progress", "openclaw_poll", trip_by=13)
def _():
    r = Run("wait for the nightly export and send me the link", ["get_export_status", "send_email"])
    for _ in range(19):
        r.call("get_export_status", {"export_id": "exp_77"}, {"export_id": "exp_77", "status": "running"})
    return r.cut()


@item("L14-clock-polling", "loop", "poll without progress (changing result)", "cogtrix", trip_by=10)
def _():
    r = Run("post the standup reminder at 11:05 UTC", ["get_current_datetime", "post_message", "cron_add"])
    for i in range(19):
        r.call("get_current_datetime", {}, {"utc": f"2026-05-01T10:{41 + i:02d}:00Z"})
    return r.cut()


# -- cycles ---------------------------------------------------------------------------
@item("L15-memory-pingpong", "loop", "A-B-A-B cycle", "openclaw_pingpong", trip_by=6)
def _():
    r = Run("heartbeat: check memory for pending reminders", ["memory_search", "memory_get"])
    for _ in range(8):
        r.call("memory_search", {"query": "pending reminders"}, {"hits": [{"id": "m_12", "score": 0.81}]})
        r.call("memory_get", {"id": "m_12"}, {"id": "m_12", "text": "citations: on"})
    return r.cut()


@item("L16-read-edit-test", "loop", "period-3 cycle", "stella", trip_by=9)
def _():
    r = Run("make the parser test pass", ["read_file", "edit_file", "run_tests"])
    for _ in range(5):
        r.call("read_file", {"path": "src/parser.rs"}, {"content": "fn parse(s: &str) -> Ast { todo!() }"})
        r.call("edit_file", {"path": "src/parser.rs", "old": "todo!()", "new": "Ast::empty()"},
               error="old string not found in src/parser.rs", error_type="edit_failed")
        r.call("run_tests", {"filter": "parser"}, {"passed": 0, "failed": 1, "output": "parser::roundtrip FAILED"})
    return r.cut()


@item("L17-search-faq", "loop", "A-B-A-B cycle", "futureagi", trip_by=6)
def _():
    r = Run("what is the refund window for annual plans?", ["search", "read_faq"])
    for _ in range(8):
        r.call("search", {"q": "refund window annual plan"}, {"results": [{"doc": "faq/billing", "score": 0.7}]})
        r.call("read_faq", {"doc": "faq/billing"}, {"text": "Monthly plans can be cancelled any time."})
    return r.cut()


@item("L18-trigger-components", "loop", "period-3 cycle", "superplane", trip_by=9)
def _():
    r = Run("connect the PR trigger to the canvas", ["describe_trigger", "list_components", "list_integration_resources"])
    for _ in range(5):
        r.call("describe_trigger", {"trigger": "github.pull_request"}, {"fields": ["repo", "branch"]})
        r.call("list_components", {"canvas": "main"}, {"components": []})
        r.call("list_integration_resources", {"integration": "github"}, [])
    return r.cut()


@item("L19-period-four", "loop", "period-4 cycle", "stella", trip_by=12)
def _():
    r = Run("fix the flaky login test", ["read_file", "edit_file", "run_tests", "git_diff"])
    for _ in range(4):
        r.call("read_file", {"path": "tests/login.spec.ts"}, {"content": "await page.click('#login')"})
        r.call("edit_file", {"path": "tests/login.spec.ts", "old": "#login", "new": "#sign-in"}, {"ok": True})
        r.call("run_tests", {"spec": "login"}, {"failed": 1, "output": "TimeoutError: #sign-in"})
        r.call("git_diff", {}, {"diff": ""})
    return r.cut()


# -- reworded searches, no new results ---------------------------------------------
@item("L20-reworded-empty", "loop", "reworded search, no new results", "superplane", trip_by=7)
def _():
    r = Run("find the staging database connection string in the wiki", ["wiki_search", "wiki_read"])
    for q in ("staging database connection string", "staging db connection", "staging postgres url",
              "connection string staging", "staging database credentials", "db url staging env", "staging DSN",
              "postgres staging connection", "staging database"):
        r.call("wiki_search", {"query": q}, {"total": 0, "pages": []})
    return r.cut()


@item("L21-reworded-same-hits", "loop", "reworded search, same results", "futureagi", trip_by=7)
def _():
    r = Run("how do I rotate the signing key?", ["docs_search", "docs_read"])
    hits = {"results": [{"title": "Keys overview", "url": "/docs/keys"}, {"title": "API auth", "url": "/docs/auth"}]}
    for q in ("rotate signing key", "signing key rotation", "how to rotate the signing key", "key rotation signing",
              "rotate jwt signing key", "change signing key", "renew signing key", "signing key rollover"):
        r.call("docs_search", {"q": q}, hits)
    return r.cut()


@item("L22-zh-reworded", "loop", "reworded search, no new results", "zeroclaw", trip_by=7)
def _():
    r = Run("帮我在闲鱼找 2019 款 iPad mini 5 的原装充电器", ["xianyu_search", "web_search"])
    for q in ("iPad mini 5 原装充电器", "ipad mini5 原装 充电器", "iPad mini 第五代 充电器 原装", "苹果 iPad mini5 充电头原装",
              "mini5 原装充电器", "iPad mini 5 充电器 正品", "ipad mini 5代 原装充电头", "iPad mini5 原厂充电器"):
        r.call("xianyu_search", {"keyword": q, "sort": "default"}, {"total": 0, "items": [], "msg": "没有找到相关宝贝"})
    return r.cut()


@item("L23-env-var-many-ways", "loop", "different calls, same result", "nanobot_warn", trip_by=7)
def _():
    r = Run("is OPENAI_BASE_URL set for the worker?", ["exec", "read_file", "grep"])
    r.call("exec", {"command": "echo $OPENAI_BASE_URL"}, {"stdout": "\n"})
    r.call("exec", {"command": "printenv OPENAI_BASE_URL"}, {"stdout": "\n"})
    r.call("exec", {"command": "env | grep OPENAI_BASE_URL"}, {"stdout": "\n"})
    r.call("grep", {"pattern": "OPENAI_BASE_URL", "path": ".env"}, {"matches": []})
    r.call("exec", {"command": "cat /proc/self/environ | tr '\\0' '\\n' | grep OPENAI"}, {"stdout": "\n"})
    r.call("exec", {"command": "bash -lc 'echo $OPENAI_BASE_URL'"}, {"stdout": "\n"})
    r.call("exec", {"command": "sh -c 'echo $OPENAI_BASE_URL'"}, {"stdout": "\n"})
    r.call("exec", {"command": "python -c 'import os;print(os.getenv(\"OPENAI_BASE_URL\"))'"}, {"stdout": "\n"})
    return r.cut()


@item("L24-guessed-paths", "loop", "different calls, same error", "zeroclaw_np", trip_by=7)
def _():
    r = Run("read the deployment config", ["read_file", "list_dir"])
    for p in ("config/deploy.yaml", "deploy.yaml", "config/deployment.yaml", "deploy/config.yaml", ".deploy.yaml",
              "conf/deploy.yml", "deployment/config.yml", "config/deploy.yml", "ops/deploy.yaml"):
        r.call("read_file", {"path": p}, error=f"ENOENT: no such file or directory, open '{p}'", error_type="not_found")
    return r.cut()


@item("L25-interleaved-no-progress", "loop", "no progress across interleaved calls", "zeroclaw_np", trip_by=10)
def _():
    r = Run("find why the cron job did not run", ["shell", "read_file"])
    for i in range(8):
        r.call("shell", {"command": "systemctl status cron-backup"}, {"stdout": "inactive (dead)"})
        r.call("read_file", {"path": f"/var/log/syslog.{i}"}, {"content": f"log chunk {i} without cron lines"})
    return r.cut()


# -- outages ---------------------------------------------------------------------------
@item("L26-outage-prefix", "loop", "outage, shared name prefix", "openhands_mcp", trip_by=5)
def _():
    r = Run("list my open linear issues and the related notion pages", ["linear_list_issues", "linear_get_issue",
                                                                        "linear_search", "web_search"])
    for tool in ("linear_list_issues", "linear_search", "linear_get_issue", "linear_list_issues", "linear_search",
                 "linear_get_issue", "linear_list_issues"):
        r.call(tool, {"team": "core"}, error="HTTP 503 Service Unavailable from integrations-hub", error_type="unavailable")
    return r.cut()


@item("L27-outage-no-prefix", "loop", "outage, tools without a shared prefix", "openhands_mcp", trip_by=5)
def _():
    r = Run("summarise this week's issues, docs changes and slack threads",
            ["list_issues", "search_pages", "post_message", "read_thread"])
    for tool in ("list_issues", "search_pages", "read_thread", "list_issues", "search_pages", "read_thread",
                 "list_issues", "search_pages"):
        r.call(tool, {"week": "2026-W27"},
               error=f"RuntimeError: MCP client not connected for tool '{tool}'. The connection may have been closed "
                     "or failed to establish.", error_type="RuntimeError")
    return r.cut()


@item("L28-outage-mcp-not-connected", "loop", "outage, tools without a shared prefix", "hermes_mcp", trip_by=5)
def _():
    r = Run("把这篇公众号文章转成 markdown 再发到群里", ["wechat_article", "convert_markdown", "send_group"])
    for tool, args in [("wechat_article", {"url": "https://mp.weixin.qq.com/s/abc"}), ("convert_markdown", {"html": "<p/>"}),
                       ("send_group", {"group": "产品群"}), ("wechat_article", {"url": "https://mp.weixin.qq.com/s/abc"}),
                       ("convert_markdown", {"html": "<p/>"}), ("wechat_article", {"url": "https://mp.weixin.qq.com/s/abc"}),
                       ("send_group", {"group": "产品群"})]:
        r.call(tool, args, error="MCP server 'wechat' is not connected", error_type="mcp_error")
    return r.cut()


@item("L29-outage-auth-expired", "loop", "outage, same error across tools", "hermes_mcp", trip_by=5)
def _():
    r = Run("sync the calendar invites into the CRM", ["get_events", "crm_upsert_contact", "get_attendees"])
    for tool in ("get_events", "get_attendees", "get_events", "get_attendees", "crm_upsert_contact", "get_events"):
        r.call(tool, {"calendar": "primary"}, error="401 Unauthorized: token expired", error_type="auth_error")
    return r.cut()


@item("L30-outage-gateway", "loop", "outage, tools without a shared prefix", "agentuity", trip_by=5)
def _():
    r = Run("plan a day in Lisbon: weather, museums, a dinner place", ["get_weather", "find_places", "book_table",
                                                                       "web_search"])
    for tool, args in [("get_weather", {"city": "Lisbon"}), ("find_places", {"city": "Lisbon", "type": "museum"}),
                       ("find_places", {"city": "Lisbon", "type": "restaurant"}), ("get_weather", {"city": "Lisbon"}),
                       ("find_places", {"city": "Lisbon", "type": "museum"}), ("get_weather", {"city": "Lisbon"})]:
        r.call(tool, args, error="502 Bad Gateway: upstream proxy error", error_type="http_error")
    return r.cut()


# -- questions to a refusing user ---------------------------------------------------
@item("L31-hotel-dates-refused", "loop", "question repeated after refusal", "deepchat", trip_by=3)
def _():
    r = Run("帮我订个酒店", ["search_hotels", "book_hotel"])
    r.ask("请问您想住哪个城市、哪几天？", "不想说")
    r.ask("为了帮您查酒店，请告诉我城市和入住日期。", "不告诉你")
    r.ask("请问入住城市和日期是？", "就不说")
    r.ask("没有城市和日期无法查询酒店，请提供入住城市和日期。", "不说")
    r.ask("请问您的入住城市和日期？", "算了")
    return r.cut("the user left")


@item("L32-account-refused-en", "loop", "question repeated after refusal", "n8n", trip_by=3)
def _():
    r = Run("move the invoices to the shared drive", ["list_invoices", "move_file"])
    r.ask("Which account should I use for the shared drive?", "I'd rather not say.")
    r.ask("To move the invoices I need the shared drive account. Which account is it?", "Not telling you.")
    r.ask("Could you tell me which account owns the shared drive?", "Stop asking.")
    r.ask("Which shared drive account should I use?", "no comment")
    return r.cut("the user left")


@item("L33-deepchat-rephrased", "loop", "question repeated, reworded", "deepchat", trip_by=3)
def _():
    r = Run("删除已经生成的数据，我们从 0 开始", ["delete_dataset", "list_datasets"])
    r.ask("要删除哪些数据？全部生成的数据，还是只删除本次会话生成的？", "全部")
    r.ask("确认一下删除范围：是删除全部生成的数据，还是只删除本次生成的数据？", "全部，刚说过了")
    r.ask("删除范围是全部生成数据还是仅本次数据？", "全部！")
    r.ask("请确认要删除的数据范围：全部生成的数据，还是本次会话的数据？", "你无限重复让我回答重复的问题")
    return r.cut("the user left")


@item("L34-non-answer-loop", "loop", "question repeated after non-answer", "dify", trip_by=3)
def _():
    r = Run("recommend a laptop", ["search_products"])
    r.ask("What is your budget for the laptop?", "hmm")
    r.ask("Roughly what budget do you have in mind for the laptop?", "whatever")
    r.ask("Could you give me a budget range for the laptop?", "idk")
    r.ask("What laptop budget should I work with?", "...")
    return r.cut("the user left")


@item("L35-refused-after-history", "loop", "question repeated after refusal", "claude_reask", trip_by=2)
def _():
    r = Run("给我推荐几家餐厅", ["search_restaurants"])
    r.history_question("请问您在哪个城市、想吃什么菜系？", "不想说")
    r.ask("为了推荐餐厅，请问您所在的城市和喜欢的菜系？", "不方便说")
    r.ask("请告诉我城市和菜系，我才能推荐餐厅。", "不说")
    r.ask("您在哪个城市？想吃什么菜？", "算了")
    return r.cut("the user left")


# ============================ legitimate work ======================================

# -- pagination -----------------------------------------------------------------------
@item("K01-issues-pages", "ok", "pagination", "futureagi")
def _():
    r = Run("count the open bugs across all pages", ["list_issues"])
    for page in range(1, 10):
        r.call("list_issues", {"repo": "acme/api", "state": "open", "page": page, "per_page": 50},
               {"issues": [f"#{page * 100 + i}" for i in range(3)] if page < 9 else []})
    return r.final("There are 24 open bugs.")


@item("K02-cursor-pages", "ok", "pagination", "futureagi")
def _():
    r = Run("export every contact", ["list_contacts", "write_file"])
    cursor = None
    for i in range(12):
        args = {"limit": 100} if cursor is None else {"limit": 100, "cursor": cursor}
        cursor = f"cur_{i + 1:04d}"
        r.call("list_contacts", args, {"contacts": [f"c{i}_{k}" for k in range(2)], "next_cursor": cursor if i < 11 else None})
    r.call("write_file", {"path": "contacts.csv", "content": "..."}, {"bytes": 20480})
    return r.final("Exported 24 contacts to contacts.csv.")


@item("K03-search-pages", "ok", "pagination", "fastclaw")
def _():
    r = Run("collect every mention of our product on page 1-6 of the search", ["web_search"])
    for page in range(1, 7):
        r.call("web_search", {"query": "tether agent guard", "page": page},
               {"results": [{"url": f"https://site{page}-{k}.example"} for k in range(3)]})
    return r.final("Found 18 mentions.")


@item("K04-offset-lines", "ok", "pagination (reads with offsets)", "nanobot_read")
def _():
    r = Run("summarise the whole history.jsonl", ["read_file"])
    for off in range(1, 500, 50):
        r.call("read_file", {"path": "history.jsonl", "offset": off, "limit": 50}, {"lines": [f"line {off + k}" for k in range(3)]})
    return r.final("Summary written.")


@item("K05-empty-last-page", "ok", "pagination", "futureagi")
def _():
    r = Run("list all s3 objects under logs/", ["s3_list"])
    for token in (None, "t1", "t2", "t3", "t4"):
        args = {"bucket": "acme-logs", "prefix": "logs/"} | ({"continuation_token": token} if token else {})
        r.call("s3_list", args, {"keys": [f"logs/{token}-{k}.gz" for k in range(4)] if token != "t4" else [],
                                  "next": None if token == "t4" else f"t{int((token or 't0')[1:]) + 1}"})
    return r.final("16 log files.")


# -- batch actions with a constant acknowledgement -----------------------------------
@item("K06-move-files", "ok", "batch action, constant ack", "gemini_batch")
def _():
    r = Run("move every invoice PDF into /archive/2025", ["list_dir", "move_file"])
    files = [f"/inbox/invoice-{n:03d}.pdf" for n in range(1, 15)]
    r.call("list_dir", {"path": "/inbox"}, {"entries": files})
    for f in files:
        r.call("move_file", {"src": f, "dst": "/archive/2025/"}, {"moved": True})
    return r.final("Moved 14 invoices.")


@item("K07-label-issues", "ok", "batch action, constant ack", "anolisa")
def _():
    r = Run("label all crash reports as bug", ["search_issues", "add_label"])
    r.call("search_issues", {"q": "crash is:open"}, {"issues": list(range(301, 317))})
    for n in range(301, 317):
        r.call("add_label", {"issue": n, "label": "bug"}, {"ok": True})
    return r.final("Labelled 16 issues.")


@item("K08-send-invites", "ok", "batch action, constant ack", "gemini_batch")
def _():
    r = Run("send the workshop invite to everyone on the list", ["read_sheet", "send_email"])
    people = [f"p{n}@acme.io" for n in range(1, 13)]
    r.call("read_sheet", {"sheet": "workshop", "range": "A1:A12"}, {"values": people})
    for p in people:
        r.call("send_email", {"to": p, "subject": "Workshop on Friday", "body": "See you at 10:00 in room 4."},
               {"status": "sent"})
    return r.final("Sent 12 invites.")


@item("K09-add-headers", "ok", "batch action, constant ack", "gemini_batch")
def _():
    r = Run("add the license header to every source file", ["list_files", "edit_file"])
    files = [f"src/mod_{n}.py" for n in range(1, 15)]
    r.call("list_files", {"glob": "src/*.py"}, {"files": files})
    for f in files:
        r.call("edit_file", {"path": f, "old": "", "new": "# SPDX-License-Identifier: MIT\n", "at": "start"},
               {"success": True})
    return r.final("Added the header to 14 files.")


@item("K10-archive-mails", "ok", "batch action, constant ack", "autopilot")
def _():
    r = Run("archive all newsletters from last month", ["search_mail", "archive"])
    ids = [f"msg_{n:05d}" for n in range(20101, 20117)]
    r.call("search_mail", {"q": "category:newsletter older_than:30d"}, {"ids": ids})
    for i in ids:
        r.call("archive", {"message_id": i}, {"archived": True})
    return r.final("Archived 16 newsletters.")


@item("K11-zh-batch-tag", "ok", "batch action, constant ack", "anolisa")
def _():
    r = Run("把这些客户都打上「高意向」标签", ["crm_search", "crm_tag_customer"])
    ids = [f"C{n}" for n in range(88001, 88015)]
    r.call("crm_search", {"keyword": "近30天咨询3次以上"}, {"customers": ids})
    for c in ids:
        r.call("crm_tag_customer", {"customer_id": c, "tag": "高意向"}, {"code": 0, "msg": "success"})
    return r.final("已为 14 位客户打上标签。")


@item("K12-verbless-batch", "ok", "batch action, constant ack (no verb in the tool name)", "gemini_batch")
def _():
    r = Run("mv every screenshot into ~/Pictures/shots", ["fs_ls", "fs_mv"])
    shots = [f"~/Desktop/Screenshot 2026-06-{d:02d}.png" for d in range(1, 13)]
    r.call("fs_ls", {"path": "~/Desktop", "glob": "Screenshot*"}, {"entries": shots})
    for s in shots:
        r.call("fs_mv", {"from": s, "to": "~/Pictures/shots/"}, {"ok": True})
    return r.final("Moved 12 screenshots.")


# -- polling that ends in a changed status -----------------------------------------
@item("K13-job-status", "ok", "polling ends in a changed status", "openmono")
def _():
    r = Run("run the backfill and tell me when it finishes", ["start_job", "check_status"])
    r.call("start_job", {"name": "backfill"}, {"job_id": "job_42", "status": "queued"})
    for _ in range(7):
        r.call("check_status", {"job_id": "job_42"}, {"job_id": "job_42", "status": "running"})
    r.call("check_status", {"job_id": "job_42"}, {"job_id": "job_42", "status": "succeeded", "rows": 12000})
    return r.final("The backfill finished: 12000 rows.")


@item("K14-deploy-sleep-poll", "ok", "polling with a sleep tool", "stella")
def _():
    r = Run("deploy and wait until it is live", ["deploy", "get_deployment", "sleep"])
    r.call("deploy", {"service": "web", "version": "1.8.2"}, {"deployment_id": "d-91"})
    for _ in range(6):
        r.call("get_deployment", {"id": "d-91"}, {"id": "d-91", "state": "deploying"})
        r.call("sleep", {"seconds": 10}, {"slept": 10})
    r.call("get_deployment", {"id": "d-91"}, {"id": "d-91", "state": "live"})
    return r.final("Version 1.8.2 is live.")


@item("K15-process-poll", "ok", "polling a long-running process", "weave")
def _():
    r = Run("run the full test suite", ["exec_start", "exec_poll"])
    r.call("exec_start", {"cmd": "pytest -q"}, {"session": "s1"})
    for _ in range(6):
        r.call("exec_poll", {"session": "s1", "chars": ""}, {"output": "", "running": True})
    r.call("exec_poll", {"session": "s1", "chars": ""}, {"output": "412 passed", "running": False, "exit_code": 0})
    return r.final("412 tests passed.")


@item("K16-build-output-grows", "ok", "polling with changing output", "stella")
def _():
    r = Run("build the release binary", ["start_process", "read_output"])
    r.call("start_process", {"cmd": "cargo build --release"}, {"handle": "h7"})
    for i in range(1, 11):
        r.call("read_output", {"handle": "h7"}, {"output": f"Compiling crate {i}/10", "exited": i == 10})
    return r.final("Built target/release/app.")


@item("K17-zh-poll-refund", "ok", "polling ends in a changed status", "fastclaw")
def _():
    r = Run("帮我看看退款到账没有，到账了告诉我", ["query_refund"])
    for _ in range(5):
        r.call("query_refund", {"refund_id": "RF20260701"}, {"refund_id": "RF20260701", "status": "处理中"})
    r.call("query_refund", {"refund_id": "RF20260701"}, {"refund_id": "RF20260701", "status": "已到账"})
    return r.final("退款已到账。")


# -- transient failure followed by success ----------------------------------------
@item("K18-one-503", "ok", "transient 5xx then success", "agentuity")
def _():
    r = Run("get the current exchange rate", ["get_rate"])
    r.call("get_rate", {"base": "EUR", "quote": "USD"}, error="HTTP 503 Service Unavailable", error_type="http_error")
    r.call("get_rate", {"base": "EUR", "quote": "USD"}, {"rate": 1.0842})
    return r.final("1 EUR = 1.0842 USD.")


@item("K19-two-timeouts", "ok", "timeout then success", "crush_429")
def _():
    r = Run("fetch the changelog", ["web_fetch"])
    for _ in range(2):
        r.call("web_fetch", {"url": "https://example.com/changelog"}, error="Request timed out after 30s",
               error_type="timeout")
    r.call("web_fetch", {"url": "https://example.com/changelog"}, {"text": "## 2.4.0 ..."})
    return r.final("2.4.0 adds streaming.")


@item("K20-429-then-ok", "ok", "rate limit then success", "hermes_429")
def _():
    r = Run("translate the release notes", ["translate"])
    r.call("translate", {"text": "Release notes ...", "to": "de"}, error="429 Too Many Requests", error_type="rate_limit")
    r.call("translate", {"text": "Release notes ...", "to": "de"}, error="429 Too Many Requests", error_type="rate_limit")
    r.call("translate", {"text": "Release notes ...", "to": "de"}, {"text": "Versionshinweise ..."})
    return r.final("Übersetzt.")


@item("K21-backoff-with-wait", "ok", "retries with backoff", "sinas")
def _():
    r = Run("upload the report", ["upload_file", "wait"])
    r.call("upload_file", {"path": "report.pdf", "bucket": "reports"}, error="503 Slow Down", error_type="http_error")
    r.call("wait", {"seconds": 2}, {"waited": 2})
    r.call("upload_file", {"path": "report.pdf", "bucket": "reports"}, error="503 Slow Down", error_type="http_error")
    r.call("wait", {"seconds": 4}, {"waited": 4})
    r.call("upload_file", {"path": "report.pdf", "bucket": "reports"}, {"etag": "9f2c"})
    return r.final("Uploaded report.pdf.")


@item("K22-backoff-constant-wait", "ok", "retries with backoff (constant delay)", "hermes_429")
def _():
    r = Run("post the summary to the channel", ["post_message", "sleep"])
    r.call("post_message", {"channel": "#ops", "text": "Summary ..."}, error="rate_limited: retry after 5s",
           error_type="rate_limit")
    r.call("sleep", {"seconds": 5}, {"slept": 5})
    r.call("post_message", {"channel": "#ops", "text": "Summary ..."}, error="rate_limited: retry after 5s",
           error_type="rate_limit")
    r.call("sleep", {"seconds": 5}, {"slept": 5})
    r.call("post_message", {"channel": "#ops", "text": "Summary ..."}, {"ok": True, "ts": "1719.2"})
    return r.final("Posted.")


@item("K23-mixed-transient", "ok", "transient errors of two kinds, then success", "agentuity")
def _():
    r = Run("check the service health", ["health_check", "get_metrics"])
    r.call("health_check", {"service": "api"}, error="502 Bad Gateway", error_type="http_error")
    r.call("health_check", {"service": "api"}, error="connection reset by peer", error_type="connection_error")
    r.call("health_check", {"service": "api"}, {"healthy": True, "latency_ms": 41})
    r.call("get_metrics", {"service": "api", "window": "1h"}, {"p99_ms": 180, "errors": 3})
    return r.final("API is healthy; p99 180 ms.")


@item("K24-fix-args-after-error", "ok", "retry with corrected arguments", "thoughtcoding")
def _():
    r = Run("下周五从杭州去成都的高铁", ["search_trains"])
    r.call("search_trains", {"from": "杭州", "to": "成都", "date": "下周五"},
           error="参数错误：date 需要 YYYY-MM-DD 格式", error_type="invalid_argument")
    r.call("search_trains", {"from": "杭州", "to": "成都", "date": "2026-07-10"}, {"trains": ["G1975", "G2193"]})
    return r.final("有 G1975 和 G2193 两趟。")


# -- exploration over many distinct queries -----------------------------------------
@item("K25-research", "ok", "exploration over distinct queries", "futureagi")
def _():
    r = Run("compare vector databases for a 10M-embedding workload", ["web_search", "fetch"])
    for q in ("pgvector 10 million vectors benchmark", "qdrant memory usage 10M", "milvus vs weaviate latency",
              "lancedb disk based ann", "hnsw vs ivf recall tradeoff", "faiss gpu index build time",
              "vespa ann benchmark 2026", "pinecone serverless pricing per million"):
        r.call("web_search", {"query": q}, {"results": [{"url": f"https://{q.split()[0]}.example/{k}"} for k in range(3)]})
    for u in ("https://qdrant.example/0", "https://pgvector.example/0", "https://milvus.example/1"):
        r.call("fetch", {"url": u}, {"text": f"notes from {u}"})
    return r.final("pgvector is enough below 5M; beyond that qdrant or milvus.")


@item("K26-zh-explore", "ok", "exploration over distinct queries", "zeroclaw")
def _():
    r = Run("帮我了解一下杭州周边适合带娃的周末去处", ["web_search"])
    for q in ("杭州 亲子 周末 好去处", "杭州动物园 门票 开放时间", "湘湖 亲子 玩法", "杭州 室内 儿童乐园 推荐",
              "安吉 亲子农场", "千岛湖 带娃 两日游", "杭州 科技馆 预约", "良渚 博物院 儿童"):
        r.call("web_search", {"query": q}, {"results": [f"{q} 结果{k}" for k in range(3)]})
    return r.final("推荐动物园、湘湖和科技馆。")


@item("K27-some-empty-searches", "ok", "exploration with a few empty results", "superplane")
def _():
    r = Run("find prior art for our caching patent", ["patent_search"])
    outcomes = [True, False, True, True, False, False, True, True, False, True]
    for i, hit in enumerate(outcomes):
        r.call("patent_search", {"query": f"cache invalidation claim variant {i}: " + ["ttl", "lease", "version vector",
               "write-through", "bloom filter", "epoch", "lamport clock", "tombstone", "gossip", "merkle"][i]},
               {"hits": [f"US{9000000 + i * 17 + k}" for k in range(2)]} if hit else {"hits": []})
    return r.final("Four relevant patents.")


@item("K28-same-query-other-sources", "ok", "same query, different sources", "nanobot_warn")
def _():
    r = Run("what changed in python 3.14 asyncio?", ["search_docs", "search_web", "search_github"])
    r.call("search_docs", {"query": "asyncio changes 3.14"}, {"hits": ["whatsnew/3.14#asyncio"]})
    r.call("search_web", {"query": "asyncio changes 3.14"}, {"hits": ["blog.example/314-asyncio"]})
    r.call("search_github", {"query": "asyncio changes 3.14"}, {"hits": ["python/cpython#12345"]})
    return r.final("TaskGroup cancellation semantics and a new asyncio.ps command.")


# -- long runs of reads of different files -------------------------------------------
@item("K29-read-many-files", "ok", "reads of many different files", "autopilot")
def _():
    r = Run("review the routing module", ["read_file"])
    for n in range(1, 19):
        r.call("read_file", {"path": f"src/routing/part_{n}.ts"}, {"content": f"export function route{n}() {{}}"})
    return r.final("Reviewed 18 files.")


@item("K30-reads-with-empty-files", "ok", "reads of different files, some empty or identical", "autopilot")
def _():
    r = Run("audit the package layout", ["read_file"])
    paths = ["pkg/__init__.py", "pkg/a/__init__.py", "pkg/b/__init__.py", "pkg/core.py", "pkg/c/__init__.py",
             "pkg/util.py", "pkg/d/__init__.py", "LICENSE", "pkg/a/LICENSE", "pkg/api.py", "pkg/e/__init__.py"]
    for p in paths:
        data = "" if p.endswith("__init__.py") else ("MIT License ..." if "LICENSE" in p else f"# {p}\n...")
        r.call("read_file", {"path": p}, data)
    return r.final("Layout looks fine.")


@item("K31-terminal-commands", "ok", "different commands, one tool", "anolisa")
def _():
    r = Run("find out why the disk is full", ["terminal"])
    for cmd, out in [("df -h", "/dev/sda1 98%"), ("du -sh /var/*", "41G /var/log"), ("du -sh /var/log/*", "39G /var/log/app"),
                     ("ls -la /var/log/app | head", "app.log.1 ... app.log.40"), ("journalctl --disk-usage", "2.1G"),
                     ("cat /etc/logrotate.d/app", "missing rotate directive")]:
        r.call("terminal", {"command": cmd}, {"stdout": out})
    return r.final("/var/log/app is not rotated.")


@item("K32-candidate-paths-found", "ok", "a few misses, then found", "zeroclaw_np")
def _():
    r = Run("read the deployment config", ["read_file"])
    for p in ("config/deploy.yaml", "deploy.yaml", "config/deployment.yaml"):
        r.call("read_file", {"path": p}, error=f"ENOENT: no such file or directory, open '{p}'", error_type="not_found")
    r.call("read_file", {"path": "ops/deploy.yaml"}, {"content": "replicas: 3"})
    return r.final("replicas: 3")


# -- edits and re-checks that change the world ------------------------------------------
@item("K33-edit-test-loop-progress", "ok", "edit / test cycles with changing results", "stella")
def _():
    r = Run("make the test suite green", ["run_tests", "edit_file", "read_file"])
    failing = 4
    r.call("run_tests", {}, {"failed": failing})
    for n in range(1, 5):
        r.call("read_file", {"path": f"src/f{n}.py"}, {"content": f"def f{n}(): return None"})
        r.call("edit_file", {"path": f"src/f{n}.py", "old": "return None", "new": f"return {n}"}, {"ok": True})
        failing -= 1
        r.call("run_tests", {}, {"failed": failing})
    return r.final("All tests pass.")


@item("K34-git-status-before-after", "ok", "the same check before and after a change", "opencode_loop")
def _():
    r = Run("commit the fix", ["bash"])
    r.call("bash", {"command": "git status --short"}, {"stdout": " M src/fix.py\n"})
    r.call("bash", {"command": "git add -A && git commit -m 'fix'"}, {"stdout": "[main 1a2b3c] fix"})
    r.call("bash", {"command": "git status --short"}, {"stdout": ""})
    return r.final("Committed 1a2b3c.")


@item("K35-user-asks-again", "ok", "the user asks to check again", "thoughtcoding")
def _():
    r = Run("查一下 10086 的物流", ["query_logistics"])
    r.call("query_logistics", {"order_id": 10086}, {"status": "运输中", "location": "杭州转运中心"})
    r.t.append(UserMessage(content="再查一次", source="input"))
    r.call("query_logistics", {"order_id": 10086}, {"status": "派送中", "location": "西湖区"})
    return r.final("正在派送，位于西湖区。")


# -- questions that are legitimate ------------------------------------------------------
@item("K36-clarify-answered", "ok", "clarifying questions that get answers", "n8n")
def _():
    r = Run("book me a flight", ["search_flights"])
    r.ask("Where are you flying from and to?", "Berlin to Lisbon")
    r.ask("Which date would you like to depart?", "July 10")
    r.call("search_flights", {"from": "BER", "to": "LIS", "date": "2026-07-10"}, {"flights": ["TP541", "FR1234"]})
    return r.final("TP541 or FR1234 on July 10.")


@item("K37-refused-then-default", "ok", "refusal, then a default instead of asking again", "n8n")
def _():
    r = Run("帮我找个酒店", ["search_hotels"])
    r.ask("请问您的预算大概多少？", "不想说")
    r.call("search_hotels", {"city": "上海", "sort": "rating"}, {"hotels": ["A", "B", "C"]})
    return r.final("按评分推荐了 A、B、C，预算没有限制。")


@item("K38-follow-up-different", "ok", "a refusal, then a different question", "dify")
def _():
    r = Run("recommend a restaurant", ["search_restaurants"])
    r.ask("Which neighbourhood are you in?", "I'd rather not say")
    r.ask("Any cuisine you prefer?", "Thai")
    r.call("search_restaurants", {"cuisine": "thai", "city": "Berlin"}, {"results": ["Mae Thai", "Lemongrass"]})
    return r.final("Mae Thai or Lemongrass.")


@item("K39-partial-answer", "ok", "a partial answer, then the missing field", "claude_reask")
def _():
    r = Run("订机票", ["search_flights"])
    r.ask("请问出发地、目的地和日期？", "北京到上海")
    r.ask("好的，哪天出发？", "下周五")
    r.call("search_flights", {"from": "北京", "to": "上海", "date": "2026-07-10"}, {"flights": ["MU5101"]})
    return r.final("下周五有 MU5101。")


@item("K40-dont-know-optional", "ok", "a non-answer to an optional question", "n8n")
def _():
    r = Run("plan a weekend trip", ["search_places"])
    r.ask("Do you have a budget in mind?", "not sure")
    r.ask("Do you prefer the mountains or the sea?", "the sea")
    r.call("search_places", {"type": "beach", "within_km": 200}, {"places": ["Usedom", "Rügen"]})
    return r.final("Usedom or Rügen.")


# -- a few more loops and legitimate runs of the same shapes, other domains -------------
@item("L36-zh-same-error-retry", "loop", "identical error", "thoughtcoding", trip_by=4)
def _():
    r = Run("把周报发给老板", ["send_mail", "read_doc"])
    for _ in range(8):
        r.call("send_mail", {"to": "boss@corp.cn", "subject": "周报", "attachment": "weekly.docx"},
               error="附件不存在：weekly.docx", error_type="not_found")
    return r.cut()


@item("L37-reworded-code-search", "loop", "reworded search, no new results", "nanobot_warn", trip_by=7)
def _():
    r = Run("where is the retry policy configured?", ["code_search", "read_file"])
    for q in ("retry policy", "RetryOptions", "retry_policy config", "max_retries setting", "retries configuration",
              "backoff policy", "retry config", "RetryConfig", "retry settings"):
        r.call("code_search", {"query": q, "repo": "acme/api"}, {"matches": []})
    return r.cut()


@item("L38-pingpong-zh", "loop", "A-B-A-B cycle", "openclaw_pingpong", trip_by=6)
def _():
    r = Run("查一下这个小区的均价和学区", ["beike_get_community", "school_lookup"])
    for _ in range(7):
        r.call("beike_get_community", {"community_id": "c_5566"}, {"name": "望京花园", "avg_price": None})
        r.call("school_lookup", {"community": "望京花园"}, {"schools": [], "note": "数据更新中"})
    return r.cut()


@item("L39-same-page-ignored", "loop", "pagination that does not advance", "futureagi", trip_by=7)
def _():
    r = Run("collect all reviews", ["get_reviews"])
    page1 = {"reviews": [{"id": "r1", "stars": 5}, {"id": "r2", "stars": 4}], "page": 1}
    for page in range(1, 12):
        r.call("get_reviews", {"product": "sku-88", "page": page}, page1)
    return r.cut()


@item("L40-question-en-refusal-history", "loop", "question repeated after refusal", "n8n", trip_by=2)
def _():
    r = Run("set up the weekly report", ["create_schedule"])
    r.history_question("Which email address should receive the weekly report?", "I don't want to tell you")
    r.ask("Which email address should I send the weekly report to?", "prefer not to say")
    r.ask("Please provide the email address for the weekly report.", "no")
    r.ask("What email should receive the report?", "stop asking")
    return r.cut("the user left")


@item("K41-batch-delete-branches", "ok", "batch action, constant ack", "anolisa")
def _():
    r = Run("delete all merged feature branches", ["list_branches", "delete_branch"])
    branches = [f"feature/t-{n}" for n in range(40, 55)]
    r.call("list_branches", {"merged": True}, {"branches": branches})
    for b in branches:
        r.call("delete_branch", {"branch": b}, {"deleted": True})
    return r.final("Deleted 15 branches.")


@item("K42-batch-refunds-zh", "ok", "batch action, constant ack", "anolisa")
def _():
    r = Run("给这批超时未发货的订单全部退款", ["list_orders", "create_refund"])
    orders = [f"E2026{n:05d}" for n in range(1001, 1013)]
    r.call("list_orders", {"status": "超时未发货"}, {"orders": orders})
    for o in orders:
        r.call("create_refund", {"order_no": o, "reason": "超时未发货"}, {"result": "accepted"})
    return r.final("12 笔订单已提交退款。")


@item("K43-poll-queue-zh", "ok", "polling ends in a changed status", "openmono")
def _():
    r = Run("提交视频转码，完成后给我链接", ["submit_transcode", "get_task"])
    r.call("submit_transcode", {"video": "demo.mov", "preset": "1080p"}, {"task_id": "tk_9"})
    for _ in range(8):
        r.call("get_task", {"task_id": "tk_9"}, {"task_id": "tk_9", "status": "排队中"})
    r.call("get_task", {"task_id": "tk_9"}, {"task_id": "tk_9", "status": "完成", "url": "https://cdn.example/demo.mp4"})
    return r.final("转码完成：https://cdn.example/demo.mp4")


@item("K44-geocode-batch", "ok", "batch reads over many targets", "gemini_batch")
def _():
    r = Run("geocode our 15 store addresses", ["geocode"])
    for n in range(1, 16):
        r.call("geocode", {"address": f"Hauptstraße {n}, 10827 Berlin"}, {"lat": 52.48 + n / 1000, "lng": 13.35})
    return r.final("Geocoded 15 stores.")


@item("K45-users-without-orders", "ok", "batch reads, many empty answers", "futureagi")
def _():
    r = Run("which of these 12 trial users placed an order?", ["get_orders"])
    for n in range(1, 13):
        r.call("get_orders", {"user_id": 5000 + n}, {"orders": [f"o{n}"]} if n in (3, 9) else {"orders": []})
    return r.final("Users 5003 and 5009.")


def items() -> list[Item]:
    return [build() for build in ITEMS]


def action_index(trajectory: Trajectory) -> dict[int, int]:
    """Event seq -> the 1-based agent action it belongs to (a tool call or a
    question; a question decision belongs to the question it is about to ask)."""
    out: dict[int, int] = {}
    n = 0
    for e in trajectory:
        if isinstance(e, ToolCallEvent):
            n += 1
        elif isinstance(e, ModelDecisionEvent) and e.kind == DecisionKind.QUESTION:
            n += 1
        out[e.seq] = max(n, 1)
    return out


def main(argv: list[str]) -> None:
    all_items = items()
    if len(argv) >= 2 and argv[0] == "--write":
        out = Path(argv[1])
        for it in all_items:
            it.trajectory.save(out / f"{it.id}.jsonl")
        print(f"wrote {len(all_items)} traces to {out}/")
        return
    for it in all_items:
        by = f"trip by action {it.trip_by}" if it.trip_by else "never trip"
        print(f"{it.id:34} {it.label:4} {by:20} {it.pattern} ({it.source})")
    loops = sum(1 for i in all_items if i.label == "loop")
    print(f"\n{len(all_items)} items: {loops} loop, {len(all_items) - loops} ok")


if __name__ == "__main__":
    main(sys.argv[1:])
