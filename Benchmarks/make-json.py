#!/usr/bin/env python3
"""Writes a realistic Douban-style JSON reply for benchmarking douctl's JSON printing.

usage: make-json.py [SIZE_MB] [OUTPUT]      (defaults: 50, statuses.json)

The reply is one compact array of status objects the way the server sends them: nested users
and locations, CJK text (some as raw UTF-8, some as \\uXXXX escapes), escaped slashes in URLs
(Douban writes "https:\\/\\/"), quotes and newlines in text, ints, floats, booleans, nulls,
empty containers. The random seed is fixed, so every run writes the same bytes.
"""
import json
import random
import sys

size_mb = float(sys.argv[1]) if len(sys.argv) > 1 else 50
output = sys.argv[2] if len(sys.argv) > 2 else "statuses.json"
target = int(size_mb * 1024 * 1024)
rng = random.Random(20240501)

CJK = "的一是不了人我在有他这为之大来以个中上们到说国和地也子时道出而要于就下得可你年生自会那后能对着事其里所去行过家十用发天如然作方成者多日都三小军二无同么经法当起与好看学进种将还分此心前面又定见只主没公从豆瓣电影读书音乐同城小组广播评论想看在读"
EMOJI = "😀🎬📚🎵❤️👍🔥✨"
WORDS = ["douban", "movie", "book", "review", "status", "hello", "world", "swift", "json", "api"]
CITIES = [("108288", "北京", "beijing"), ("108296", "上海", "shanghai"), ("118281", "广州", "guangzhou"),
          ("118282", "深圳", "shenzhen"), ("118172", "杭州", "hangzhou"), ("118318", "成都", "chengdu")]


def cjk_text(low, high):
    parts = []
    for _ in range(rng.randint(low, high)):
        roll = rng.random()
        if roll < 0.75:
            parts.append(rng.choice(CJK))
        elif roll < 0.85:
            parts.append(" " + rng.choice(WORDS) + " ")
        elif roll < 0.90:
            parts.append(rng.choice("，。！？、“”《》"))
        elif roll < 0.93:
            parts.append(rng.choice(EMOJI))
        elif roll < 0.96:
            parts.append("\n")
        elif roll < 0.98:
            parts.append('"')
        else:
            parts.append("\\")
    return "".join(parts)


def url(kind, ident):
    return "https://img%d.doubanio.com/view/%s/raw/public/p%d.jpg" % (rng.randint(1, 9), kind, ident)


def user():
    uid = rng.randint(1_000_000, 299_999_999)
    city = rng.choice(CITIES)
    return {
        "id": str(uid),
        "uid": "user%d" % uid,
        "name": cjk_text(2, 8),
        "avatar": "https://img%d.doubanio.com/icon/u%d-%d.jpg" % (rng.randint(1, 9), uid, rng.randint(1, 40)),
        "large_avatar": "https://img%d.doubanio.com/icon/ul%d-%d.jpg" % (rng.randint(1, 9), uid, rng.randint(1, 40)),
        "type": "user",
        "is_suicide": False,
        "is_banned": rng.random() < 0.01,
        "loc": {"id": city[0], "name": city[1], "uid": city[2]} if rng.random() < 0.8 else None,
        "followers_count": rng.randint(0, 100_000),
        "url": "https://www.douban.com/people/%d/" % uid,
    }


def status(index):
    sid = 3_170_000_000 + index
    images = []
    for _ in range(rng.choice([0, 0, 0, 1, 2, 4])):
        ident = rng.randint(2_000_000_000, 2_900_000_000)
        images.append({
            "normal": {"url": url("l", ident), "width": rng.randint(200, 1600), "height": rng.randint(200, 1600)},
            "large": {"url": url("raw", ident), "width": rng.randint(600, 4000), "height": rng.randint(600, 4000)},
            "is_animated": rng.random() < 0.05,
        })
    value = {
        "id": sid if rng.random() < 0.5 else str(sid),
        "created_at": "2024-%02d-%02d %02d:%02d:%02d" % (rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23),
                                                         rng.randint(0, 59), rng.randint(0, 59)),
        "title": rng.choice(["说：", "推荐", "想看", "在读", ""]),
        "text": cjk_text(10, 140),
        "user": user(),
        "reshared_count": rng.randint(0, 500),
        "like_count": rng.randint(0, 5000),
        "comments_count": rng.randint(0, 300),
        "rating": round(rng.uniform(0, 10), 1),
        "score": rng.random() * 100,
        "is_liked": rng.random() < 0.2,
        "is_private": False,
        "images": images,
        "entities": [],
        "attachments": [{"type": "movie", "title": cjk_text(2, 10), "href": "https://movie.douban.com/subject/%d/" % rng.randint(1_000_000, 36_000_000),
                         "media": [], "properties": {}}] if rng.random() < 0.3 else [],
        "reshared_status": None,
        "sharing_url": "https://www.douban.com/people/%d/status/%d/" % (rng.randint(1_000_000, 299_999_999), sid),
        "activity": rng.choice(["说", "转发", "推荐", "想看"]),
    }
    return value


def encode(value):
    # Douban escapes '/' as '\/'; about a third of replies come with CJK as \uXXXX escapes.
    text = json.dumps(value, ensure_ascii=rng.random() < 0.33, separators=(",", ":"))
    return text.replace("/", "\\/")


def main():
    written = 0
    index = 0
    with open(output, "w", encoding="utf-8") as out:
        out.write("[")
        while written < target:
            piece = ("," if index else "") + encode(status(index))
            out.write(piece)
            written += len(piece.encode("utf-8"))
            index += 1
        out.write("]")
    print("%s: %d statuses, %.1f MB" % (output, index, (written + 2) / 1024 / 1024))


if __name__ == "__main__":
    main()
