#!/usr/bin/env python3
"""prom2series.py - metrics textfiles to `promtool test rules` input_series.

Usage: prom2series.py [--labels K=V,...] SNAPSHOT:STEPS... [--labels ...]...

Each SNAPSHOT is a directory holding the *.prom textfiles of one host as
its services left them at one moment (what node_exporter's textfile
collector would serve then). The snapshots follow each other on the test's
clock: the first is scraped at steps 0 .. STEPS-1, the next at the STEPS
after those, and so on; one step is one minute (the test group's
`interval` must be 1m). Each --labels starts the snapshots of another
host, from step 0 again. Prints a JSON array of {"series": ...,
"values": ...} objects, the input_series of one test group of a promtool
unit test file (which is YAML, so JSON is fine).

What it does to the samples, and nothing else:
- each sample becomes one series, its labels those of the file plus
  --labels (the target labels Prometheus adds: instance, job); a label
  the file already has is an error (Prometheus would rename it);
- its value is repeated, unchanged, at every step of each snapshot that
  holds it; before its first snapshot it has no sample ("_"); in the
  first snapshot after one that held it and that does not, it gets a
  staleness marker ("stale") as Prometheus writes when a series leaves a
  scrape, then nothing;
- a gauge whose name ends in _timestamp_seconds holds a wall-clock time
  the program wrote. It must be within 120 s before the file's mtime
  (else: an error, the program wrote no recent Unix time), and it becomes
  the time of the snapshot's first step on the test's clock (seconds since
  the start of the test), as if written just before that scrape: so
  `time() - x` at eval_time E is E minus that step's time.
The same series twice in one snapshot (two files or two lines) is an
error, as it is for node_exporter. Lines that are not samples (# HELP,
# TYPE, blank) are skipped; a sample with its own timestamp is an error.
Exit status: 0, or 1 with a message on stderr.
"""

import json
import os
import re
import sys

NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')
SAMPLE = re.compile(r'^(' + NAME + r')(?:\{(.*)\})?\s+(\S+)\s*$')
INTERVAL_S = 60


def die(msg):
    sys.stderr.write('prom2series: %s\n' % msg)
    sys.exit(1)


def parse_labels(text, where):
    """'a="x",b="y"' -> [(a, x), (b, y)] (values still escaped)."""
    out, pos = [], 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        if m is None:
            die('%s: bad labels {%s}' % (where, text))
        out.append((m.group(1), m.group(2)))
        pos = m.end()
    return out


def series_key(name, labels):
    """The series as promtool reads it: name{k="v",...}, labels sorted."""
    inner = ','.join('%s="%s"' % kv for kv in sorted(labels))
    return '%s{%s}' % (name, inner)


def read_snapshot(path, extra, step0):
    """{series: value} of every sample of the *.prom files in path."""
    got = {}
    files = sorted(f for f in os.listdir(path) if f.endswith('.prom'))
    if not files:
        die('%s: no *.prom file' % path)
    for f in files:
        full = os.path.join(path, f)
        mtime = os.stat(full).st_mtime
        with open(full, encoding='utf-8') as fh:
            for n, line in enumerate(fh, 1):
                where = '%s:%d' % (full, n)
                if not line.strip() or line.startswith('#'):
                    continue
                m = SAMPLE.match(line)
                if m is None:
                    die('%s: not a sample (a timestamp?): %r' % (where, line))
                name, value = m.group(1), m.group(3)
                labels = parse_labels(m.group(2) or '', where)
                names = {k for k, _ in labels}
                for k, v in extra:
                    if k in names:
                        die('%s: the file sets target label %s' % (where, k))
                    labels.append((k, v))
                if name.endswith('_timestamp_seconds'):
                    value = rebase(float(value), mtime, step0, where)
                key = series_key(name, labels)
                if key in got:
                    die('%s: %s written twice' % (where, key))
                got[key] = value
    return got


def rebase(ts, mtime, step0, where):
    """A recent wall-clock time -> the snapshot's first step (seconds)."""
    if not mtime - 120 <= ts <= mtime + 1:
        die('%s: %r is not a time just before the file was written (%r)'
            % (where, ts, mtime))
    return '%d' % (step0 * INTERVAL_S)


def values(key, snaps):
    """promtool's values string of one series over every snapshot."""
    out, seen = [], False
    for got, steps in snaps:
        if key in got:
            out += [got[key]] * steps
            seen = True
        elif seen:
            out += ['stale'] + ['_'] * (steps - 1)
            seen = False
        else:
            out += ['_'] * steps
    return ' '.join(out)


def parse_labels_arg(arg):
    """'instance=h1:9100,job=node' -> [(instance, h1:9100), (job, node)]."""
    extra = []
    for kv in arg.split(','):
        k, sep, v = kv.partition('=')
        if not sep or not re.fullmatch(r'[a-zA-Z_][a-zA-Z0-9_]*', k):
            die('bad --labels item %r' % kv)
        extra.append((k, v.replace('\\', '\\\\').replace('"', '\\"')))
    return extra


def parse_args(argv):
    """[(labels, [(path, steps)...])...]: one group per --labels."""
    groups = [([], [])]
    while argv:
        a = argv.pop(0)
        if a == '--labels' and argv:
            groups.append((parse_labels_arg(argv.pop(0)), []))
            continue
        path, sep, steps = a.rpartition(':')
        if not sep or not steps.isdigit() or int(steps) < 1:
            die('bad SNAPSHOT:STEPS %r' % a)
        groups[-1][1].append((path, int(steps)))
    groups = [g for g in groups if g[1]]
    if not groups:
        die('usage: prom2series.py [--labels K=V,...] SNAPSHOT:STEPS... ...')
    return groups


def group_series(extra, args):
    """The input series of one host: its snapshots, one after the other."""
    snaps, step0 = [], 0
    for path, steps in args:
        snaps.append((read_snapshot(path, extra, step0), steps))
        step0 += steps
    keys = sorted({k for got, _ in snaps for k in got})
    return [{'series': k, 'values': values(k, snaps)} for k in keys]


def main(argv):
    out = []
    for extra, args in parse_args(list(argv)):
        out += group_series(extra, args)
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write('\n')


if __name__ == '__main__':
    main(sys.argv[1:])
