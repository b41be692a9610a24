#!/usr/bin/env python3
"""Checks that ctower's folders include one another only downwards.

Every #include "..." of a file under src/ or include/ctower/ names a header
that belongs to a layer: a header under src/ to its top-level folder
(src/kernels/cpu/conv.h belongs to kernels), a public header to the folder
that implements it (PUBLIC_OWNER below). A file may include headers of its
own layer and of lower layers, never of a higher one; within a layer, two
sibling subfolders (kernels/cpu and kernels/cuda) may not include each
other. The layers, lowest first, are those of docs/architecture.md.

Within a folder, the .c files may not use one another's functions and
variables in a circle: the graph of "file A uses a symbol that file B
defines" between the files of one top-level folder of src/, or of
python/src (the Python extension's, one folder), must be acyclic, so
that each file can be read, tested and moved with the files below it
alone. The graph comes from the sources (external definitions at file
scope, and the identifiers each file uses), so the check needs no build.

Usage: check-layers.py [ROOT]   (ROOT: the repository, default: this
script's parent folder). Prints each forbidden include as
"FILE:LINE: FOLDER (layer) includes HEADER (layer)" and each circle as
"FILE:LINE: circle in FOLDER: A -> B (symbol) -> ... -> A" and exits 1
when there is any, else prints a summary and exits 0.
"""
import os
import re
import sys

from symbol_graph import file_circles

LAYERS = [
    ["core"],
    ["cluster"],
    ["device", "data"],
    ["graph"],
    ["ops"],
    ["kernels"],
    ["exec"],
    ["models"],
    ["parallel"],
    ["checkpoint"],
    ["observe"],
    ["trainer"],
    ["commands"],
    ["config"],
    ["cli"],
]
RANK = {folder: rank for rank, folders in enumerate(LAYERS) for folder in folders}

PUBLIC_OWNER = {
    "status.h": "core",
    "tensor.h": "core",
    "device_name.h": "device",
    "cluster.h": "cluster",
    "session_options.h": "device",
    "data.h": "data",
    "graph.h": "graph",
    "ops.h": "ops",
    "session.h": "exec",
    "models.h": "models",
    "towers.h": "parallel",
    "optimizer.h": "trainer",
    "checkpoint.h": "checkpoint",
    "trainer.h": "trainer",
    "config.h": "config",
}
UMBRELLA = "ctower.h"  # the whole API, for users: no file of ctower includes it

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def owner_of_header(name, including_folder):
    """The folder a quoted include belongs to, and its subfolder ('' if none)."""
    if name.startswith("ctower/"):
        return PUBLIC_OWNER.get(name[len("ctower/"):]), ""
    parts = name.split("/")
    if len(parts) == 1:  # a header beside the including file
        return including_folder.split("/")[0], "/".join(including_folder.split("/")[1:])
    return parts[0], "/".join(parts[1:-1])


def check(root):
    problems, edges = [], set()
    sources = []
    for base in ("src", os.path.join("include", "ctower")):
        for folder, _, files in os.walk(os.path.join(root, base)):
            for f in sorted(files):
                if f.endswith((".c", ".h", ".cu", ".cuh")):
                    sources.append(os.path.join(folder, f))
    for path in sorted(sources):
        rel = os.path.relpath(path, root)
        if rel.startswith("include"):
            name = os.path.basename(rel)
            if name == UMBRELLA:
                continue
            folder, sub = PUBLIC_OWNER.get(name), ""
            if folder is None:
                problems.append(f"{rel}: a public header with no owner: add it to PUBLIC_OWNER")
                continue
        else:
            parts = os.path.dirname(os.path.relpath(path, os.path.join(root, "src"))).split("/")
            folder, sub = parts[0], "/".join(parts[1:])
            if folder not in RANK:
                problems.append(f"{rel}: folder src/{folder} is in no layer: add it to LAYERS")
                continue
        with open(path, encoding="utf-8", errors="replace") as text:
            for number, line in enumerate(text, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                header = match.group(1)
                if header == "ctower/" + UMBRELLA:
                    problems.append(f"{rel}:{number}: includes the umbrella header {header}")
                    continue
                target, target_sub = owner_of_header(header, f"{folder}/{sub}" if sub else folder)
                if target is None or target not in RANK:
                    continue  # a header of another project (a test's, CUDA's)
                edges.add((folder, target))
                if RANK[target] > RANK[folder] or (RANK[target] == RANK[folder] and target != folder):
                    problems.append(
                        f"{rel}:{number}: {folder} (layer {RANK[folder]}) includes {header} "
                        f"({target}, layer {RANK[target]})")
                elif target == folder and sub and target_sub and sub != target_sub and \
                        not sub.startswith(target_sub) and not target_sub.startswith(sub):
                    problems.append(
                        f"{rel}:{number}: {folder}/{sub} includes {header} of its sibling "
                        f"{folder}/{target_sub}")
    return problems, edges, len(sources)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))
    problems, edges, n_files = check(root)
    circles, n_graph_files = file_circles(root)
    problems += circles
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s): a folder may include only its own layer and lower "
              "ones, and no files of a folder may use one another in a circle "
              "(scripts/check-layers.py, docs/architecture.md)")
        return 1
    between = sorted(f"{a}->{b}" for a, b in edges if a != b)
    print(f"layers hold: {n_files} files, {len(between)} edges between folders, all downwards; "
          f"no circle between the {n_graph_files} .c files within a folder")
    return 0


if __name__ == "__main__":
    sys.exit(main())
