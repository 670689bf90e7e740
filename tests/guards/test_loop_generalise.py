"""Loop guard rules that generalise (issue 25): compare forms, the end of a
listing, side effects that return fresh ids, errors that change, acks that are
not polls, arguments that change nothing, rewordings with the same answer,
outages, declined questions. Live runs through the public API."""

import itertools

from tether import Decision, RunConfig, ScriptedModel, ToolResult, ToolSet, run_agent_sync, tool
from tether.guards._calls import canon_result, describe_call
from tether.guards.loop import LoopConfig, LoopGuard


def run(decisions, tools, user=None, **cfg):
    result = run_agent_sync(ScriptedModel(decisions), ToolSet(tools), message="go", user=user,
                            config=RunConfig(guards=[LoopGuard(LoopConfig(**cfg))], max_steps=60))
    return result, result.trajectory.guard_trips()


def test_compare_forms_ignore_key_order_list_order_width_punctuation_and_json_formatting():
    sig = lambda args: describe_call("t", args, frozenset())[0]  # noqa: E731
    assert sig({"a": {"y": 1, "x": [2, 1]}, "q": "ＡＢＣ　１２３？"}) == sig({"q": "abc 123", "a": {"x": [1, 2], "y": 1}})
    assert sig({"query": "rotate signing key?"}) == sig({"query": "Rotate  signing-key"})
    assert sig({"filter": '{"service": "auth", "level": "error"}'}) == sig({"filter": '{ "level":"error",\n "service":"auth" }'})
    assert sig({"command": "grep -rn 'x' src"}) == sig({"command": 'grep -rn "x" src'})
    assert sig({"cursor": None, "id": 3}) == sig({"id": 3, "cursor": ""}) != sig({"id": 3, "cursor": "c2"})
    assert canon_result({"hits": [{"id": 2}, {"id": 1}], "n": 2}) == canon_result({"n": 2, "hits": [{"id": 1}, {"id": 2}]})
    assert canon_result({"msg": "ＯＫ，完成"}) == canon_result({"msg": "ok,完成"})


def test_the_same_results_in_another_order_are_the_same_result():
    orders = itertools.cycle([["a", "b", "c"], ["c", "a", "b"], ["b", "c", "a"]])

    @tool(description="list")
    def list_items(folder: str):
        return {"items": next(orders)}

    decisions = [Decision.call("list_items", {"folder": "inbox"})] * 4 + [Decision.final("x")]
    _, trips = run(decisions, [list_items])
    assert [(t.rule, t.numbers["count"]) for t in trips][:1] == [("identical", 3)]


def test_pages_past_the_end_of_a_listing_trip_and_the_last_empty_page_does_not():
    @tool(description="list orders")
    def list_orders(page: int):
        return {"orders": [f"o{page}-{k}" for k in range(3)] if page <= 2 else [], "hasMore": page < 2}

    fine = [Decision.call("list_orders", {"page": p}) for p in (1, 2, 3)] + [Decision.final("6 orders")]
    result, trips = run(fine, [list_orders])
    assert trips == [] and result.status == "completed"
    past = [Decision.call("list_orders", {"page": p}) for p in (1, 2, 3, 4, 5, 6)] + [Decision.final("x")]
    result, trips = run(past, [list_orders])
    # page 4 hinted; pages 5 and 6 are other calls (a walk on through pages has legitimate look-alikes), so
    # the hint is not followed by a stop: a stop needs the very call the hint was about (sixth pass, 2026-12-01)
    assert [(t.rule, t.verdict) for t in trips] == [("past_end", "hint")]
    again = [Decision.call("list_orders", {"page": p}) for p in (1, 2, 3, 4, 4, 4, 4)] + [Decision.final("x")]
    result, trips = run(again, [list_orders])
    assert [t.verdict for t in trips][:1] == ["hint"] and trips[-1].verdict == "stop"    # the same page again: stopped


def test_creating_the_same_thing_again_is_a_loop_even_with_a_fresh_id_each_time():
    ids = itertools.count(412)

    @tool(description="create an issue", side_effect=True)
    def create_issue(project: str, title: str):
        return {"id": f"OPS-{next(ids)}"}

    same = [Decision.call("create_issue", {"project": "OPS", "title": "Rotate TLS cert"})] * 4 + [Decision.final("x")]
    result, trips = run(same, [create_issue])
    assert [(t.rule, t.verdict) for t in trips] == [("duplicate_action", "hint"), ("duplicate_action", "stop")]
    batch = [Decision.call("create_issue", {"project": "WEB", "title": f"Bug {t}"}) for t in "ABCDEFGH"]
    result, trips = run(batch + [Decision.final("8 bugs")], [create_issue])
    assert trips == [] and result.status == "completed"


