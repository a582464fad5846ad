#!/usr/bin/env python3
"""Code-base figures for a maintainer: lines per target and the longest functions.

    scripts/code-stats.py [--longest N]

Lines are non-blank, non-comment lines of Swift (and C) under Sources/ and Tests/, grouped by
target folder. A function's length runs from its `func`/`init`/`deinit` line to its closing brace.
"""
import argparse
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DECLARATION = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|fileprivate|internal|package|static|class|"
                         r"override|mutating|nonisolated|final|convenience|required|@discardableResult)\s+)*"
                         r"(func\s+[^\s(<]+|init[?!]?|deinit)\b")


def source_files(top):
    for folder, _, names in os.walk(os.path.join(ROOT, top)):
        for name in sorted(names):
            if name.endswith((".swift", ".c", ".h")):
                yield os.path.join(folder, name)


def code_lines(lines):
    in_block = False
    count = 0
    for line in lines:
        text = line.strip()
        if in_block:
            if "*/" in text:
                in_block = False
            continue
        if text.startswith("/*"):
            in_block = "*/" not in text
            continue
        if text and not text.startswith("//"):
            count += 1
    return count


def functions(path, lines):
    """(length, name, path:line) for each function whose body opens on its declaration's lines."""
    found = []
    for index, line in enumerate(lines):
        match = DECLARATION.match(line)
        if not match:
            continue
        depth = 0
        opened = False
        for end in range(index, len(lines)):
            # Strings and comments rarely hold braces in this code base; good enough for a figure.
            text = re.sub(r'"(?:\\.|[^"\\])*"', '""', lines[end].split("//")[0])
            depth += text.count("{") - text.count("}")
            opened = opened or "{" in text
            if opened and depth <= 0:
                found.append((end - index + 1, match.group(1).replace("func ", ""),
                              f"{os.path.relpath(path, ROOT)}:{index + 1}"))
                break
            if not opened and end - index > 12:
                break  # a protocol requirement: no body
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--longest", type=int, default=10, help="how many of the longest functions to list")
    args = parser.parse_args()
    per_target = {}
    all_functions = []
    for top in ("Sources", "Tests"):
        for path in source_files(top):
            with open(path, encoding="utf-8") as handle:
                lines = handle.read().split("\n")
            target = os.path.relpath(path, ROOT).split(os.sep)[:2]
            key = "/".join(target)
            per_target[key] = per_target.get(key, 0) + code_lines(lines)
            if top == "Sources":
                all_functions.extend(functions(path, lines))
    print("lines of code per target")
    for key in sorted(per_target):
        print(f"  {per_target[key]:6d}  {key}")
    print(f"  {sum(v for k, v in per_target.items() if k.startswith('Sources')):6d}  Sources in all")
    print(f"  {sum(v for k, v in per_target.items() if k.startswith('Tests')):6d}  Tests in all")
    all_functions.sort(key=lambda item: -item[0])
    over = [item for item in all_functions if item[0] > 60]
    print(f"functions in Sources over 60 lines: {len(over)}; the longest {args.longest}:")
    for length, name, where in all_functions[:args.longest]:
        print(f"  {length:4d}  {name:32s} {where}")


if __name__ == "__main__":
    main()
