"""Generic linguistic knowledge the calibration policies use.

Nothing here knows about any case: a gazetteer of places, relative-date
phrases, filler words, refusal words and the phrases tool results use to
say "no data", "not available" or "try again later".
"""

from __future__ import annotations

import functools
import re
import unicodedata

# -- places --------------------------------------------------------------------
CN_CITIES = (
    "北京 上海 天津 重庆 广州 深圳 杭州 南京 苏州 成都 武汉 西安 长沙 郑州 济南 青岛 大连 沈阳 "
    "哈尔滨 长春 石家庄 太原 呼和浩特 合肥 福州 厦门 南昌 南宁 海口 三亚 贵阳 昆明 拉萨 兰州 "
    "西宁 银川 乌鲁木齐 宁波 温州 无锡 常州 徐州 烟台 珠海 佛山 东莞 中山 汕头 泉州 桂林 丽江 "
    "大理 西双版纳 洛阳 开封 扬州 绍兴 嘉兴 金华 台州 威海 秦皇岛 保定 唐山 邯郸 包头 鄂尔多斯 "
    "呼伦贝尔 张家界 黄山 九寨沟 敦煌 喀什 伊犁 香港 澳门 台北 高雄 舟山 北海 湛江 惠州 南通 "
    "盐城 连云港 潍坊 临沂 淄博 日照 芜湖 绵阳 宜昌 襄阳 岳阳 株洲 衡阳 赣州 九江 景德镇 遵义"
).split()
WORLD_CITIES = (
    "东京 大阪 京都 名古屋 札幌 福冈 冲绳 首尔 釜山 济州岛 新加坡 曼谷 清迈 普吉岛 吉隆坡 "
    "槟城 雅加达 巴厘岛 河内 胡志明市 岘港 马尼拉 宿务 金边 暹粒 仰光 万象 新德里 孟买 迪拜 "
    "阿布扎比 多哈 伊斯坦布尔 开罗 莫斯科 圣彼得堡 伦敦 巴黎 柏林 慕尼黑 法兰克福 罗马 米兰 "
    "威尼斯 佛罗伦萨 马德里 巴塞罗那 里斯本 阿姆斯特丹 布鲁塞尔 苏黎世 日内瓦 维也纳 布拉格 "
    "布达佩斯 华沙 雅典 圣托里尼 斯德哥尔摩 哥本哈根 奥斯陆 赫尔辛基 雷克雅未克 都柏林 爱丁堡 "
    "纽约 洛杉矶 旧金山 西雅图 芝加哥 波士顿 华盛顿 拉斯维加斯 迈阿密 夏威夷 檀香山 温哥华 "
    "多伦多 蒙特利尔 墨西哥城 圣保罗 里约热内卢 布宜诺斯艾利斯 乌斯怀亚 圣地亚哥 蓬塔阿雷纳斯 "
    "利马 悉尼 墨尔本 布里斯班 珀斯 奥克兰 皇后镇 开普敦 约翰内斯堡 内罗毕 马尔代夫 毛里求斯 "
    "塞舌尔 大溪地 斐济"
).split()
REGIONS = (
    "南极 南极洲 北极 欧洲 亚洲 非洲 北美 南美 大洋洲 东南亚 东亚 南亚 中东 西欧 北欧 南欧 东欧 "
    "日本 韩国 泰国 越南 印尼 印度尼西亚 马来西亚 菲律宾 柬埔寨 缅甸 老挝 印度 土耳其 希腊 "
    "意大利 法国 德国 英国 西班牙 葡萄牙 瑞士 冰岛 挪威 美国 加拿大 墨西哥 巴西 阿根廷 智利 "
    "澳大利亚 新西兰 埃及 南非 俄罗斯 海南 云南 新疆 西藏 四川 广东 浙江 江苏 福建"
).split()
BEIJING_DISTRICTS = (
    "东城区 西城区 朝阳区 海淀区 丰台区 石景山区 门头沟区 房山区 通州区 顺义区 昌平区 大兴区 "
    "怀柔区 平谷区 密云区 延庆区"
).split()
SHANGHAI_DISTRICTS = (
    "黄浦区 徐汇区 长宁区 静安区 普陀区 虹口区 杨浦区 闵行区 宝山区 嘉定区 浦东新区 金山区 "
    "松江区 青浦区 奉贤区 崇明区"
).split()
DISTRICTS = BEIJING_DISTRICTS + SHANGHAI_DISTRICTS
DISTRICT_CITY = {**{d: "北京" for d in BEIJING_DISTRICTS}, **{d: "上海" for d in SHANGHAI_DISTRICTS}}
CITIES = CN_CITIES + WORLD_CITIES
CITY_SET = set(CITIES)

