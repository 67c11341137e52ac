#!/usr/bin/env python3
"""Size and shape of the crate's code, for reviews of its structure: public items (the library
and the command line's workbench apart), names at the crate root, functions over 100 lines,
functions with six or more parameters (`self` not counted), and import cycles between the files
of one folder (the library's and the command line's).

Read from the text (comments and string literals removed), so it is a measure for comparing one
commit with another, not a compiler's count. Usage: scripts/code_metrics.py [--list] [SRC]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PUB_ITEM = re.compile(r"^\s*pub (fn|struct|enum|trait|type|const|static|mod|use) ", re.M)


def code_only(text: str) -> str:
    """The text with comments and the contents of string and char literals removed (line breaks
    kept, so line numbers hold)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 4]) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = '"' + hashes
            j = text.find(end, i + 2 + len(hashes))
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]):
            m = re.match(r"'(\\.|[^\\'])'", text[i:i + 4])
            out.append("' '")
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(code: str):
    """(name, first line, lines, parameters) of every `fn` with a body."""
    for m in re.finditer(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)\s*(<[^{;]*?>)?\s*\(", code):
        name = m.group(1)
        # The parameter list: from the `(` to its matching `)`.
        i, depth = m.end() - 1, 0
        while i < len(code):
            if code[i] == "(":
                depth += 1
            elif code[i] == ")":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        params = code[m.end():i]
        # The body: the first `{` after the signature, unless a `;` comes first (a declaration).
        j = i
        while j < len(code) and code[j] not in "{;":
            j += 1
        if j >= len(code) or code[j] == ";":
            continue
        k, depth = j, 0
        while k < len(code):
            if code[k] == "{":
                depth += 1
            elif code[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        first = code.count("\n", 0, m.start()) + 1
        last = code.count("\n", 0, k) + 1
        yield name, first, last - first + 1, count_params(params)


def count_params(params: str) -> int:
    depth, parts, cur = 0, [], ""
    for c in params:
        if c in "<([{":
            depth += 1
        elif c in ">)]}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    parts.append(cur)
    parts = [p.strip() for p in parts if p.strip()]
    return len([p for p in parts if not re.fullmatch(r"(&\s*('\w+\s+)?)?(mut\s+)?self(\s*:.*)?", p)])


def imports(code: str, module: list[str], kind: str) -> set[str]:
    """Paths a file names: `crate::a::b`, `super::c` (made absolute), expanded `use` groups."""
    paths = set()
    for m in re.finditer(r"\buse\s+([^;]+);", code):
        for p in expand(m.group(1).replace("\n", " "), ""):
            paths.add(p)
    for m in re.finditer(r"\b((?:crate|super)(?:::[A-Za-z_][A-Za-z0-9_]*)+)", code):
        paths.add(m.group(1))
    out = set()
    for p in paths:
        parts = p.split("::")
        if parts[0] == "super":
            base = module[:]
            while parts and parts[0] == "super":
                parts.pop(0)
                base = base[:-1]
            out.add("::".join(["crate", *base, *parts]))
        elif parts[0] == "crate":
            out.add(p)
    return out


def expand(tree: str, prefix: str):
    tree = tree.strip()
    if "{" in tree:
        head = tree[:tree.index("{")].strip().rstrip(":").rstrip(":")
        inner = tree[tree.index("{") + 1:tree.rindex("}")]
        base = f"{prefix}::{head}" if prefix and head else (head or prefix)
        depth, start = 0, 0
        for i, c in enumerate(inner):
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            elif c == "," and depth == 0:
                yield from expand(inner[start:i], base)
                start = i + 1
        yield from expand(inner[start:], base)
    elif tree:
        name = tree.split(" as ")[0].strip()
        yield f"{prefix}::{name}" if prefix else name


def module_of(root: Path, f: Path) -> list[str]:
    parts = list(f.relative_to(root).parts)
    stem = parts.pop()[:-3]
    if stem not in ("mod", "lib", "main"):
        parts.append(stem)
    return parts


def without_tests(code: str) -> str:
    """The code without `#[cfg(test)]` items (a test may reach any layer)."""
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]", code):
        if m.start() < i:
            continue
        out.append(code[i:m.start()])
        j = m.end()
        while j < len(code) and code[j] not in "{;":
            j += 1
        if j < len(code) and code[j] == "{":
            depth = 0
            while j < len(code):
                depth += {"{": 1, "}": -1}.get(code[j], 0)
                if depth == 0:
                    break
                j += 1
        i = j + 1
    out.append(code[i:])
    return "".join(out)


def cycles(root: Path, files: list[Path], codes: dict[Path, str]) -> list[list[str]]:
    """Strongly connected components of two or more files among the files of one folder (test
    code left out)."""
    codes = {f: without_tests(codes[f]) for f in files}
    mods = {tuple(module_of(root, f)): f for f in files}
    # Names a module re-exports (`pub use solve::SolveReport;` in ilp/mod.rs): a path through
    # the re-export counts as the module the name comes from.
    reexports: dict[tuple, tuple] = {}
    for m, f in mods.items():
        for u in re.finditer(r"^\s*pub(?:\(crate\))? use ([^;]+);", codes[f], re.M):
            for p in expand(u.group(1).replace("\n", " "), ""):
                parts = p.split("::")
                if parts[0] == "crate":
                    parts = parts[1:]
                elif parts[0] == "self":
                    parts = list(m) + parts[1:]
                elif parts[0] == "super":
                    parts = list(m[:-1]) + parts[1:]
                else:
                    parts = list(m) + parts
                src_mod = None
                for k in range(len(parts) - 1, 0, -1):
                    if tuple(parts[:k]) in mods:
                        src_mod = tuple(parts[:k])
                        break
                if src_mod and src_mod != m:
                    reexports[(*m, parts[-1])] = src_mod
    edges: dict[tuple, set] = {m: set() for m in mods}
    for m, f in mods.items():
        for p in imports(codes[f], list(m), ""):
            parts = tuple(p.split("::")[1:])
            for _ in range(4):  # follow re-exports (a few hops at most)
                hit = next((k for k in range(len(parts), 1, -1) if parts[:k] in reexports), None)
                if hit is None:
                    break
                parts = reexports[parts[:hit]] + parts[hit:]
            # The longest module prefix of the path that is a file of ours; the edge counts in
            # the folder the two share, between the entries (file or sub-folder) holding them.
            target = next((parts[:k] for k in range(len(parts), 0, -1) if parts[:k] in mods), None)
            if target is None or target == m:
                continue
            c = 0
            while c < min(len(m), len(target)) and m[c] == target[c]:
                c += 1
            if c < len(m) and c < len(target):
                a, b = m[:c + 1], target[:c + 1]
                edges.setdefault(a, set()).add(b)
                edges.setdefault(b, set())
    # Tarjan.
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted("/".join(c) or "<root>" for c in comp))

    sys.setrecursionlimit(10000)
    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def main(argv: list[str]) -> int:
    listing = "--list" in argv
    args = [a for a in argv if a != "--list"]
    src = Path(args[0] if args else "src")
    files = sorted(src.rglob("*.rs"))
    codes = {f: code_only(f.read_text()) for f in files}
    lab = [f for f in files if "lab" in f.relative_to(src).parts[:1]]
    binf = [f for f in files if f.relative_to(src).parts[:1] == ("bin",)]
    lib = [f for f in files if f not in lab and f not in binf]

    def pub(fs):
        return sum(len(PUB_ITEM.findall(codes[f])) for f in fs)

    librs = codes.get(src / "lib.rs", "")
    root_names = set()
    for m in re.finditer(r"^pub mod (\w+)", librs, re.M):
        root_names.add(m.group(1))
    for m in re.finditer(r"^pub fn (\w+)", librs, re.M):
        root_names.add(m.group(1))
    for m in re.finditer(r"^pub use ([^;]+);", librs, re.M):
        for p in expand(m.group(1).replace("\n", " "), ""):
            name = p.split("::")[-1]
            alias = re.search(rf"\b{re.escape(name)}\s+as\s+(\w+)", m.group(1))
            root_names.add(alias.group(1) if alias else name)
    long_fns, many_params = [], []
    for f in files:
        for name, line, length, params in functions(codes[f]):
            where = f"{f.relative_to(src)}:{line} {name}"
            if length > 100:
                long_fns.append((length, where))
            if params >= 6:
                many_params.append((params, where))
    lib_cycles = cycles(src, [f for f in files if f not in binf], codes)
    bin_root = src / "bin" / "coda"
    bin_cycles = cycles(bin_root, [f for f in binf if bin_root in f.parents or f.parent == bin_root],
                        codes) if bin_root.exists() else []
    print(f"public items: library {pub(lib)}, lab {pub(lab)}, command line {pub(binf)}")
    print(f"names at the crate root: {len(root_names)} ({', '.join(sorted(root_names))})")
    print(f"functions over 100 lines: {len(long_fns)}")
    if listing:
        for n, w in sorted(long_fns, reverse=True):
            print(f"  {n:4d} {w}")
    print(f"functions with >= 6 parameters: {len(many_params)}")
    if listing:
        for n, w in sorted(many_params, reverse=True):
            print(f"  {n:4d} {w}")
    print(f"import cycles between files of one folder: {len(lib_cycles) + len(bin_cycles)}")
    for c in lib_cycles + [[f"bin/coda/{x}" for x in c] for c in bin_cycles]:
        print(f"  {' <-> '.join(c)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
