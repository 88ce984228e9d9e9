#!/usr/bin/env python3
"""Every module a target imports must be a dependency it declares in Package.swift, and no
sans-IO protocol core may reach the system clock (target SystemClock), even transitively.

SwiftPM builds a target that imports a module it reaches only through another target's
dependencies, so an undeclared import compiles today and breaks when that other edge moves;
it also hides the real module graph from whoever reads Package.swift. Reads the manifest with
`swift package dump-package`, scans each target's sources for `import`, and lists what is not
declared. Exits 1 when something is missing.
"""
import json
import pathlib
import re
import subprocess
import sys

# Modules of the toolchain and the OS, importable without a declaration.
SYSTEM_MODULES = {
    "Foundation", "FoundationEssentials", "FoundationNetworking", "FoundationXML", "Glibc", "Musl", "Darwin", "Dispatch",
    "Testing", "XCTest", "Synchronization", "_Concurrency", "Observation", "os", "CoreFoundation", "PackagePlugin",
}
IMPORT = re.compile(r"^\s*(?:@testable\s+|@_implementationOnly\s+|@preconcurrency\s+|(?:public|package|internal)\s+)*"
                    r"import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)", re.M)


# The sans-IO cores: time is an input to them, never read (docs/development.md).
CORES = {"WireCoding", "Bitstreams", "STUN", "SDP", "RTP", "ICE", "DTLS", "SRTP", "SCTP", "TURN", "Media", "WebM",
         "PeerConnection", "SoraSignalingCore", "Recorder"}


def clock_paths(manifest: dict) -> list:
    """Cores whose dependency graph reaches SystemClock, with the path that does."""
    edges = {t["name"]: [next(iter(d.values()))[0] for d in t["dependencies"] if "byName" in d or "target" in d]
             for t in manifest["targets"]}
    found = []
    for core in sorted(CORES & edges.keys()):
        stack, seen = [[core]], set()
        while stack:
            path = stack.pop()
            if path[-1] == "SystemClock":
                found.append(" -> ".join(path))
                break
            for next_target in edges.get(path[-1], []):
                if next_target not in seen:
                    seen.add(next_target)
                    stack.append(path + [next_target])
    return found


def main() -> int:
    root = pathlib.Path(__file__).resolve().parent.parent
    manifest = json.loads(subprocess.run(["swift", "package", "dump-package"], cwd=root, check=True,
                                         capture_output=True, text=True).stdout)
    missing = []
    for target in manifest["targets"]:
        if target["type"] in ("system", "binary", "plugin"):
            continue
        declared = {target["name"]}
        for dependency in target["dependencies"]:
            kind, value = next(iter(dependency.items()))
            declared.add(value[0])  # byName: [name, condition]; product: [name, package, moduleAliases, condition]
        default = ("Tests/" if target["type"] == "test" else "Sources/") + target["name"]
        folder = root / (target.get("path") or default)
        for source in sorted(folder.rglob("*.swift")):
            for module in set(IMPORT.findall(source.read_text(encoding="utf-8"))):
                if module not in declared and module not in SYSTEM_MODULES:
                    missing.append(f"{source.relative_to(root)}: imports {module}, which target {target['name']} does not declare")
    for path in clock_paths(manifest):
        missing.append(f"{path}: a sans-IO core reaches the system clock; take time as an input instead")
    for line in missing:
        print(line, file=sys.stderr)
    if missing:
        print(f"check-imports: {len(missing)} problem(s): declare each import in its target's dependencies in Package.swift;"
              " keep SystemClock out of the cores", file=sys.stderr)
        return 1
    print("check-imports: every import is declared, and no core reaches the system clock")
    return 0


if __name__ == "__main__":
    sys.exit(main())
