"""The seventh rules pass of the loop guard (issue 25): each principle with a loop it must
catch and a look-alike it must leave alone, fed as recorded runs through tether's offline
path (what `tether guard-check` sees; each model turn takes 2 s, as in the blind corpus)."""

import asyncio
import json
import sys
from pathlib import Path

from tether.guards._calls import describe_call, page_state, token_copy
from tether.guards._evidence import content_units, walks_on
from tether.guards.loop import LoopGuard
from tether.guards.offline import check_trace

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from guard_quality import load_item  # noqa: E402


def offline(tmp_path, actions):
    item = tmp_path / "item.json"
    item.write_text(json.dumps({"id": "x", "label": "ok", "task": "t", "actions": actions}, ensure_ascii=False),
                    encoding="utf-8")
    trips = asyncio.run(check_trace(load_item(item).trajectory, [LoopGuard()]))
    return [(t.step, t.verdict.rule, t.verdict.action) for t in trips if not t.after_stop]


def act(tool, args, data=None, error=None, kind=None):
    result = {"ok": True, "data": data} if error is None else {"ok": False, "error": error, "error_type": kind}
    return {"tool": tool, "args": args, "result": result}


def test_a_span_written_as_a_string_is_a_range_walked_on(tmp_path):
    assert walks_on({"cells": '"0-9"', "path": '"a.ipynb"'}, {"cells": '"10-19"', "path": '"a.ipynb"'})
    assert not walks_on({"cells": '"0-9"'}, {"cells": '"0-9"'}) and not walks_on({"d": '"2026-12"'}, {"d": '"2026-13"'})
    summary = {"cells": 10, "total_cells": 64}
    walk = [act("read_notebook", {"path": "a.ipynb", "cells": f"{k}-{k + 9}"}, summary) for k in range(0, 70, 10)]
    assert offline(tmp_path, walk) == []
    again = [act("read_notebook", {"path": "a.ipynb", "cells": "10-19"}, summary)] * 4
    assert [t[1:] for t in offline(tmp_path, again)][:1] == [("identical", "hint")]


def test_a_write_made_unique_by_a_token_it_made_up_is_the_same_write(tmp_path):
    assert token_copy('"daily/report-803bdd.parquet"', '"daily/report-6581f5.parquet"')
    assert not token_copy('"issue-15"', '"issue-16"') and not token_copy('"v1.2.3"', '"v1.2.4"')
    uploads = [act("s3_put_object", {"bucket": "acme-reports", "key": f"daily/report-{s}.parquet",
                                     "body_from": "/tmp/report.parquet"}, {"ETag": s * 2})
               for s in ("803bdd", "6581f5", "b436b6")]
    assert [t[1:] for t in offline(tmp_path, uploads)][:1] == [("duplicate_action", "hint")]
    # the same content for ids read from a listing: one per customer, a batch
    listing = act("crm_list_customers", {"tag": "VIP"}, {"customers": [{"id": "v1a021"}, {"id": "v1b034"}]})
    batch = [act("send_coupon", {"customer_id": c, "template": "VIP double twelve 500-80"}, {"status": "issued"})
             for c in ("v1a021", "v1b034")]
    assert offline(tmp_path, [listing, *batch]) == []


def test_a_fresh_idempotency_key_on_the_same_charge_is_a_new_charge(tmp_path):
    def charge(key, pid):
        return act("payment_intents_create", {"amount": 4900, "currency": "eur", "customer": "cus_Q8mZ2kT1aV9xLp",
                                              "idempotency_key": key}, {"id": pid, "status": "succeeded"})
    assert [t[1:] for t in offline(tmp_path, [charge("k1", "pi_1"), charge("k2", "pi_2")])] == \
        [("duplicate_action", "hint")]
    assert offline(tmp_path, [charge("k1", "pi_1"), charge("k1", "pi_1")]) == []     # the server dedupes by it


