#!/usr/bin/env python3
"""Import circles of a Rust library crate, read from its source, and its layer order.

The project's copy of ../shared/tools/module-cycles.py (CI runs it: `.ci/run`), with one
addition: the layer order written as the first paragraph of `src/lib.rs` (a numbered list,
lowest layer first, each item naming its modules as [`name`]) is checked too.

Usage: tests/module_cycles.py [--src DIR] [--check] [--quiet]

Reads every `.rs` file of the library under DIR (default `src`; `main.rs` and `bin/` are left
out), resolves the paths it names (`use crate::...`, `use super::...`, `crate::a::b` in code,
and `child::name` for its own child modules) to the files that define those modules, and prints:

  1. circles between top-level modules (`src/config.rs` and `src/http/` are two modules):
     the serious ones, since they mean two parts of the architecture each need the other;
  2. circles between files (Tarjan's strongly connected components), each with the names that
     tie every arrow, so that one can see which name to move.

`#[cfg(test)] mod ... { }` blocks are left out (tests may import anything). A parent module's
`mod child;` declaration is not an arrow; what the parent *uses* of the child is.

  3. circles between files that remain without the arrows into and out of `mod.rs` files: a
     circle inside a folder is accepted only where a `mod.rs` shares types with its children;
  4. imports that break the layer order of `lib.rs`: from a module to one in its own layer or
     a later one (a climbing arrow), and top-level modules the list does not place (or places
     twice, or that do not exist).

Exit status: 0; with --check, 1 when there is any circle between top-level modules, any
circle between files that no `mod.rs` is part of, or any break of the layer order (2 when
`lib.rs` has no layer list).
Reads text only: a path built by a macro is not seen.
"""
import os
import re
import sys
from collections import defaultdict


def strip_comments_and_strings(text):
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            i = n if j < 0 else j + len(end)
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]):
            m = re.match(r"'(\\[^']*|[^\\'])'", text[i:])
            i += len(m.group(0)) if m else 1
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_test_modules(text):
    """Removes `#[cfg(test)]` items that are inline modules, with their braces."""
    while True:
        m = re.search(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text)
        if not m:
            return text
        i, depth = m.end(), 1
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        text = text[:m.start()] + text[i:]


def split_top(s, sep=","):
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def expand_use(tree, prefix=()):
    """`a::{b::{C, D}, e as f, *}` -> [(a,b,C), (a,b,D), (a,e), (a,)]"""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree))
    if "{" in tree and tree.endswith("}"):
        head, body = tree.split("{", 1)
        head = [s for s in head.split("::") if s]
        out = []
        for part in split_top(body[:-1]):
            out += expand_use(part, prefix + tuple(head))
        return out
    segs = tuple(s for s in tree.split("::") if s and s != "*")
    if segs and segs[-1] == "self":
        segs = segs[:-1]
    return [prefix + segs]


class Crate:
    def __init__(self, src):
        self.src = src
        self.files = {}  # module path tuple -> file path
        for root, dirs, names in os.walk(src):
            dirs[:] = sorted(d for d in dirs if not (root == src and d == "bin"))
            for name in sorted(names):
                if not name.endswith(".rs"):
                    continue
                full = os.path.join(root, name)
                rel = os.path.relpath(full, src)
                if rel == "main.rs":
                    continue
                parts = rel[:-3].split(os.sep)
                if parts[-1] in ("mod", "lib"):
                    parts = parts[:-1]
                self.files[tuple(parts)] = full

    def module_of(self, path):
        """Longest prefix of `path` that is a file module; returns (module, first name after it)."""
        for k in range(len(path), -1, -1):
            if path[:k] in self.files:
                return path[:k], (path[k] if k < len(path) else None)
        return None, None

    def edges(self):
        edges = defaultdict(set)  # (from module, to module) -> names
        for mod, path in self.files.items():
            text = strip_test_modules(strip_comments_and_strings(open(path, encoding="utf-8").read()))
            is_dir_mod = os.path.basename(path) in ("mod.rs", "lib.rs")
            parent = mod if is_dir_mod else mod[:-1]  # what `super` means in this file...
            here = mod  # ...and `self`
            sup = parent[:-1] if is_dir_mod else parent

            def absolute(segs):
                segs = list(segs)
                if not segs:
                    return None
                base = None
                if segs[0] == "crate":
                    base, segs = (), segs[1:]
                elif segs[0] == "self":
                    base, segs = here, segs[1:]
                elif segs[0] == "super":
                    base, segs = sup, segs[1:]
                    while segs and segs[0] == "super":
                        base, segs = base[:-1], segs[1:]
                elif here + (segs[0],) in self.files:  # a child module named bare
                    base = here
                else:
                    return None
                return tuple(base) + tuple(segs)

            uses = []
            for m in re.finditer(r"\buse\s+([^;]+);", text):
                uses += expand_use(m.group(1))
            for m in re.finditer(r"(?<![\w:])((?:crate|super|self)(?:::\w+)+|\w+(?:::\w+)+)", text):
                uses.append(tuple(m.group(1).split("::")))
            for segs in uses:
                full = absolute(segs)
                if full is None:
                    continue
                target, name = self.module_of(full)
                if target is None or target == mod or not target:
                    continue
                # a parent naming its own child module only to declare or re-export is a child edge
                edges[(mod, target)].add(name or target[-1])
        return edges

    def fname(self, mod):
        return os.path.relpath(self.files[mod], os.path.dirname(self.src.rstrip("/")) or ".")


