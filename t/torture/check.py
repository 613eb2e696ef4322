#!/usr/bin/python3
"""check.py DIR SECONDS - the verdict of a torture run (see torture.sh).

Reads DIR/ops.tsv (one line per operation: worker, seq, op, start, end,
exit status, injected fault, arguments, first output line), the kept
poll/apply outputs of the scans, the sampler's `vfstore check` results
and the final vf-health.json / vf-claims.json. An operation "could have
come after" another when its end is later than the other's start, since
operations overlap. Prints the counts and every violated property;
exits 1 if any.
"""
import bisect
import collections
import json
import os
import sys

THRESHOLD = 2
ACK = ("recorded", "quarantined")


class Op:
    def __init__(self, f):
        self.wid, self.seq, self.op = f[0], int(f[1]), f[2]
        self.s, self.e, self.rc = float(f[3]), float(f[4]), int(f[5])
        self.fault, self.a1, self.a2, self.a3 = f[6], f[7], f[8], f[9]
        self.out = json_or_none(f[10]) if len(f) > 10 else None
        self.polled = []    # scans: check lines sentinel-poll emitted
        self.applied = []   # scans: lines vfstore apply answered


def json_or_none(text):
    try:
        return json.loads(text)
    except ValueError:
        return None


def read_lines(path):
    out = []
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                obj = json_or_none(line)
                if isinstance(obj, dict):
                    out.append(obj)
    return out


def load_ops(d):
    ops = []
    with open(os.path.join(d, "ops.tsv"), encoding="utf-8") as f:
        for line in f:
            op = Op(line.rstrip("\n").split("\t"))
            if op.op == "scan":
                op.polled = read_lines(op.a1)
                op.applied = read_lines(op.a2)
            ops.append(op)
    return ops


class Facts:
    """Per-VF events derived from the log."""

    def __init__(self, ops):
        self.fail_acks = []       # (vf, instance, assigned_at, start)
        self.quarantines = []     # (vf, start, end): certainly quarantined
        self.removers = collections.defaultdict(list)  # may drop failures
        self.lifters = collections.defaultdict(list)   # may lift quarantine
        self.adders = collections.defaultdict(list)    # may add a record
        for op in ops:
            self.add(op)

    def add(self, op):
        out = op.out or {}
        if op.op == "report-failure":
            self.adders[op.a1].append(op)
            if op.rc == 0 and out.get("outcome") in ACK:
                self.fail_acks.append((op.a1, op.a2, op.a3, op.s))
            if op.rc == 0 and out.get("outcome") == "quarantined":
                self.quarantines.append((op.a1, op.s, op.e))
        elif op.op == "report-success":
            self.removers[op.a1].append(op)
            self.lifters[op.a1].append(op)
        elif op.op == "quarantine":
            self.adders[op.a1].append(op)
            self.removers[op.a1].append(op)
            if op.rc == 0:
                self.quarantines.append((op.a1, op.s, op.e))
        elif op.op == "clear":
            self.removers[op.a1].append(op)
            self.lifters[op.a1].append(op)
        elif op.op == "scan":
            self.add_scan(op)

    def add_scan(self, op):
        for line in op.polled:
            vf = line.get("vf_address")
            if line.get("check") == "ok":
                self.removers[vf].append(op)
                self.lifters[vf].append(op)
            elif line.get("check") == "failed":
                self.adders[vf].append(op)
        for line in op.applied:
            vf = line.get("vf_address")
            if line.get("outcome") in ACK:
                self.fail_acks.append((vf, line.get("instance_id"),
                                       line.get("assigned_at"), op.s))
            if line.get("outcome") == "quarantined":
                self.quarantines.append((vf, op.s, op.e))


def later(ops, t):
    """True if one of ops could have taken effect after time t."""
    return bool(ops) and max(o.e for o in ops) > t


class Window:
    """Answers "did one of these operations run inside (a, b)": some op
    with op.e > a and op.s < b, in O(log n) after sorting by start."""

    def __init__(self, ops):
        ops = sorted(ops, key=lambda o: o.s)
        self.starts = [o.s for o in ops]
        self.maxend = []
        m = float("-inf")
        for o in ops:
            m = max(m, o.e)
            self.maxend.append(m)

    def overlaps(self, a, b):
        i = bisect.bisect_left(self.starts, b)
        return i > 0 and self.maxend[i - 1] > a


def load_state(d, bad):
    gpu = os.path.join(d, "data", "gpu")
    state = {}
    for name in ("vf-health.json", "vf-claims.json"):
        path = os.path.join(gpu, name)
        try:
            with open(path, encoding="utf-8") as f:
                state[name] = json.load(f)
        except FileNotFoundError:
            state[name] = {}
        except ValueError as e:
            bad.append("%s does not load: %s" % (name, e))
            state[name] = {}
    health = {r["vf_address"]: r
              for r in state["vf-health.json"].get("records", [])}
    claims = state["vf-claims.json"].get("claims", [])
    return health, claims


