#!/usr/bin/env python3
"""Prints the project's module graph as Package.swift declares it: each non-test target with
the project targets it depends on directly (packages' products are left out), lowest layer
first, so an edge that goes the wrong way stands out. `--dot` prints Graphviz instead.

    python3 dev/module-graph.py            # this checkout
    python3 dev/module-graph.py --at REV   # another commit (read with git show, not checked out)

It reads the manifest with `swift package dump-package`; run it when no build is running.
"""
import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile


def manifest(root: pathlib.Path, revision: str | None) -> dict:
    if revision is None:
        text = subprocess.run(["swift", "package", "dump-package"], cwd=root, check=True, capture_output=True, text=True).stdout
        return json.loads(text)
    # The manifest alone is enough for dump-package: the targets' folders need not exist.
    with tempfile.TemporaryDirectory() as scratch:
        source = subprocess.run(["git", "show", f"{revision}:Package.swift"], cwd=root, check=True, capture_output=True, text=True).stdout
        (pathlib.Path(scratch) / "Package.swift").write_text(source, encoding="utf-8")
        resolved = root / "Package.resolved"
        if resolved.exists():
            shutil.copy(resolved, pathlib.Path(scratch) / "Package.resolved")
        text = subprocess.run(["swift", "package", "dump-package"], cwd=scratch, check=True, capture_output=True, text=True).stdout
        return json.loads(text)


def edges(package: dict) -> dict:
    targets = {t["name"]: t for t in package["targets"] if t["type"] in ("regular", "executable", "system")}
    graph = {}
    for name, target in targets.items():
        if target["type"] == "system":
            continue
        depends = set()
        for dependency in target["dependencies"]:
            kind, value = next(iter(dependency.items()))
            if kind in ("byName", "target") and value[0] in targets and targets[value[0]]["type"] != "system":
                depends.add(value[0])
        graph[name] = sorted(depends)
    return graph


def layers(graph: dict) -> dict:
    depth = {}

    def visit(name: str, path: tuple) -> int:
        if name in depth:
            return depth[name]
        if name in path:
            raise SystemExit(f"module-graph: a cycle: {' -> '.join(path + (name,))}")
        depth[name] = 1 + max((visit(d, path + (name,)) for d in graph.get(name, [])), default=-1)
        return depth[name]

    for name in graph:
        visit(name, ())
    return depth


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--at", metavar="REV", help="the commit whose Package.swift to read")
    parser.add_argument("--dot", action="store_true", help="print Graphviz DOT")
    arguments = parser.parse_args()
    root = pathlib.Path(__file__).resolve().parent.parent
    graph = edges(manifest(root, arguments.at))
    depth = layers(graph)
    ordered = sorted(graph, key=lambda name: (depth[name], name))
    if arguments.dot:
        print("digraph recbot {\n  rankdir=BT;")
        for name in ordered:
            for dependency in graph[name]:
                print(f'  "{name}" -> "{dependency}";')
        print("}")
        return 0
    for name in ordered:
        print(f"{depth[name]:2d} {name}: {', '.join(graph[name]) or '-'}")
    print(f"{len(graph)} targets, {sum(len(d) for d in graph.values())} edges", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