def read_layers(src):
    """The layer list of `<src>/lib.rs`: {module: layer number}, and problems found reading it."""
    path = os.path.join(src, "lib.rs")
    text = open(path, encoding="utf-8").read()
    items, current = [], None
    for line in text.splitlines():
        if not line.startswith("//!"):
            break
        body = line[3:]
        m = re.match(r"\s(\d+)\.\s", body)
        if m:
            current = [int(m.group(1)), body]
            items.append(current)
        elif current is not None and re.match(r"\s{3,}\S", body):
            current[1] += body
        elif current is not None:
            break  # the list ends at its first line that is not an item or its continuation
    layers, problems = {}, []
    for i, (number, body) in enumerate(items, 1):
        if number != i:
            problems.append(f"lib.rs: layer {number} is item {i} of the list")
        for name in re.findall(r"\[`(\w+)`\]", body):
            if name in layers and layers[name] != number:
                problems.append(f"lib.rs: {name} is placed in layers {layers[name]} and {number}")
            layers[name] = number
    return layers, problems


def sccs(nodes, succ):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ.get(v, ()):
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
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    args = sys.argv[1:]
    src = args[args.index("--src") + 1] if "--src" in args else "src"
    if not os.path.isdir(src):
        print(f"module-cycles: no folder {src!r} (run it from the crate's root or give --src)", file=sys.stderr)
        return 2
    crate = Crate(src)
    edges = crate.edges()

    # top-level modules
    top = defaultdict(lambda: defaultdict(set))
    for (a, b), names in edges.items():
        if a and b and a[0] != b[0]:
            top[a[0]][b[0]] |= {f"{crate.fname(a)} -> {crate.fname(b)}: " + ", ".join(sorted(names)[:6])}
    top_succ = {a: set(bs) for a, bs in top.items()}
    top_cycles = sccs({m[0] for m in crate.files if m}, top_succ)

    file_succ = defaultdict(set)
    for (a, b) in edges:
        file_succ[a].add(b)
    file_cycles = sccs(set(crate.files), file_succ)

    quiet = "--quiet" in args
    print(f"circles between top-level modules: {len(top_cycles)}")
    for i, comp in enumerate(top_cycles, 1):
        print(f"  circle {i}: {', '.join(comp)}")
        if not quiet:
            for a in comp:
                for b in sorted(top_succ.get(a, ())):
                    if b in comp:
                        for line in sorted(top[a][b]):
                            print(f"    {line}")
    print(f"circles between files: {len(file_cycles)}")
    for i, comp in enumerate(file_cycles, 1):
        print(f"  circle {i} ({len(comp)} files): {', '.join(crate.fname(m) for m in comp)}")
        if not quiet:
            for a in comp:
                for b in comp:
                    if (a, b) in edges:
                        print(f"    {crate.fname(a)} -> {crate.fname(b)}: {', '.join(sorted(edges[(a, b)])[:8])}")
    # A circle inside a folder is accepted only where it runs through a mod.rs that shares
    # types with its children: without the arrows into and out of mod.rs files none may remain.
    plain_succ = defaultdict(set)
    for (a, b) in edges:
        if not any(crate.files[m].endswith(os.sep + "mod.rs") for m in (a, b)):
            plain_succ[a].add(b)
    plain_cycles = sccs(set(crate.files), plain_succ)
    print(f"circles between files that no mod.rs is part of: {len(plain_cycles)}")
    for i, comp in enumerate(plain_cycles, 1):
        print(f"  circle {i} ({len(comp)} files): {', '.join(crate.fname(m) for m in comp)}")
        for a in comp:
            for b in comp:
                if b in plain_succ.get(a, ()):
                    print(f"    {crate.fname(a)} -> {crate.fname(b)}: {', '.join(sorted(edges[(a, b)])[:8])}")

    layers, problems = read_layers(src)
    if not layers:
        print(f"module-cycles: no layer list at the top of {src}/lib.rs", file=sys.stderr)
        return 2
    modules = {m[0] for m in crate.files if m}
    for m in sorted(modules - set(layers)):
        problems.append(f"{m}: a top-level module the layer list of lib.rs does not place")
    for m in sorted(set(layers) - modules):
        problems.append(f"{m}: placed by lib.rs's layer list, but no such module in {src}")
    for a in sorted(top):
        for b in sorted(top[a]):
            if a in layers and b in layers and layers[b] >= layers[a]:
                where = "its own layer" if layers[a] == layers[b] else f"layer {layers[b]}"
                for line in sorted(top[a][b]):
                    problems.append(f"{a} (layer {layers[a]}) imports from {where}: {line}")
    print(f"breaks of the layer order in lib.rs: {len(problems)}")
    for p in problems:
        print(f"  {p}")
    if "--check" in args and (top_cycles or plain_cycles or problems):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