# -- words ---------------------------------------------------------------------
# Longest first when stripped; the words carry no subject.
FILLERS = sorted(set(
    "然后 顺便 另外 同时 还要 帮我 帮忙 麻烦你 麻烦 请你 请帮我 请 能不能 能否 可以 可不可以 我想要 我想 我要 想要 想 给我 "
    "查一下 查一查 查查 查询 查找 查 找一下 找找 找出 找到 找 看看 看一下 看一看 看 搜一下 搜搜 搜索 搜 "
    "预订 订购 订 推荐一下 推荐 对比一下 对比 比较一下 比较 了解一下 了解 一下 一款 一个 一些 几款 哪些 什么 "
    "关于 有关 相关的 相关 上的 吗 呢 吧 啊 呀 是什么 是哪个".split()), key=len, reverse=True)
PLATFORMS = "淘宝 天猫 京东 拼多多 知乎 微博 贝壳 链家 小红书 抖音 高德 百度 携程 飞猪 美团 大众点评 豆瓣 闲鱼".split()
DEGREE_WORDS = "太 很 特别 那么 这么 过于 非常".split()

REFUSALS = ("不想说", "就不说", "不说", "不告诉", "不要问", "别问", "不提供", "不方便说", "无可奉告", "不想告诉", "保密")
INSUFFICIENT_PHRASES = ("无法", "不可用", "不含", "暂未", "缺失", "没有数据", "不支持", "unavailable",
                        "not available", "not included", "missing")
TRANSIENT_PHRASES = ("503", "502", "504", "稍后", "暂时", "try again later", "timeout", "timed out",
                     "temporarily", "unavailable", "超时", "繁忙", "rate limit", "429")
OUTAGE_PHRASES = ("503", "502", "service unavailable", "is down", "currently down", "outage", "服务不可用",
                  "服务故障", "系统故障", "temporarily unavailable", "系统性")
FORMAT_PHRASES = ("format", "格式", "iso", "yyyy-mm-dd", "invalid", "无效", "explicit")

WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": 5}
CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
CN_UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10000}


def norm(text: str) -> str:
    """NFKC, case folded (short texts cached: the policies read the same words at every step)."""
    return _norm(text) if len(text) <= _CACHED else unicodedata.normalize("NFKC", text).casefold()


_CACHED = 4096       # characters: longer texts are not kept


@functools.lru_cache(maxsize=8192)
def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def contains_any(text: str, phrases) -> bool:
    t = norm(text)
    return any(norm(p) in t for p in phrases)


def cn_number(text: str) -> float | None:
    """'500', '1.5', '一万五', '五千', '十二', '两万' -> a number; None if not a number."""
    text = text.strip()
    if not text:
        return None
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([十百千万])", text)
    if m:
        return float(m.group(1)) * CN_UNITS[m.group(2)]
    if not all(ch in CN_DIGITS or ch in CN_UNITS for ch in text):
        return None
    total, section, digit, last_unit = 0, 0, None, 1
    for ch in text:
        if ch in CN_DIGITS:
            digit = CN_DIGITS[ch]
        else:
            unit = CN_UNITS[ch]
            if unit == 10000:
                section = (section + (digit or 0)) * unit
                total += section
                section, digit = 0, None
            else:
                section += (1 if digit is None else digit) * unit
                digit = None
            last_unit = unit
    if digit is not None:
        # 一万五 = 15000, 三千五 = 3500: a trailing digit counts in the next lower unit
        section += digit * (last_unit // 10 if last_unit >= 10 and text[-2] in CN_UNITS else 1)
    return float(total + section)


NUM = r"(\d+(?:\.\d+)?|[零〇一二两三四五六七八九十百千万]+)"


def bigrams(text: str) -> frozenset[str]:
    """Character bigrams of the CJK/alphanumeric runs, plus whole latin words (short texts cached)."""
    return _bigrams(text) if len(text) <= _CACHED else _bigrams.__wrapped__(text)


@functools.lru_cache(maxsize=8192)
def _bigrams(text: str) -> frozenset[str]:
    t = norm(text)
    grams: set[str] = set()
    for run in re.findall(r"[\u4e00-\u9fff]+", t):
        grams.update(run[i:i + 2] for i in range(len(run) - 1))
        if len(run) == 1:
            grams.add(run)
    grams.update(w for w in re.findall(r"[a-z][a-z0-9]+", t) if len(w) > 2)
    return frozenset(grams)
