"""Question loops: the agent asks the user again what the user would not answer.

A question counts as *repeated* when it shares enough content with an earlier
question whose reply was a refusal ("不想说", "I'd rather not say") or a
non-answer ("嗯", "whatever", "I don't know"). Content is compared cheaply and
language-agnostically: CJK character bigrams plus Latin words of 3+ letters
that are not filler, overlap divided by the smaller set. No model is asked.
"""

from __future__ import annotations

import re
import unicodedata

REFUSALS = (
    "不想说", "不说", "就不说", "不告诉", "不想告诉", "不方便", "不愿意", "不想透露", "不透露", "无可奉告", "别问", "不要问",
    "不想回答", "不回答", "保密", "关你什么事", "算了", "不订了",
    "rather not", "won't say", "will not say", "not telling", "not going to tell", "don't want to say",
    "do not want to say", "don't want to tell", "none of your business", "no comment", "prefer not",
    "not saying", "stop asking", "i said no", "declined", "先不", "不选", "不需要", "说了不",
)
# Whole replies that decline what was asked ("Run it?" "no"): asking the same again is a repeat.
DECLINES = frozenset({"no", "nope", "no thanks", "no thank you", "not now", "不", "不要", "不用", "不用了", "不行", "别"})
NON_ANSWERS = frozenset({
    "嗯", "哦", "啊", "呃", "随便", "都行", "不知道", "不清楚", "不确定", "没想好", "再说", "再说吧", "…", "...", "?", "？",
    "hmm", "whatever", "idk", "i don't know", "dunno", "not sure", "no idea", "anything",
})
_FILLER = frozenset({
    "the", "and", "you", "your", "are", "can", "could", "would", "will", "please", "tell", "which", "what", "when",
    "where", "how", "that", "this", "for", "with", "from", "have", "has", "need", "know", "let", "me", "so", "i",
    "to", "do", "did", "does", "is", "it", "of", "in", "on", "a", "an", "also", "again", "just", "like", "want",
    "okay", "sure", "thanks", "thank", "provide", "share", "give", "some", "any", "about",
    "should", "shall", "may", "might", "must", "before", "after", "those", "these", "there", "here", "then", "now",
    "yes", "not", "all", "many", "much", "our", "we", "they", "them", "first", "still",
})
_CJK_FILLER = frozenset({"请问", "好的", "为了", "您的", "你的", "一下", "可以", "告诉", "请提", "提供", "什么", "是什", "么？"})
_WORD = re.compile(r"[a-z]{3,}")
_PUNCT = re.compile(r"[^\w\s]")
# a name of a thing: letters or digits joined by . / _ - or with a digit in it (a.txt, old-ui, v1.2, #412)
_NAME = re.compile(r"(?<![\w./-])(?=[\w./-]*[a-z0-9])(?:[a-z0-9]+(?:[./_-][a-z0-9]+)+|[a-z]*\d[a-z0-9]*)(?![\w./-])")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text or "").casefold().split())


_FIRST_CLAUSE = re.compile(r"[.!;,，。！；、]")


def is_refusal(reply: str) -> bool:
    """A refusal or a non-answer: the question did not get what it asked for."""
    t = _norm(reply).strip(" 。.!！~～")
    if not t or t in NON_ANSWERS or t in DECLINES or " ".join(_PUNCT.sub(" ", t).split()) in DECLINES:
        return True
    first = _FIRST_CLAUSE.split(t, 1)[0].strip()
    if first != t and first in DECLINES:
        return True                         # "No. Don't reinstall, check the mapper instead": a no, with reasons
    return any(r in t for r in REFUSALS)


# A reply that says the question was already answered ("I already said", "as I told you", "刚才说了", "说过了"):
# the user's own word that the agent is asking again.
_SAID_ALREADY = re.compile(r"\b(?:already|just) (?:said|told|answered|gave|mentioned|explained)\b|\bas i (?:said|told)\b|"
                           r"\bi (?:said|told you) (?:already|before)\b|(?:刚才|刚刚|已经|之前|上面|前面)\S{0,3}?"
                           r"(?:说|讲|回答|告诉|提供)(?:过|了)|说过了|讲过了|回答过了")


def said_already(reply: str) -> bool:
    """The user says they already answered this."""
    return bool(_SAID_ALREADY.search(_norm(reply)))


def content(text: str) -> frozenset[str]:
    t = _norm(text)
    grams = {run[i:i + 2] for run in _CJK_RUN.findall(t) for i in range(len(run) - 1)}
    grams -= _CJK_FILLER
    words = {w.rstrip("s") for w in _WORD.findall(t) if w not in _FILLER}
    names = {"#" + n for n in _NAME.findall(t)}       # what the question is about, marked apart from words
    return frozenset(grams | words | names)


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Shared content over the smaller set; 0 when both name things (file names,
    ids, versions: ``a.txt``, ``v1.2``, ``old-ui``) and share none of them:
    "Delete a.txt?" and "Delete b.txt?" are two questions."""
    if not a or not b:
        return 0.0
    ids_a, ids_b = {w for w in a if w[0] == "#"}, {w for w in b if w[0] == "#"}
    if ids_a and ids_b and not ids_a & ids_b:
        return 0.0
    return len(a & b) / min(len(a), len(b))
