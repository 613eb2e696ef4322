#!/usr/bin/env python3
"""outputs-compare.py OUT - compares the records of tools/outputs-compare.sh.

OUT/old/cap and OUT/new/cap hold, per bats file and test number, one
record a program run: NAME.argv (NUL-separated, the program's name
first), NAME.out and NAME.err. Each record is normalised (what differs
between any two runs of one binary: temp directories, times, pids,
durations, counters of time), the lines of its output and error
sorted (targets checked side by side finish in any order), and the two
sides are compared test by test as multisets of (program, arguments,
output, error). Prints the totals and each record one side has and the
other lacks; exit 1 if any.
"""
import collections
import os
import re
import sys

# (pattern, replacement), applied in order to every argument, output and
# error: what two runs of the same binary may write differently.
NORMAL = [
    (r"/outputs?-compare[^/\s\"']*/(old|new)/", "<OUT>/"),
    (r"/(old|new)/(bin|cap)\b", "/<SIDE>/\\2"),
    (r"/tmp/bats-run-[A-Za-z0-9]+", "<BATS>"),
    (r"/tmp/[A-Za-z][A-Za-z0-9_.-]*\.[A-Za-z0-9]{6,10}\b", "<MKTEMP>"),
    (r"\btmp\.[A-Za-z0-9]{10}\b", "<MKTEMP>"),
    (r"\.[A-Za-z0-9]{6}\.tmp\b", ".<TMP>.tmp"),
    (r"\d{4}-\d\d-\d\d[T_ ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?",
     "<TS>"),
    (r"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d", "<TS>"),
    (r"\b1[6-9]\d{8}(\.\d+)?(e[+-]?\d+)?\b", "<EPOCH>"),
    (r"\b1\.[6-9]\d*e\+0?9\b", "<EPOCH>"),
    (r"(\"(pid|ppid|holder_pid|mainpid)\"\s*:\s*)\d+", "\\1<PID>"),
    (r"\b(pid|PID) \d+", "\\1 <PID>"),
    (r"/proc/\d+", "/proc/<PID>"),
    (r"(\"[a-z_]*(_s|_ms|_us|_ns|seconds|elapsed|duration|took|age|"
     r"latency|uptime|wait|waited|lag)\"\s*:\s*)-?[0-9.e+-]+", "\\1<DUR>"),
    (r"(_seconds(_sum|_total|_count|_bucket)?(\{[^}]*\})?) [0-9.e+-]+",
     "\\1 <DUR>"),
    (r"\b\d+(\.\d+)? ?(ms|s|us|ns)\b", "<DUR>"),
]
NORMAL = [(re.compile(p), r) for p, r in NORMAL]


def norm(text):
    for pat, rep in NORMAL:
        text = pat.sub(rep, text)
    return text


def lines(text):
    """The normalised lines of text, sorted: a program that checks its
    targets side by side writes their lines in the order they finish."""
    return "\n".join(sorted(norm(text).split("\n")))


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "backslashreplace")
    except FileNotFoundError:
        return ""


def records(cap):
    """{(file, test): Counter of normalised records}"""
    out = collections.defaultdict(collections.Counter)
    if not os.path.isdir(cap):
        return out
    for bats in sorted(os.listdir(cap)):
        for test in sorted(os.listdir(os.path.join(cap, bats))):
            d = os.path.join(cap, bats, test)
            for name in os.listdir(d):
                if not name.endswith(".argv"):
                    continue
                base = os.path.join(d, name[:-5])
                argv = read(base + ".argv").split("\0")[:-1]
                rec = (norm(" ".join(argv)), lines(read(base + ".out")),
                       lines(read(base + ".err")))
                out[(bats, test)][rec] += 1
    return out


def show(rec, width=400):
    argv, out, err = rec
    s = "    argv: " + argv[:width] + "\n"
    if out:
        s += "    out:  " + out[:width].replace("\n", "\n          ") + "\n"
    if err:
        s += "    err:  " + err[:width].replace("\n", "\n          ") + "\n"
    return s


def main():
    top = sys.argv[1]
    old = records(os.path.join(top, "old", "cap"))
    new = records(os.path.join(top, "new", "cap"))
    keys = sorted(set(old) | set(new))
    total = [0, 0]
    same = 0
    diffs = []
    for k in keys:
        a, b = old.get(k, collections.Counter()), new.get(k, collections.Counter())
        total[0] += sum(a.values())
        total[1] += sum(b.values())
        common = a & b
        same += sum(common.values())
        only_a, only_b = a - common, b - common
        if only_a or only_b:
            diffs.append((k, only_a, only_b))
    print(f"records: old {total[0]}, new {total[1]}; identical after "
          f"normalising {same}; tests with a difference {len(diffs)} of "
          f"{len(keys)}")
    for (bats, test), only_a, only_b in diffs:
        print(f"--- {bats} test {test}: old only {sum(only_a.values())}, "
              f"new only {sum(only_b.values())}")
        for rec in sorted(only_a):
            print("  old:\n" + show(rec), end="")
        for rec in sorted(only_b):
            print("  new:\n" + show(rec), end="")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
