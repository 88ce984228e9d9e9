#!/usr/bin/env python3
"""Checks that every shared library a binary loads comes from the listed Debian packages or
their dependencies (Depends and Pre-Depends, recursively), so the runtime image's package
list is complete. With --allow-swift-toolchain, libraries from the Swift toolchain pass too
(a binary built without --static-swift-stdlib)."""
import re
import subprocess
import sys


def listed(path):
    with open(path) as f:
        return [line.split("#")[0].strip() for line in f if line.split("#")[0].strip()]


def closure(packages):
    seen, todo = set(), list(packages)
    while todo:
        package = todo.pop()
        if package in seen:
            continue
        seen.add(package)
        fields = subprocess.run(["dpkg-query", "-W", "-f=${Depends}, ${Pre-Depends}", package],
                                capture_output=True, text=True).stdout
        for alternative in fields.split(","):
            for name in alternative.split("|"):
                name = re.sub(r"\(.*?\)|:any", "", name).strip()
                if name:
                    todo.append(name)
    return seen


def main():
    packages, binary = sys.argv[1], sys.argv[2]
    allow_swift = "--allow-swift-toolchain" in sys.argv
    allowed = closure(listed(packages))
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    problems = []
    for line in out.splitlines():
        match = re.search(r"=>\s*(\S+)", line)
        if not match:
            continue
        path = match.group(1)
        if path == "not":
            problems.append(f"unresolved: {line.strip()}")
            continue
        if allow_swift and "/usr/lib/swift/" in path:
            continue
        owner = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True)
        if owner.returncode != 0:
            owner = subprocess.run(["dpkg", "-S", path.replace("/lib/", "/usr/lib/", 1)], capture_output=True, text=True)
        package = owner.stdout.split(":")[0].strip()
        if package not in allowed:
            problems.append(f"{path} comes from {package or 'no package'}, which runtime-packages.txt does not bring")
    for problem in problems:
        print("container:", problem)
    sys.exit(1 if problems else 0)


main()
