#!/usr/bin/env python3
"""The shape of the code, checked (CONTRIBUTING.md "Layout"):

1. No code file of `src/`, `actors/src/` or `benches/` has more than 600 lines before its test
   module (`#[cfg(test)]` at the start of a line, or the end of the file).
2. No import loop between files: a file's imports are read from its `use` items (`crate::…`,
   `super::…`, `self::…`, and a child's `child::…`; nested groups included) and from
   `crate::`/`super::`/`self::` paths in its code; each names the file that defines the item,
   following `pub use` re-exports to it. A parent declaring its children (`mod x;`) is not an
   import; a parent re-exporting a child's item and the child taking an item from the parent's
   file is a loop (the shared item belongs in a file of its own).
3. Every link of README.md and docs/*.md to a file or a heading of this repository resolves.
4. README.md and every page of docs/ are pulled into the runtime's doctests
   (`include_str!` in actors/src/lib.rs), so `cargo test` compiles their Rust examples.

Prints each violation and exits 1 when there is one; `--list` prints every file's size and
imports. Usage: check_structure.py [--list] [ROOT]
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

MAX_LINES = 600
CODE_DIRS = {"src": "mcpd", "actors/src": "mcpd_actors", "benches": None}
TEST_START = re.compile(r"^#\[cfg\(test\)\]", re.M)
USE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M)
PATH = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")


def code_lines(text: str) -> int:
    """Lines before the first test module."""
    match = TEST_START.search(text)
    body = text[: match.start()] if match else text
    return body.count("\n") + (0 if body.endswith("\n") or not body else 1)


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def expand(tree: str) -> list[str]:
    """The paths of a `use` tree: `a::{b, c::{d, e}}` -> `a::b`, `a::c::d`, `a::c::e`."""
    tree = re.sub(r"\s+", "", tree)
    depth, start = 0, None
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and start is not None:
                prefix, inner, rest = tree[:start], tree[start + 1 : i], tree[i + 1 :]
                parts, level, current = [], 0, ""
                for c in inner:
                    if c == "{":
                        level += 1
                    elif c == "}":
                        level -= 1
                    if c == "," and level == 0:
                        parts.append(current)
                        current = ""
                    else:
                        current += c
                if current:
                    parts.append(current)
                out = []
                for part in parts:
                    out.extend(expand(prefix + part + rest))
                return out
    return [re.sub(r"\bas\b.*$", "", tree.split(" as ")[0])]


class Crate:
    """The module files of one crate (or of the benches)."""

    def __init__(self, root: Path, base: str):
        self.root = root
        self.base = base
        self.files: dict[tuple[str, ...], Path] = {}
        self._texts: dict[Path, str] = {}
        self._reexports: dict[tuple[str, ...], dict[str, str]] = {}
        for path in sorted((root / base).rglob("*.rs")):
            self.files[self.module_of(path)] = path

    def module_of(self, path: Path) -> tuple[str, ...]:
        rel = path.relative_to(self.root / self.base).with_suffix("")
        parts = list(rel.parts)
        if parts and parts[-1] in ("mod", "lib", "main"):
            parts.pop()
        return tuple(parts)

    def crate_root(self, module: tuple[str, ...]) -> tuple[str, ...]:
        """The module path of the crate root a module belongs to (benches: each bench)."""
        if self.base == "benches" and module:
            return module[:1]
        if self.base == "actors/src" and module[:1] == ("bin",):
            return module[:2]
        return ()

    def resolve(self, module: tuple[str, ...], path: str, depth: int = 0) -> Path | None:
        """The file holding what `path` (as written in `module`'s file) names."""
        segments = path.split("::")
        if segments[0] == "crate":
            current = list(self.crate_root(module))
            segments = segments[1:]
        else:
            current = list(module)
            if segments[0] == "self":
                segments = segments[1:]
            while segments and segments[0] == "super":
                if current:
                    current.pop()
                segments = segments[1:]
        best = tuple(current)
        rest = list(segments)
        for segment in segments:
            candidate = tuple(current + [segment])
            if candidate in self.files:
                current.append(segment)
                best = candidate
                rest.pop(0)
            else:
                break
        return self.through_reexports(best, rest, depth)

    def through_reexports(self, module: tuple[str, ...], rest: list[str], depth: int) -> Path | None:
        """The file defining `rest[0]` of `module`: the module's own file, or, for an item it
        only re-exports (`pub use other::Item`), the file that defines it there."""
        file = self.files.get(module)
        if file is None or not rest or depth > 8:
            return file
        item = rest[0]
        if re.search(rf"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:struct|enum|fn|trait|type|const|static|union|mod)\s+{re.escape(item)}\b", self.text(file), re.M):
            return file
        source = self.reexports(module).get(item)
        if source is None:
            return file
        return self.resolve(module, source, depth + 1) or file

    def text(self, file: Path) -> str:
        if file not in self._texts:
            self._texts[file] = strip_comments(file.read_text(encoding="utf-8"))
        return self._texts[file]

    def reexports(self, module: tuple[str, ...]) -> dict[str, str]:
        """What a module's file re-exports (`pub use …`), by the name it exports it as."""
        if module in self._reexports:
            return self._reexports[module]
        out: dict[str, str] = {}
        for use in re.finditer(r"^\s*pub(?:\([^)]*\))?\s+use\s+([^;]+);", self.text(self.files[module]), re.M):
            for full in expand(use.group(1)):
                name = full.split("::")[-1]
                if name in ("*", "self"):
                    continue
                if not full.startswith(("crate::", "super::", "self::")):
                    full = "self::" + full
                out[name] = full
        self._reexports[module] = out
        return out


def imports(crate: Crate, module: tuple[str, ...], path: Path) -> set[Path]:
    text = strip_comments(path.read_text(encoding="utf-8"))
    match = TEST_START.search(text)
    text = text[: match.start()] if match else text
    found: set[Path] = set()
    names: list[str] = []
    for use in USE.finditer(text):
        names.extend(expand(use.group(1)))
    names.extend(m.group(1) for m in PATH.finditer(USE.sub("", text)))
    for name in names:
        if not name.startswith(("crate::", "super::", "self::")):
            # A path relative to this module: a child's item (`pub use child::Item`).
            if tuple(module) + (name.split("::")[0],) not in crate.files:
                continue
            name = "self::" + name
        target = crate.resolve(module, name)
        if target is not None and target != path:
            found.add(target)
    return found


def find_cycles(graph: dict[Path, set[Path]]) -> list[list[Path]]:
    """Strongly connected components with more than one file (Tarjan)."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on: set[Path] = set()
    out: list[list[Path]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: Path) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def check_links(root: Path) -> list[str]:
    problems = []
    docs = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    anchors: dict[Path, set[str]] = {}
    for doc in docs:
        seen: dict[str, int] = {}
        found = set()
        in_code = False
        for line in doc.read_text(encoding="utf-8").splitlines():
            if line.startswith("```"):
                in_code = not in_code
            if in_code or not line.startswith("#"):
                continue
            base = slug(line.lstrip("#"))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        anchors[doc.resolve()] = found
    link = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
    for doc in docs:
        in_code = False
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("```"):
                in_code = not in_code
            if in_code:
                continue
            for target in link.findall(re.sub(r"`[^`]*`", "", line)):
                if re.match(r"^[a-z]+:", target):
                    continue
                file, _, anchor = target.partition("#")
                path = (doc.parent / file).resolve() if file else doc.resolve()
                where = f"{doc.relative_to(root)}:{number}"
                if not path.exists():
                    problems.append(f"{where}: link to {target}: no such file")
                elif anchor and path.suffix == ".md" and anchor not in anchors.get(path, set()):
                    problems.append(f"{where}: link to {target}: no such heading")
    return problems


def check_guide(root: Path) -> list[str]:
    """Every page of the guide is included into a doctest in actors/src/lib.rs."""
    lib = (root / "actors/src/lib.rs").read_text(encoding="utf-8")
    included = set(re.findall(r'include_str!\("\.\./\.\./([^"]+)"\)', lib))
    pages = ["README.md", *(f"docs/{p.name}" for p in sorted((root / "docs").glob("*.md")))]
    return [f"{page}: not pulled into a doctest (actors/src/lib.rs, mod guide)" for page in pages if page not in included]


def main(argv: list[str]) -> int:
    listing = "--list" in argv
    args = [a for a in argv if a != "--list"]
    root = Path(args[0] if args else Path(__file__).resolve().parent.parent)
    problems: list[str] = []
    for base in CODE_DIRS:
        crate = Crate(root, base)
        graph: dict[Path, set[Path]] = {}
        for module, path in crate.files.items():
            lines = code_lines(path.read_text(encoding="utf-8"))
            if lines > MAX_LINES:
                problems.append(f"{path.relative_to(root)}: {lines} lines before its tests (at most {MAX_LINES})")
            graph[path] = imports(crate, module, path)
            if listing:
                targets = ", ".join(str(t.relative_to(root)) for t in sorted(graph[path]))
                print(f"{lines:5} {path.relative_to(root)} -> {targets}")
        for cycle in find_cycles(graph):
            shown = " <-> ".join(str(p.relative_to(root)) for p in cycle)
            problems.append(f"import loop: {shown}")
    problems.extend(check_links(root))
    problems.extend(check_guide(root))
    for problem in problems:
        print(problem)
    print(f"check_structure: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
