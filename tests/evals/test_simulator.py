import asyncio

from tether.evals.case import Persona
from tether.evals.simulator import ScriptedUser
from tether.testing import TrajectoryBuilder


def ask(user, q, t):
    return asyncio.run(user.reply(q, t))


def test_reveals_then_replies_then_repeat_last():
    user = ScriptedUser(Persona(reveals={"预算": "人均一万五以内", "多少钱": "人均一万五以内", "出发": "五月中旬从上海出发"},
                                replies=["不想说", "就不说"], then="repeat_last"))
    t = TrajectoryBuilder().user("x").t
    assert ask(user, "你的预算大概多少钱？", t) == "人均一万五以内"          # one fact, not repeated
    assert ask(user, "预算呢？", t) == "不想说"                             # each fact is given once
    assert ask(user, "什么时候出发？", t) == "五月中旬从上海出发"
    assert ask(user, "还有吗？", t) == "就不说"
    assert ask(user, "真的吗？", t) == "就不说"


def test_stop_default_reply_and_max_rounds():
    assert ask(ScriptedUser(Persona(replies=["好"], then="stop")), "q", TrajectoryBuilder().t) == "好"
    user = ScriptedUser(Persona(replies=["好"], then="stop"))
    t = TrajectoryBuilder().t
    ask(user, "q", t)
    assert ask(user, "q", t) is None
    assert ask(ScriptedUser(Persona(default_reply="你看着办")), "q", t) == "你看着办"
    capped = TrajectoryBuilder().ask("q", "a").ask("q", "a").t
    assert ask(ScriptedUser(Persona(replies=["x"], max_rounds=2)), "q", capped) is None
