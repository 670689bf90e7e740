"""The sixth rules pass of the loop guard (issue 25): a stop needs the very call a
hint was about and no reply from the user since; a side effect made again at the
user's word; a listing holding the one job the call named; a 202 pointing to a
status monitor of its own; a namespace before a dot. Live runs through the public API."""

from tether import Decision, RunConfig, ScriptedModel, ToolSet, run_agent_sync, tool
from tether.guards._calls import accepted_job, is_action_name, is_read_name
from tether.guards.loop import LoopConfig, LoopGuard


def run(decisions, tools, user=None, **cfg):
    result = run_agent_sync(ScriptedModel(decisions), ToolSet(tools), message="go", user=user,
                            config=RunConfig(guards=[LoopGuard(LoopConfig(**cfg))], max_steps=60))
    return result, result.trajectory.guard_trips()


def test_a_rule_tripping_again_on_another_call_is_not_a_stop_but_the_hinted_call_again_is():
    @tool(description="read a host")
    def get_host(host: str):
        return {"nginx": "up", "version": "1.25.3"}       # the very same answer for every host

    batch = [Decision.call("get_host", {"host": f"web-{k:02}"}) for k in range(1, 13)]
    result, trips = run(batch + [Decision.final("12 hosts up")], [get_host])
    assert [t.verdict for t in trips] == ["hint"] and result.status == "completed"    # the next host: a look-alike
    assert len(result.trajectory.tool_calls(executed_only=True)) == 12

    same = [Decision.call("get_host", {"host": "web-01"})] * 8
    result, trips = run(same + [Decision.final("x")], [get_host])
    assert [t.verdict for t in trips] == ["hint", "stop"] and result.status == "loop_aborted"


class CheckAgain:
    async def reply(self, question, trajectory):
        return "好的，再查一次。"


def test_a_user_reply_since_the_hint_means_no_stop_and_no_duplicate():
    states = iter(["已揽收", "运输中", "派送中", "派送中", "派送中"])

    @tool(description="订单物流", side_effect=True)     # a tool its author marked as side-effecting
    def order_status(order_id: str):
        return {"status": next(states)}

    decisions = [Decision.call("order_status", {"order_id": "JD-88120"}), Decision.ask("需要我稍后再查吗？"),
                 Decision.call("order_status", {"order_id": "JD-88120"}), Decision.ask("已到杭州分拨中心，要再查吗？"),
                 Decision.call("order_status", {"order_id": "JD-88120"}), Decision.final("派送中")]
    result, trips = run(decisions, [order_status], user=CheckAgain())
    assert trips == [] and result.status == "completed"


class SaidYes:
    async def reply(self, question, trajectory):
        return "yes"


def test_a_reply_to_a_question_asked_again_is_no_new_go_ahead():
    @tool(description="delete a file", side_effect=True)
    def delete_file(path: str):
        return {"deleted": True}

    decisions = [Decision.ask("Delete file a.txt?"), Decision.call("delete_file", {"path": "a.txt"}),
                 Decision.ask("Delete file a.txt now?"), Decision.call("delete_file", {"path": "a.txt"}),
                 Decision.final("x")]
    _, trips = run(decisions, [delete_file], user=SaidYes())
    assert ("duplicate_action", "hint") in [(t.rule, t.verdict) for t in trips]


def test_a_listing_holding_the_one_job_the_call_named_is_a_poll():
    polls = iter([[{"execute_id": "7413", "execute_status": "Running"}]] * 6
                 + [[{"execute_id": "7413", "execute_status": "Success", "output": "D1 西湖"}]])

    @tool(description="workflow run histories")
    def workflow_run_histories(workflow_id: str, execute_id: str):
        return {"code": 0, "data": next(polls)}

    decisions = [Decision.call("workflow_run_histories", {"workflow_id": "74", "execute_id": "7413"})] * 7
    result, trips = run(decisions + [Decision.final("done")], [workflow_run_histories])
    assert trips == [] and result.status == "completed"


def test_a_202_pointing_to_a_status_monitor_of_its_own_started_new_work():
    assert accepted_job({"status": 202, "headers": {"Location": "https://x/runs/08585/operations/b7"}}, {"flow": "r"})
    assert accepted_job({"status": 202, "operation": {"name": "operations/export-19b5", "done": False}}, {"fileId": "1"})
    assert not accepted_job({"status": 202, "headers": {"Location": "https://x/runs/08585"}},
                            {"url": "https://x/runs/08585"})     # the monitor the call polls
    runs = iter(range(1, 10))

    @tool(description="run a child flow")
    def run_child_flow(flow: str):
        return {"status": 202, "headers": {"Location": f"https://x/runs/0858{next(runs)}", "Retry-After": "20"}}

    _, trips = run([Decision.call("run_child_flow", {"flow": "report"})] * 4 + [Decision.final("x")], [run_child_flow])
    assert [(t.rule, t.verdict) for t in trips][:1] == [("duplicate_action", "hint")]


def test_a_namespace_before_a_dot_is_not_the_verb():
    assert not is_action_name("make.blueprint_validate") and is_action_name("make_report")
    assert is_action_name("make.scenario_create") and is_action_name("github.create_issue")
    assert is_read_name("order.lookup") and is_action_name("weixin.cgi_bin.message.mass.sendall") is \
        is_action_name("cgi_bin.message.mass.sendall")
