#!/usr/bin/env python3
"""outputs-compare.py OUT - compares the records of tools/outputs-compare.sh.

OUT/old/cap, OUT/new/cap and OUT/old2/cap (the old binaries again) hold,
per bats file and test number, one
record a program run: NAME.argv (NUL-separated, the program's name
first), NAME.out and NAME.err. Each record is normalised (what differs
between any two runs of one binary: temp directories, times, pids,
durations, counters of time), the lines of its output and error
sorted (targets checked side by side finish in any order), and the two
sides are compared test by test as multisets of (program, arguments,
output, error). A test whose records differ between the two runs of the
old binaries is timing's or order's: there, a record of the new binaries
counts as different only if it has a line that no old run of the same
command wrote (VF addresses and numbers masked). Prints the totals
and each difference; exit 1 if any.
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
    (r"(\"([a-z_]*_)?(s|ms|us|ns|seconds|elapsed|duration|took|age|"
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
    """The distinct normalised lines of text, sorted: a program that checks
    its targets side by side writes their lines in the order they finish,
    and a service writes a scan's lines as many times as it scans."""
    return "\n".join(sorted(set(norm(text).split("\n"))))


SHAPE = [(re.compile(r"\b[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\b"),
          "<VF>"), (re.compile(r"\b\d+\b"), "<N>")]


def shape(rec):
    """rec with its VF addresses and numbers masked."""
    out = []
    for text in rec:
        for pat, rep in SHAPE:
            text = pat.sub(rep, text)
        out.append(text)
    return tuple(out)


def shape_lines(rec):
    """The lines of rec's output and error, shaped, each marked with its
    stream."""
    _, out, err = shape(rec)
    return {("out", x) for x in out.split("\n")} | \
        {("err", x) for x in err.split("\n")}


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "backslashreplace")
    except FileNotFoundError:
        return ""


def records(cap):
    """{directory under cap: Counter of normalised records}; a program run
    outside a bats test (a hook libvirtd starts, a service runsv starts,
    with their own environment) is under 0/."""
    out = collections.defaultdict(collections.Counter)
    for d, _, names in os.walk(cap):
        for name in names:
            if not name.endswith(".argv"):
                continue
            base = os.path.join(d, name[:-5])
            argv = read(base + ".argv").split("\0")[:-1]
            rec = (norm(" ".join(argv)), lines(read(base + ".out")),
                   lines(read(base + ".err")))
            out[os.path.relpath(d, cap)][rec] += 1
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
    old, new, again = (records(os.path.join(top, side, "cap"))
                       for side in ("old", "new", "old2"))
    keys = sorted(set(old) | set(new) | set(again))
    total = [0, 0]
    same = 0
    diffs, noisy = [], []
    empty = collections.Counter()
    for k in keys:
        a, b, c = old.get(k, empty), new.get(k, empty), again.get(k, empty)
        total[0] += sum(a.values())
        total[1] += sum(b.values())
        common = a & b
        same += sum(common.values())
        if a == b:
            continue
        if a != c:
            # The old binary itself wrote this test's records two ways
            # (concurrent claims take the VFs in the lock's order, a
            # service scans as often as it has time to): a record of the
            # new one counts as different if it has a line, VF addresses
            # and numbers aside, that no old run of the same command
            # (shaped alike) wrote.
            seen = collections.defaultdict(set)
            for r in list(a) + list(c):
                seen[shape(r)[0]].update(shape_lines(r))
            only_b = collections.Counter(
                {r: n for r, n in b.items()
                 if not shape_lines(r) <= seen[shape(r)[0]]})
            noisy.append((k, only_b))
            if not only_b:
                continue
            diffs.append((k, collections.Counter(), only_b))
            continue
        diffs.append((k, a - common, b - common))
    print(f"records: old {total[0]}, new {total[1]}; identical after "
          f"normalising {same}; tests (or runs outside one) {len(keys)}; "
          f"differing between two runs of the old binaries {len(noisy)}; "
          f"with a difference the old runs do not explain {len(diffs)}")
    if noisy:
        print("old runs differ (timing, order): " +
              ", ".join(k for k, _ in noisy))
    for where, only_a, only_b in diffs:
        print(f"--- {where}: old only {sum(only_a.values())}, "
              f"new only {sum(only_b.values())}")
        for rec in sorted(only_a):
            print("  old:\n" + show(rec), end="")
        for rec in sorted(only_b):
            print("  new:\n" + show(rec), end="")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
