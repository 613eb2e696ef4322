#!/usr/bin/env python3
"""lint-layers.py - the library's layers and links (`make lint-layers`).

Usage: python3 tools/lint-layers.py BUILD

Reads the layer table of src/lib/README ("layer  modules" lines) and the
link maps the programs were linked with (BUILD/map/PROG.map, ld -Map),
and the library objects (BUILD/lib/*.o, with nm). Prints one finding a
line and exits 1 when there is one:

layer      a src/lib file includes the header of a higher layer, or a
           module is in no layer (or in two)
one-prog   a src/lib module is linked by one program only (it belongs in
           src/<prog>/), or by none
guest      a guest program links a module of the store layer
circle     two modules of src/lib call each other (by their symbols), or
           a program's part (src/PROG/x.c) calls back into src/PROG.c
prefix     a global function does not carry its file's name (STYLE,
           "Naming"): in x.c it is x or x_..., with a '-' of the name
           as '_'; the exceptions are ALLOWED below, each with its
           reason
"""
import os
import re
import subprocess
import sys

LAYERS = ["base", "json", "host", "store"]
GUESTS = ["kmsg-watch", "gpu-probe", "vsock-answer"]
LIB = "src/lib"

# The exceptions to the prefix rule, each with its reason: (file, a
# regular expression the whole name matches, why).
ALLOWED = [
    (r"src/[^/]+\.c", r"main", "a program's entry point"),
    (r"src/lib/log\.c", r"die", "the one exit of a program (STYLE, Errors)"),
    (r"src/vfstore/(?P<f>[a-z]+)\.c", r"cmd_(?P=f)(_[a-z_]+)?",
     "a vfstore command, git's cmd_add in builtin/add.c"),
    (r"src/lib/healthfile\.c", r"health_[a-z_]+",
     "healthfile.c owns struct health, vf-health.json (x_init/x_release)"),
    (r"src/lib/claims\.c", r"claim_json", "one claim of the ledger"),
    (r"src/lib/drain\.c", r"drains_[a-z_]+",
     "drain.c owns struct drains, vf-drain.json"),
    (r"src/lib/suspect\.c", r"suspects_[a-z_]+",
     "suspect.c owns struct suspects"),
    (r"src/sentinel-poll/logtail\.c", r"logtails_[a-z_]+",
     "logtail.c owns struct logtail and struct logtails, the set of them"),
]


def read_table(path):
    """{module: layer} from the README's table lines."""
    table, bad = {}, []
    for line in open(path, encoding="utf-8"):
        words = line.split()
        if len(words) < 2 or words[0] not in LAYERS:
            continue
        for mod in words[1:]:
            if mod in table and table[mod] != words[0]:
                bad.append(f"{path}: layer: {mod} is in two layers")
            table[mod] = words[0]
    return table, bad


def includes(path):
    pat = re.compile(r'^\s*#\s*include\s+"([^"]+)\.h"')
    with open(path, encoding="utf-8") as f:
        return [m.group(1) for m in map(pat.match, f) if m]


def check_layers(table, mods):
    bad = []
    for mod in sorted(mods):
        if mod not in table:
            bad.append(f"{LIB}/{mod}.c: layer: in no layer of "
                       f"{LIB}/README")
            continue
        rank = LAYERS.index(table[mod])
        for ext in (".c", ".h"):
            path = f"{LIB}/{mod}{ext}"
            if not os.path.exists(path):
                continue
            for inc in includes(path):
                if inc in table and LAYERS.index(table[inc]) > rank:
                    bad.append(f"{path}: layer: {table[mod]} includes "
                               f"{inc}.h of layer {table[inc]}")
    return bad


def map_members(path):
    """The libvfs.a members a link map says were pulled."""
    pat = re.compile(r"libvfs\.a\(([A-Za-z0-9_-]+)\.o\)")
    with open(path, encoding="utf-8", errors="replace") as f:
        return {m.group(1) for m in map(pat.search, f) if m}