def check_acks(facts, health, bad):
    for vf, inst, at, s in facts.fail_acks:
        if later(facts.removers[vf], s):
            continue
        fails = health.get(vf, {}).get("failures", [])
        if not any(f.get("instance_id") == inst and
                   f.get("assigned_at") == at for f in fails):
            bad.append("acknowledged failure %s %s %s lost" % (vf, inst, at))
    for vf, s, _ in facts.quarantines:
        if later(facts.lifters[vf], s):
            continue
        rec = health.get(vf, {})
        if "quarantined_at" not in rec and \
                len(rec.get("failures", [])) < THRESHOLD:
            bad.append("acknowledged quarantine of %s lost" % vf)


def check_clears(ops, facts, health, bad):
    for op in ops:
        if op.op == "clear" and op.rc == 0 and op.a1 in health and \
                not later(facts.adders[op.a1], op.s):
            bad.append("acknowledged clear of %s lost" % op.a1)


def check_claims(ops, claims, bad):
    by_id = {c["instance_id"]: c for c in claims}
    vfs = [c["vf_address"] for c in claims]
    if len(set(vfs)) != len(vfs) or len(by_id) != len(claims):
        bad.append("ledger holds a VF or an instance twice")
    releases = collections.defaultdict(list)
    for op in ops:
        if op.op == "release":
            releases[op.a1].append(op)
    picks = [op for op in ops if op.op == "pick" and op.rc == 0]
    for p in picks:
        vf = (p.out or {}).get("vf_address")
        if not later(releases[p.a1], p.s) and \
                by_id.get(p.a1, {}).get("vf_address") != vf:
            bad.append("acknowledged claim %s on %s lost" % (p.a1, vf))
    for op in ops:
        if op.op == "release" and op.rc == 0 and op.a1 in by_id:
            bad.append("acknowledged release of %s lost" % op.a1)
    check_double(picks, releases, bad)


def check_double(picks, releases, bad):
    """A VF handed out while another instance certainly still held it."""
    by_vf = collections.defaultdict(list)
    for p in picks:
        by_vf[(p.out or {}).get("vf_address")].append(p)
    for vf, ps in by_vf.items():
        ps.sort(key=lambda p: p.s)
        for i, a in enumerate(ps):
            freed = min((r.s for r in releases[a.a1]), default=None)
            for b in ps[i + 1:]:
                if a.e < b.s and (freed is None or freed >= b.e):
                    bad.append("%s claimed by %s while %s held it" %
                               (vf, b.a1, a.a1))


def check_quarantined_picks(ops, facts, bad):
    quarantines = collections.defaultdict(list)
    for qvf, qs, qe in facts.quarantines:
        quarantines[qvf].append((qs, qe))
    lifts = {vf: Window(ls) for vf, ls in facts.lifters.items()}
    for p in ops:
        if p.op != "pick" or p.rc != 0:
            continue
        vf = (p.out or {}).get("vf_address")
        lift = lifts.get(vf, Window([]))
        for qs, qe in quarantines[vf]:
            if qe < p.s and not lift.overlaps(qs, p.e):
                bad.append("quarantined %s configured for %s" % (vf, p.a1))
                break


def check_samples(d, bad):
    n = 0
    for obj in read_lines(os.path.join(d, "samples")):
        n += 1
        if obj.get("status") != "ok":
            bad.append("store unavailable during the run: %s" %
                       obj.get("reason"))
    with open(os.path.join(d, "final-check"), encoding="utf-8") as f:
        text = f.read()
    if "final_check_rc=0" not in text or '"status":"ok"' not in text:
        bad.append("final vfstore check failed: %s" % text.strip())
    return n


def counts(ops, samples, secs):
    by_op = collections.Counter(op.op for op in ops)
    kills = sum(op.rc == 137 for op in ops)
    faults = sum(op.fault != "-" for op in ops)
    bit = sum(op.fault != "-" and op.rc not in (0, 137) for op in ops)
    acks = sum(len([l for l in op.applied if l.get("outcome")])
               for op in ops)
    rcs = collections.Counter(op.rc for op in ops)
    print("torture: seconds=%s operations=%d kills=%d injected_faults=%d "
          "faults_that_failed_the_command=%d apply_lines=%d samples=%d" %
          (secs, len(ops), kills, faults, bit, acks, samples))
    print("torture: by operation: %s" %
          " ".join("%s=%d" % kv for kv in sorted(by_op.items())))
    print("torture: by exit status: %s" %
          " ".join("%s=%d" % kv for kv in sorted(rcs.items())))


def main():
    d, secs = sys.argv[1], sys.argv[2]
    bad = []
    ops = load_ops(d)
    health, claims = load_state(d, bad)
    facts = Facts(ops)
    samples = check_samples(d, bad)
    check_acks(facts, health, bad)
    check_clears(ops, facts, health, bad)
    check_claims(ops, claims, bad)
    check_quarantined_picks(ops, facts, bad)
    counts(ops, samples, secs)
    for b in sorted(set(bad)):
        print("torture: VIOLATION: " + b)
    if not ops:
        print("torture: VIOLATION: no operation ran")
        return 1
    print("torture: %s" % ("FAIL" if bad else "all properties held"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