def test_a_listing_resorted_that_names_the_same_items_is_the_same_answer(tmp_path):
    def issues(sort, counts, names=("NullPointer in Cart", "KeyError currency", "Timeout on pay")):
        return act("list_issues", {"project": "checkout", "sort": sort},
                   [{"title": n, "count": str(c)} for n, c in zip(names, counts)])
    units = content_units([{"title": "a", "count": "478"}], names=True)
    assert units == content_units([{"title": "a", "count": "12"}], names=True)
    same = [issues("freq", (478, 626, 516)), issues("date", (449, 236, 266)), issues("new", (214, 147, 593))]
    assert [t[1:] for t in offline(tmp_path, same)] == [("near_duplicate", "hint")]
    other = [issues("freq", (1, 2, 3)), issues("date", (1, 2, 3), ("a", "b", "c")),
             issues("new", (1, 2, 3), ("d", "e", "f"))]
    assert offline(tmp_path, other) == []
    assert describe_call("t", {"sort": "-name"}, frozenset())[1] == ""      # an order names no resource


def test_the_end_of_a_listing_is_read_from_a_link_header_and_flags():
    link = ('<https://x/events/?cursor=0:100:1>; rel="previous"; results="true"; cursor="0:100:1", '
            '<https://x/events/?cursor=0:200:0>; rel="next"; results="false"; cursor="0:200:0"')
    assert page_state({"status": 200, "headers": {"Link": link}}) == 1
    assert page_state({"headers": {"Link": link.replace('results="false"', 'results="true"')}}) == -2
    assert page_state({"headers": {"Link": '<https://x/?page=1>; rel="first"'}}) == 1      # no next link
    assert page_state({"items": [], "has_more": 0}) == 1 and page_state({"items": [1], "has_more": 1}) == -1
    assert page_state({"code": 200, "data": {"items": [], "pagination": {"page": 4, "totalPages": 3}}}) == 1


def test_a_page_named_in_a_urls_query_is_a_page_of_one_listing(tmp_path):
    described = describe_call("graph_get", {"url": "https://g.example/v1/messages?$top=50&$skip=100&$filter=x"},
                              frozenset())
    assert described[2] == 'graph_get:url="https://g.example/v1/messages?$top=50&$filter=x"'
    pages = [act("graph_get", {"url": f"https://g.example/v1/messages?$top=50&$skip={k}"},
                 {"value": [] if k >= 100 else [{"id": f"m{k}"}]}) for k in range(0, 300, 50)]
    trips = offline(tmp_path, pages)
    assert trips and trips[0][1] == "past_end" and trips[0][0] <= 4


def test_a_search_reworded_in_other_words_that_finds_nothing_again(tmp_path):
    def search(q):
        return act("search_issues", {"repo": "o/r", "q": q}, {"total_count": 0, "items": []})
    reworded = [search("agent 死循环"), search("一直重复执行 SQL"), search("重复调用 工具")]
    assert [t[1:] for t in offline(tmp_path, reworded)] == [("near_duplicate", "hint")]
    widened = [search("2026 款 Model Y 后排遮阳帘原厂配件"), search("后排遮阳帘原厂配件 Model Y 2026"),
               search("Model Y 后排遮阳帘")]                      # the same words reordered, then fewer of them
    assert offline(tmp_path, widened) == []


def test_a_held_lock_is_a_wait_under_the_retry_budget(tmp_path):
    lock = act("terraform_apply", {"dir": "envs/prod"}, error="Error: error acquiring the state lock: "
               "ConditionalCheckFailedException\nLock Info:\n  ID: 3f1b6a0e\n  Who: ci@runner-14", kind="conflict")
    wait = act("sleep", {"seconds": 5}, {"slept": 5})
    trips = offline(tmp_path, [lock, wait, lock, wait, lock, wait, lock])
    assert [t[1:] for t in trips] == [("retry_budget", "hint")]          # within the budget: a hint, never a stop
    other = act("terraform_apply", {"dir": "envs/prod"}, error="Error: invalid resource name", kind="conflict")
    assert [t[1] for t in offline(tmp_path, [other, wait, other, wait, other])] != ["retry_budget"]