def check_links(build, table, mods, progs):
    bad, users = [], {m: [] for m in mods}
    for prog in progs:
        path = f"{build}/map/{prog}.map"
        if not os.path.exists(path):
            bad.append(f"{path}: one-prog: no link map (make BUILD={build})")
            continue
        for mod in sorted(map_members(path)):
            users.setdefault(mod, []).append(prog)
            if prog in GUESTS and table.get(mod) == "store":
                bad.append(f"{path}: guest: {prog} links {mod} "
                           f"(store layer)")
    for mod in sorted(mods):
        if len(users[mod]) < 2:
            bad.append(f"{LIB}/{mod}.c: one-prog: linked by "
                       f"{', '.join(users[mod]) or 'no program'} "
                       f"(src/<prog>/ holds what one program links)")
    return bad


def nm(path, defined):
    args = ["nm", "-g", "--defined-only" if defined else "-u", path]
    out = subprocess.run(args, capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in out.stdout.splitlines() if line}


def circles(objs, label):
    """Pairs of objects each using a symbol the other defines."""
    defs = {o: nm(o, True) for o in objs}
    uses = {o: nm(o, False) for o in objs}
    bad = []
    for a in sorted(objs):
        for b in sorted(objs):
            if a < b and uses[a] & defs[b] and uses[b] & defs[a]:
                bad.append(f"{label(a)} <-> {label(b)}: circle: "
                           f"{sorted(uses[a] & defs[b])[0]}, "
                           f"{sorted(uses[b] & defs[a])[0]}")
    return bad


def check_circles(build, mods, progs):
    objs = [f"{build}/lib/{m}.o" for m in mods
            if os.path.exists(f"{build}/lib/{m}.o")]
    bad = circles(objs, lambda o: f"{LIB}/{os.path.basename(o)[:-2]}.c")
    for prog in progs:
        main = f"{build}/prog/{prog}.o"
        d = f"{build}/prog/{prog}"
        if not os.path.exists(main) or not os.path.isdir(d):
            continue
        mine = nm(main, True) - {"main"}
        for part in sorted(os.listdir(d)):
            if part.endswith(".o"):
                back = nm(f"{d}/{part}", False) & mine
                if back:
                    bad.append(f"src/{prog}/{part[:-2]}.c: circle: calls "
                               f"{sorted(back)[0]} of src/{prog}.c")
    return bad


def defined_functions(obj):
    out = subprocess.run(["nm", "-g", "--defined-only", obj],
                         capture_output=True, text=True, check=True)
    return sorted(w[2] for w in (line.split() for line in
                                 out.stdout.splitlines())
                  if len(w) == 3 and w[1] == "T")


def sources(build, mods, progs):
    """(object, source) of every library module, program and part."""
    pairs = [(f"{build}/lib/{m}.o", f"{LIB}/{m}.c") for m in mods]
    for prog in progs:
        pairs.append((f"{build}/prog/{prog}.o", f"src/{prog}.c"))
        d = f"src/{prog}"
        if os.path.isdir(d):
            pairs += [(f"{build}/prog/{prog}/{f[:-2]}.o", f"{d}/{f}")
                      for f in sorted(os.listdir(d)) if f.endswith(".c")]
    return [(o, c) for o, c in pairs if os.path.exists(o)]


def allowed(src, name):
    for fpat, npat, _ in ALLOWED:
        m = re.fullmatch(fpat, src)
        if m and re.fullmatch(npat.replace("(?P=f)",
                                           m.groupdict().get("f", "")),
                              name):
            return True
    return False


def check_prefixes(build, mods, progs):
    bad = []
    for obj, src in sources(build, mods, progs):
        stem = os.path.basename(src)[:-2].replace("-", "_")
        for name in defined_functions(obj):
            if name == stem or name.startswith(stem + "_") or \
                    allowed(src, name):
                continue
            bad.append(f"{src}: prefix: {name} (a function of {src} "
                       f"starts with {stem}_)")
    return bad


def main(argv):
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    build = argv[1]
    mods = sorted(f[:-2] for f in os.listdir(LIB) if f.endswith(".c"))
    progs = sorted(f[:-2] for f in os.listdir("src") if f.endswith(".c"))
    table, bad = read_table(f"{LIB}/README")
    bad += check_layers(table, mods)
    bad += check_links(build, table, mods, progs)
    bad += check_circles(build, mods, progs)
    bad += check_prefixes(build, mods, progs)
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
