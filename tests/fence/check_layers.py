#!/usr/bin/python3
"""The layer check: every include edge between source folders must be one
that docs/ARCHITECTURE.md declares (its ```layers block). Fails on an
undeclared edge, on a source folder the block does not name, on a folder it
names that does not exist, and when it checked nothing. Also fails on a
`throw std::...` in product code: ARCHITECTURE.md says every exception tune
throws derives from tune::Error (base/error.h).

    check_layers.py SOURCE_DIR
"""
import os
import re
import sys

ROOTS = ["base", "search", "schedulers", "storage", "trainer", "tuner"]
SUFFIXES = (".h", ".cpp", ".c")


def declared(architecture):
    text = open(architecture, encoding="utf-8").read()
    block = re.search(r"```layers\n(.*?)```", text, re.S)
    if not block:
        sys.exit("check_layers: no ```layers block in " + architecture)
    allowed = {}
    for number, line in enumerate(block.group(1).splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        folder, _, deps = line.partition(":")
        folder = folder.strip()
        if folder in allowed:
            sys.exit(f"check_layers: {folder} is declared twice in the layers block")
        allowed[folder] = set(deps.split())
    return allowed


def folder_of(path, folders):
    """The deepest declared folder that holds `path` (a repository path)."""
    best = None
    for folder in folders:
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def main():
    source = sys.argv[1]
    allowed = declared(os.path.join(source, "docs", "ARCHITECTURE.md"))
    errors = []
    for folder, deps in allowed.items():
        if not os.path.isdir(os.path.join(source, folder)):
            errors.append(f"the layers block names {folder}/, which does not exist")
        for dep in deps:
            if dep not in allowed:
                errors.append(f"{folder} may include {dep}, which the block does not declare")
    checked = edges = 0
    for root in ROOTS:
        for directory, _, files in os.walk(os.path.join(source, root)):
            rel_dir = os.path.relpath(directory, source)
            if "report_assets" in rel_dir.split(os.sep):
                continue
            sources = [f for f in files if f.endswith(SUFFIXES)]
            if not sources:
                continue
            # An internal/ folder belongs to the folder above it (storage/internal).
            if os.path.basename(rel_dir) == "internal":
                rel_dir = os.path.dirname(rel_dir)
            if rel_dir not in allowed:
                errors.append(f"{rel_dir}/ holds sources but the layers block does not declare it")
                continue
            for name in sources:
                checked += 1
                path = os.path.join(directory, name)
                for number, line in enumerate(open(path, encoding="utf-8"), 1):
                    if re.search(r"\bthrow\s+std::", line.split("//", 1)[0]):
                        errors.append(f"{os.path.relpath(path, source)}:{number}: throws a std:: exception; "
                                      "throw tune::Error or a subclass (base/error.h)")
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m or "/" not in m.group(1):
                        continue
                    target = folder_of(os.path.dirname(m.group(1)), allowed)
                    if target is None:
                        continue  # not a source folder of tune (e.g. a generated header)
                    edges += 1
                    if target != rel_dir and target not in allowed[rel_dir]:
                        errors.append(f"{os.path.relpath(path, source)}:{number}: includes {m.group(1)} ({target}), "
                                      f"which docs/ARCHITECTURE.md does not let {rel_dir} depend on")
    if checked == 0 or edges == 0:
        errors.append(f"checked {checked} files and {edges} include edges: the check saw nothing")
    for e in errors:
        print("check_layers: " + e, file=sys.stderr)
    if errors:
        sys.exit(1)
    print(f"check_layers: {checked} files, {edges} include edges, all declared")


if __name__ == "__main__":
    main()