def test_a_retry_before_the_asked_wait_is_hammering(tmp_path):
    def limited(after):
        return act("send_message", {"chat_id": 1, "text": "Build passed"},
                   error=f"429 Too Many Requests: retry after {after}", kind="rate_limit")
    assert [t[1:] for t in offline(tmp_path, [limited(15)] * 4)] == [("retry_budget", "hint"), ("retry_budget", "stop")]
    assert [t[1:] for t in offline(tmp_path, [limited(1)] * 4)] == [("retry_budget", "hint")]   # 2 s > 1 s asked
    growing = [limited(s) for s in (2, 4, 8, 16)]            # a growing wait is being honoured
    assert offline(tmp_path, growing) == []


def test_an_error_refusing_the_argument_changed_says_another_value_will_not_help(tmp_path):
    def search(offset, error):
        return act("flight_offers", {"origin": "LGA", "max": 250, "page[offset]": offset}, error=error,
                   kind="validation")
    refused = "[400] INVALID OPTION: Option not supported: page[offset]"
    assert [t[1:] for t in offline(tmp_path, [search(250, refused), search(500, refused)])] == \
        [("no_progress", "hint")]

    def edit(old):
        return act("edit_file", {"path": "app/config.py", "old_string": old, "new_string": "DEBUG = False"},
                   error="old_string not found in app/config.py", kind="tool_error")
    assert offline(tmp_path, [edit("DEBUG = True "), edit("DEBUG=True")]) == []     # the value is wrong, not the option


def test_a_pending_status_in_any_case_or_number_with_words_is_a_poll(tmp_path):
    def athena(state):
        return act("athena_get_query_execution", {"QueryExecutionId": "a1f0bcb3f08b"},
                   {"QueryExecution": {"Status": {"State": state}}})
    assert offline(tmp_path, [athena("QUEUED")] * 3 + [athena("RUNNING")] * 3 + [athena("SUCCEEDED")]) == []

    def export(code, words):
        return act("export_task_get", {"ticket": "6933093124755423251"},
                   {"code": 0, "data": {"result": {"job_status": code, "job_error_msg": words}}})
    assert offline(tmp_path, [export(2, "processing")] * 3 + [export(0, "success")]) == []
    assert offline(tmp_path, [act("calls_get", {"id": "c1"}, {"id": "c1", "status": "in-progress"})] * 4) == []


def test_a_sentence_said_again_is_said_twice(tmp_path):
    say = act("tts.say", {"call_id": "c7", "text": "Perfect, we'll use Arabic for the interpreter."},
              {"spoken_ms": 3900})
    assert [t[1:] for t in offline(tmp_path, [say, say])] == [("duplicate_action", "hint")]


def test_a_guard_restored_from_a_checkpoint_does_not_take_ids_read_before_it_for_made_up_tokens():
    """The answers a made-up token is looked for in are not saved in a checkpoint (they are whole answers):
    restored, the guard cannot tell an id read from a listing before the checkpoint from one made up, so
    it does not call it made up (a batch over listed ids resumed half way drew a duplicate hint)."""
    from tether.events import ToolResultEvent, Trajectory
    from tether.guards import GuardContext
    from tether.messages import ToolCallRequest

    ctx = GuardContext(trajectory=Trajectory())

    def step(guard, n, tool, args, data):
        call = ToolCallRequest(id=f"c{n}", name=tool, arguments=args)
        said = [guard.before_tool(ctx, call)]
        said.append(guard.after_tool(ctx, call, ToolResultEvent(step=n, call_id=call.id, tool=tool, ok=True,
                                                                 data=data)))
        return [v for v in said if v is not None]

    template = "VIP double twelve 500-80, valid until 2026-12-31"
    before = LoopGuard()
    assert step(before, 1, "crm_list_customers", {"tag": "VIP"},
                {"customers": [{"id": "v1a021"}, {"id": "v1b034"}]}) == []
    assert step(before, 2, "send_coupon", {"customer_id": "v1a021", "template": template}, {"status": "issued"}) == []
    restored = LoopGuard()
    restored.load_state(json.loads(json.dumps(before.state(), ensure_ascii=False)))
    assert step(restored, 3, "send_coupon", {"customer_id": "v1b034", "template": template}, {"status": "issued"}) == []
