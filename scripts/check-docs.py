#!/usr/bin/env python3
"""The front door stays short and the pages' links lead somewhere.

check-docs.py REPOSITORY checks README.md and docs/*.md:
- README.md's first screen, its lines before the first "## " heading, is at
  most FIRST_SCREEN lines;
- every link to a local file ([text](path), [text](path#anchor),
  [text](#anchor)) names a file or folder that exists, relative to the page,
  and an anchor names a heading of the Markdown page it points into, as
  GitHub spells headings' anchors.
Links inside code (fenced blocks, `inline`) and to other sites are not read.
Prints one line per fault, "FILE:LINE: what", and exits 1 when there is one.
"""
import os
import re
import sys

FIRST_SCREEN = 45

LINK = re.compile(r"\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^()\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def lines_outside_code(text):
    """(line number, line) of each line outside fenced code, with inline code
    blanked out."""
    fenced = False
    for number, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, re.sub(r"`[^`]*`", "``", line)


def anchors(path):
    """The anchors GitHub gives the headings of the Markdown file at path."""
    seen = {}
    found = set()
    with open(path, encoding="utf-8") as f:
        text = f.read()
    fenced = False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if not m:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(2))
        slug = re.sub(r"[^\w\- ]", "", title.lower().replace("`", "")).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else "%s-%d" % (slug, n))
    return found


def check_page(root, page, faults):
    path = os.path.join(root, page)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if page == "README.md":
        screen = text.split("\n")
        first = next((i for i, line in enumerate(screen) if line.startswith("## ")), len(screen))
        if first > FIRST_SCREEN:
            faults.append("%s:%d: the first screen (before the first '## ' heading) is %d lines, "
                          "more than %d: move the text to a page of docs/"
                          % (page, first, first, FIRST_SCREEN))
    for number, line in lines_outside_code(text):
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # another site, mailto:
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(dest):
                faults.append("%s:%d: link to '%s': no such file" % (page, number, target))
                continue
            if anchor and dest.endswith(".md") and anchor not in anchors(dest):
                faults.append("%s:%d: link to '%s': %s has no heading '#%s'"
                              % (page, number, target, os.path.relpath(dest, root), anchor))


def main(argv):
    if len(argv) != 2:
        print("usage: check-docs.py REPOSITORY", file=sys.stderr)
        return 2
    root = argv[1]
    pages = ["README.md"] + sorted(os.path.join("docs", name)
                                   for name in os.listdir(os.path.join(root, "docs"))
                                   if name.endswith(".md"))
    faults = []
    for page in pages:
        check_page(root, page, faults)
    for fault in faults:
        print(fault)
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
