"""Text matching shared by the world's search tools.

Two deterministic rules, both documented where they are used:

* **Term matching** (taobao, maps, travel): the query is NFKC-normalized and
  case folded, split on whitespace into tokens; each token loses punctuation
  and symbols and is cut into runs of CJK characters and runs of Latin
  letters/digits (``"特斯拉Model"`` -> ``"特斯拉"``, ``"model"``). A CJK run is
  segmented by forward maximum matching against a lexicon built from the
  world's data (``"李宁羽毛球鞋"`` -> ``"李宁"``, ``"羽毛球鞋"``); characters
  no lexicon word covers stay together as one *unknown* term
  (``"后排遮阳帘原厂配件"`` -> ``后排``, ``遮阳帘``, ``原厂``, ``配件``).
* **Gram overlap** (web_search, weibo, zhihu): a text becomes a set of grams
  (CJK character bigrams, Latin/digit words); a document's score is the
  idf-weighted share of the query's grams it contains.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from typing import Iterable, Sequence

_CJK_RANGES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2FFFF))

# Grams containing one of these carry no meaning for retrieval.
_STOP_CHARS = set("的了吗呢吧啊呀么我你帮请")
_STOP_GRAMS = {"一下", "看看", "请问", "我想", "一个", "一款", "有没", "没有", "哪些", "什么", "怎么"}


def norm(text: str) -> str:
    """NFKC + casefold."""
    return unicodedata.normalize("NFKC", text).casefold()


def _keep(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LN"


@functools.lru_cache(maxsize=65536)
def compact(text: str) -> str:
    """Normalized text without whitespace, punctuation or symbols (cached: a fresh
    world compacts the same documents as the last one)."""
    return "".join(ch for ch in norm(text) if _keep(ch))


def is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def runs(token: str) -> list[tuple[bool, str]]:
    """Split a compacted token into (is_cjk, text) runs."""
    out: list[tuple[bool, str]] = []
    for ch in token:
        kind = is_cjk(ch)
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + ch)
        else:
            out.append((kind, ch))
    return out


class Lexicon:
    """Known words (compacted, length >= 2) for forward maximum matching."""

    def __init__(self, words: Iterable[str], synonyms: dict[str, str] | None = None):
        self.synonyms = {compact(k): compact(v) for k, v in (synonyms or {}).items()}
        self.words = {w for w in (compact(x) for x in words) if len(w) >= 2} | {k for k in self.synonyms if len(k) >= 2}
        self.maxlen = max((len(w) for w in self.words), default=1)

    def segment(self, run: str) -> list[tuple[str, bool]]:
        out: list[tuple[str, bool]] = []
        buf = ""
        i = 0
        while i < len(run):
            hit = None
            for size in range(min(self.maxlen, len(run) - i), 1, -1):
                if run[i:i + size] in self.words:
                    hit = run[i:i + size]
                    break
            if hit is None:
                buf += run[i]
                i += 1
                continue
            if buf:
                out.append((buf, False))
                buf = ""
            out.append((self.synonyms.get(hit, hit), True))
            i += len(hit)
        if buf:
            out.append((buf, False))
        return out

    def terms(self, query: str) -> list[tuple[str, bool]]:
        """Query -> ordered, de-duplicated (term, known) pairs."""
        seen: dict[str, bool] = {}
        for token in norm(query).split():
            for cjk, text in runs(compact(token)):
                pieces = self.segment(text) if cjk else [(self.synonyms.get(text, text), text in self.words)]
                for term, known in pieces:
                    if term and term not in seen:
                        seen[term] = known
        return list(seen.items())


@functools.lru_cache(maxsize=65536)
def grams(text: str) -> frozenset[str]:
    """CJK bigrams (a lone CJK character stands for itself) and Latin/digit words.
    Cached: the world's documents are the same in every trial, so a fresh
    world's indexes cost a lookup per document, not a re-tokenization."""
    t = norm(text)
    out: set[str] = set()
    for word in re.findall(r"[a-z0-9]+", t):
        if len(word) >= 2 or word.isdigit():
            out.add(word)
    cjk_run = ""
    for ch in t + " ":
        if is_cjk(ch):
            cjk_run += ch
            continue
        if len(cjk_run) == 1 and cjk_run not in _STOP_CHARS:
            out.add(cjk_run)
        for i in range(len(cjk_run) - 1):
            g = cjk_run[i:i + 2]
            if g not in _STOP_GRAMS and not (set(g) & _STOP_CHARS):
                out.add(g)
        cjk_run = ""
    return frozenset(out)


@functools.lru_cache(maxsize=64)
def _index(texts: tuple[str, ...]) -> tuple[list[frozenset[str]], dict[str, float], float]:
    docs = [grams(t) for t in texts]
    df: dict[str, int] = {}
    for d in docs:
        for g in d:
            df[g] = df.get(g, 0) + 1
    n = len(docs)
    return docs, {g: math.log((n + 1) / (c + 1)) + 1.0 for g, c in df.items()}, math.log(n + 1) + 1.0


class GramIndex:
    """Idf-weighted gram overlap over a fixed list of documents."""

    def __init__(self, texts: Sequence[str]):
        # shared by every world indexing the same documents (read-only once built)
        self.docs, self._idf, self._max_idf = _index(tuple(texts))

    def idf(self, gram: str) -> float:
        return self._idf.get(gram, self._max_idf)

    def rank(self, query: str, *, min_score: float, min_hits: int = 2) -> list[tuple[int, float]]:
        """(doc index, score) for documents over the threshold, best first.

        score = sum(idf of matched query grams) / sum(idf of all query grams).
        A document needs ``min_hits`` matched grams (fewer when the query has
        fewer grams) and ``score >= min_score``.
        """
        q = grams(query)
        if not q:
            return []
        total = sum(self.idf(g) for g in q)
        need = min(min_hits, len(q))
        out: list[tuple[int, float]] = []
        for i, d in enumerate(self.docs):
            hit = q & d
            if len(hit) < need:
                continue
            score = sum(self.idf(g) for g in hit) / total
            if score >= min_score:
                out.append((i, round(score, 4)))
        out.sort(key=lambda p: (-p[1], p[0]))
        return out
