"""Circles between the .c files of one folder, for check-layers.py.

The folders are the top-level folders of src/ (with their subfolders), and
python/src, the Python extension's. A file depends on another of its folder
when it uses an identifier that the other defines at file scope with external linkage
(a function, or a variable). The definitions and uses are read from the
sources with a small C scanner: comments, strings and #include lines
dropped, identifiers after "." or "->" (members) ignored, a file's own
definitions (static ones too) shadowing another file's. Both branches of
an #if count, so a circle through code that is built only sometimes is
found too.
"""
import os
import re

# Registration tables: a registry names the tables of the implementations
# it registers, and the implementations use the registry's helpers (the
# kernels' scratch memory, a device's common parts); these edges out of a
# registry are that registration, not a circle of design, and are not
# counted. (The op registry's table is spelled in ops/op_list.h, a header,
# which this scan does not read.)
REGISTRATION_TABLES = {
    "src/kernels/registry.c": "names each device kind's kernel table (cpu_kernels.c, ...)",
    "src/device/device_types.c": "names each device type's ops (cpu_device.c, ...)",
}

TOKEN = re.compile(r"[A-Za-z_]\w*|->|[=!<>]=|[{}()\[\];=,.]")
STRIP = re.compile(
    r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|^\s*#\s*include[^\n]*',
    re.S | re.M)
KEYWORDS = {"static", "extern", "typedef", "struct", "union", "enum", "const", "inline"}


def _blank(match):
    """A stripped piece, with its newlines kept so that lines still count."""
    return "\n" * match.group(0).count("\n") + " "


def scan(path):
    """(external definitions, all definitions, uses: name -> first line)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = STRIP.sub(_blank, f.read())
    tokens, directives = [], []  # a directive's identifiers are uses, never definitions
    continued = False  # the line before ended a directive's line with a backslash
    for number, line in enumerate(text.split("\n"), 1):
        directive = continued or line.lstrip().startswith("#")
        continued = directive and line.rstrip().endswith("\\")
        (directives if directive else tokens).extend((t, number) for t in TOKEN.findall(line))
    external, defined, uses = set(), set(), {}
    for stream in (tokens, directives):
        for i, (t, number) in enumerate(stream):
            if (t[0].isalpha() or t[0] == "_") and not (i and stream[i - 1][0] in (".", "->")):
                uses.setdefault(t, number)
    statement, i = [], 0
    while i < len(tokens):
        t, words = tokens[i][0], [w for w, _ in statement]
        if t == "{" and words == ["extern"]:  # extern "C" { ... }: its contents are file scope
            statement = []
        elif t == "{":
            end = _skip_braces(tokens, i)
            if words and words[-1] == ")" and "=" not in words:  # a function's body
                _define(words[:_opening(words)], words, external, defined)
                statement = []
            else:  # an initializer, or the body of a struct, union or enum
                statement.append(("{}", tokens[i][1]))
            i = end
            continue
        elif t == ";":
            # not a typedef, a declaration, a prototype, or a type's bare definition
            if "=" in words:
                _define(words[:words.index("=")], words, external, defined)
            elif words and "typedef" not in words and "extern" not in words and \
                    "(" not in words and words[-1] != "{}":
                _define(words, words, external, defined)
            statement = []
        elif t != "}":
            statement.append(tokens[i])
        i += 1
    return external, defined, uses


def _skip_braces(tokens, i):
    """The index after the } that closes the { at tokens[i]."""
    depth = 0
    while i < len(tokens):
        depth += {"{": 1, "}": -1}.get(tokens[i][0], 0)
        i += 1
        if depth == 0:
            break
    return i


def _opening(words):
    """The index of the ( that the last word, a ), closes."""
    depth = 0
    for k in range(len(words) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(words[k], 0)
        if depth == 0:
            return k
    return 0


def _define(name_part, words, external, defined):
    """Notes the definition named by the last identifier of name_part (before
    any [size])."""
    if "[" in name_part:
        name_part = name_part[:name_part.index("[")]
    names = [w for w in name_part if (w[0].isalpha() or w[0] == "_") and w not in KEYWORDS]
    if not names:
        return
    defined.add(names[-1])
    if "static" not in words:
        external.add(names[-1])


def _cycle_through(graph, start, members):
    """A shortest circle from start back to it within members: its nodes."""
    previous, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for node in frontier:
            for succ in sorted(graph.get(node, {})):
                if succ == start:
                    path = [node]
                    while previous[path[-1]] is not None:
                        path.append(previous[path[-1]])
                    return [start] + path[::-1][1:] + [start] if node != start else [start, start]
                if succ in members and succ not in previous:
                    previous[succ] = node
                    nxt.append(succ)
        frontier = nxt
    return None


def _components(graph, nodes):
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


# The folders of sources apart from src/, each one folder for the check.
WHOLE_FOLDERS = ["python/src"]


def folder_of(rel):
    """The folder whose files may not use one another in a circle: src/'s
    top-level folder of rel, else the one of WHOLE_FOLDERS that holds it."""
    for whole in WHOLE_FOLDERS:
        if rel.startswith(whole + "/"):
            return whole
    return rel.split("/")[1]


def file_circles(root):
    """(problems, number of files): each circle between a folder's .c files."""
    files = {}
    for base in ["src"] + WHOLE_FOLDERS:
        for folder, _, names in os.walk(os.path.join(root, base)):
            for name in sorted(names):
                if name.endswith((".c", ".cu")):
                    path = os.path.join(folder, name)
                    files[os.path.relpath(path, root)] = scan(path)
    owners = {}
    for rel, (external, _, _) in files.items():
        for name in external:
            owners.setdefault(name, []).append(rel)
    graph = {}  # file -> {file: (symbol, line)}
    for rel, (_, defined, uses) in files.items():
        if rel in REGISTRATION_TABLES:
            continue
        top = folder_of(rel)
        for name, number in uses.items():
            if name in defined:
                continue
            for other in owners.get(name, ()):
                if other != rel and folder_of(other) == top:
                    graph.setdefault(rel, {}).setdefault(other, (name, number))
    problems = []
    for component in _components(graph, files):
        start = min(component)
        cycle = _cycle_through(graph, start, component)
        steps = " -> ".join(
            f"{b} ({graph[a][b][0]})" for a, b in zip(cycle, cycle[1:]))
        line = graph[cycle[0]][cycle[1]][1]
        folder = folder_of(start)
        problems.append(f"{start}:{line}: circle in {folder}: {start} -> {steps}"
                        + (f" (and {len(component)} files in all)" if len(component) > len(cycle) - 1
                           else ""))
    return problems, len(files)
