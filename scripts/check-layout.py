#!/usr/bin/env python3
"""Checks docs/layout.md's folder arrows against the launcher's real #include lines.

Each launcher folder (launcher/<folder>/, or launcher/<folder>/<sub>/ where that is a target of
its own) has the arrows its files' includes give it. The page lists them in its fenced block of
"folder ──► folders" lines. Fails, naming the file and the include, on an arrow the page does
not list or that no include gives, and on any cycle among the folders (an arrow that points back up). Prints the arrows
it derived."""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LAUNCHER = ROOT / "launcher"
PAGE = ROOT / "docs" / "layout.md"
NESTED = {"ssh/config", "horovod/updates"}  # sub-folders that are targets of their own
INCLUDE = re.compile(r'^\s*#\s*include\s+"launcher/([^"]+)"', re.M)


def folder_of(relative: str) -> str:
    parts = relative.split("/")
    if len(parts) == 1:
        return parts[0]  # main.cpp
    if len(parts) > 2 and "/".join(parts[:2]) in NESTED:
        return "/".join(parts[:2])
    return parts[0]


def derived_arrows():
    arrows = {}  # (from, to) -> first "file: include" seen
    for path in sorted(LAUNCHER.rglob("*")):
        if path.suffix not in (".h", ".cpp"):
            continue
        relative = path.relative_to(LAUNCHER).as_posix()
        source = folder_of(relative)
        for included in INCLUDE.findall(path.read_text()):
            target = folder_of(included)
            if target != source:
                arrows.setdefault((source, target), f"launcher/{relative}: launcher/{included}")
    return arrows


def listed_arrows():
    text = PAGE.read_text()
    block = re.search(r"```\n(main\.cpp.*?)```", text, re.S)
    if not block:
        sys.exit(f"{PAGE}: no fenced block of arrows starting with main.cpp")
    arrows, source = set(), None
    for line in block.group(1).splitlines():
        if "(none)" in line:  # the folders that include no other
            source = None
            continue
        line = re.sub(r"\(.*?\)", "", line)  # remarks
        if "," in line:  # the first line of those folders
            source = None
            continue
        if "──►" in line:
            left, right = line.split("──►")
            source = left.strip()
        elif source is None or not line.strip():
            continue
        else:
            right = line
        for target in right.split():
            arrows.add((source, target))
    return arrows


def cycle(arrows):
    graph = {}
    for a, b in arrows:
        graph.setdefault(a, set()).add(b)
    state = {}

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path + [node, nxt]
            if nxt not in state:
                found = visit(nxt, path + [node])
                if found:
                    return found
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def main():
    derived = derived_arrows()
    listed = listed_arrows()
    by_source = {}
    for a, b in sorted(derived):
        by_source.setdefault(a, []).append(b)
    for source, targets in sorted(by_source.items()):
        print(f"{source:<16}──► {'  '.join(targets)}")
    failed = False
    for (a, b), where in sorted(derived.items()):
        if (a, b) not in listed:
            print(f"check-layout: {a} ──► {b} is not in docs/layout.md ({where})", file=sys.stderr)
            failed = True
    for a, b in sorted(listed - set(derived)):
        print(f"check-layout: docs/layout.md lists {a} ──► {b}, which no include gives",
              file=sys.stderr)
        failed = True
    loop = cycle(derived)
    if loop:
        print("check-layout: the folders include each other: " + " ──► ".join(loop), file=sys.stderr)
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