def test_a_numbered_copy_of_the_same_content_is_a_duplicate_create():
    @tool(description="create a file", side_effect=True)
    def create_new_file(filepath: str, contents: str):
        return {"created": filepath}

    decisions = [Decision.call("create_new_file", {"filepath": name, "contents": "- Fix tool loop bound\n"})
                 for name in ("changes/1.5.46.md", "changes/1.5.46 (1).md", "changes/1.5.46 (2).md")]
    _, trips = run(decisions + [Decision.final("x")], [create_new_file])
    assert trips and trips[0].rule == "duplicate_action" and trips[0].numbers["count"] == 2


def test_validation_errors_fixed_one_by_one_are_progress():
    @tool(description="create a user")
    def register(name: str = "", email: str = "", phone: str = "", country: str = ""):
        for field in ("name", "email", "phone", "country"):
            if not locals()[field]:
                return ToolResult.failure(f"validation error: field '{field}' is required", "invalid_argument")
        return {"id": "u1"}

    args = [{}, {"name": "Ann"}, {"name": "Ann", "email": "a@x.io"}, {"name": "Ann", "email": "a@x.io", "phone": "1"},
            {"name": "Ann", "email": "a@x.io", "phone": "1", "country": "DE"}]
    result, trips = run([Decision.call("register", a) for a in args] + [Decision.final("u1")], [register])
    assert trips == [] and result.status == "completed"


def test_an_ack_that_says_queued_is_a_send_not_a_poll():
    @tool(description="message a chat")
    def chat(channel: str, message: str):
        return {"status": "queued"}

    decisions = [Decision.call("chat", {"channel": "#ops", "message": "deploy done"})] * 4 + [Decision.final("x")]
    result, trips = run(decisions, [chat])
    assert [(t.rule, t.verdict) for t in trips] == [("duplicate_action", "hint"), ("duplicate_action", "stop")]


def test_an_argument_that_changes_nothing_does_not_make_a_new_call():
    @tool(description="exec")
    def fabric_exec(command: str, display_name: str):
        return {"stdout": "noop\n", "exit_code": 0}

    decisions = [Decision.call("fabric_exec", {"command": "echo noop", "display_name": f"noop{n}"}) for n in range(1, 6)]
    _, trips = run(decisions + [Decision.final("x")], [fabric_exec])
    assert trips[0].rule == "identical" and trips[0].numbers["count"] == 3


def test_rewording_a_search_that_keeps_giving_the_same_answer():
    @tool(description="search")
    def web_search(query: str):
        return {"results": [{"url": "https://acme.example/about"}, {"url": "https://linkedin.example/acme"}]}

    words = ["Acme CFO", "Acme chief financial officer", "who is CFO of Acme", "Acme finance chief"]
    _, trips = run([Decision.call("web_search", {"query": w}) for w in words] + [Decision.final("x")], [web_search])
    assert trips[0].rule == "near_duplicate" and trips[0].numbers["count"] == 3


def test_three_tools_failing_the_same_way_draw_an_outage_hint():
    def down(name):
        @tool(name=name, description=name)
        def fn(x: str = ""):
            return ToolResult.failure(f"RuntimeError: MCP client not connected for tool '{name}'", "unavailable")
        return fn

    tools = [down(n) for n in ("linear__list_issues", "notion__search", "slack__list_channels")]
    decisions = [Decision.call(t.name, {}) for t in tools] + [Decision.final("the hub is down")]
    result, trips = run(decisions, tools)
    assert [(t.rule, t.verdict, t.numbers["failed_tools"]) for t in trips] == [("outage", "hint", 3)]


class Decliner:
    async def reply(self, question, trajectory):
        return "no"


def test_asking_again_after_a_plain_no_is_a_repeat():
    @tool(description="scale")
    def kubectl_get(resource: str):
        return {"replicas": 2}

    decisions = [Decision.ask("Run `kubectl scale deployment nginx --replicas=5`?")] * 3 + [Decision.final("ok")]
    result, trips = run(decisions, [kubectl_get], user=Decliner())
    assert [(t.rule, t.verdict) for t in trips] == [("question_repeat", "hint"), ("question_repeat", "stop")]


def test_compare_forms_are_bounded_on_hostile_values():
    deep = cur = {}
    for _ in range(5000):
        cur["a"] = {}
        cur = cur["a"]
    nested = cur = []
    for _ in range(5000):
        cur.append([])
        cur = cur[0]
    sig = describe_call("t", {"a": deep, "b": nested, "c": "x" * 100_000}, frozenset())[0]
    assert len(sig) < 110_000                      # depth cut, no RecursionError
    assert len(canon_result(deep)) < 5_000 and len(canon_result(nested)) < 5_000
    wide = {"items": [{"id": n, "tags": [str(n), "x"]} for n in range(50_000)]}
    assert canon_result(wide)                      # past the node budget the rest is kept as it comes
