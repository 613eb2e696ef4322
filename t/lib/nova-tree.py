#!/usr/bin/python3
"""nova-tree.py - a Placement client for the placement-sync tests: builds
provider trees exactly as Nova's code does and plays Nova's rewrites.
PLACEMENT_URL names a noauth2 Placement (token admin, microversion 1.39).

  tree NODE [--vf VF]... [--pf PF:RC:N]...
      the root NODE (trait COMPUTE_NODE); per VF the child
      NODE_pci_dddd_bb_ss_f with VGPU {total 1, max_unit 1} and trait
      OWNER_NOVA (libvirt driver's _ensure_pgpu_providers); per PF the
      child NODE_DDDD:BB:SS.F with RC {total N, max_unit N} and trait
      COMPUTE_MANAGED_PCI_DEVICE (pci_placement_translator)
  instance NODE PROVIDER UUID [RC]   an instance's allocation of 1
  nova-inventory NODE PROVIDER [TOTAL]  Nova's periodic inventory PUT
                                     (the fields Nova sends: reserved 0)
  nova-traits NODE PROVIDER          Nova's update_traits (its set only)
  delete-allocation CONSUMER         a consumer's allocations removed
  recreate NODE PROVIDER             the provider deleted, made again
  show NODE                          one JSON line per provider of NODE's
                                     tree, sorted by name
  request METHOD PATH [BODY]         {"status":N,"body":...}
"""
import json
import os
import sys
import urllib.error
import urllib.request

URL = os.environ.get("PLACEMENT_URL", "http://127.0.0.1:8778")


def req(method, path, body=None, ok=(200, 201, 204)):
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(URL + path, data=data, method=method)
    r.add_header("X-Auth-Token", "admin")
    r.add_header("OpenStack-API-Version", "placement 1.39")
    r.add_header("Accept", "application/json")
    if data is not None:
        r.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(r, timeout=30) as resp:
            st, text = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        st, text = e.code, e.read()
    out = json.loads(text) if text else {}
    if ok is not None and st not in ok:
        sys.exit("nova-tree: %s %s: %d %s" % (method, path, st, text[:300]))
    return st, out


def rp_by_name(name):
    _, d = req("GET", "/resource_providers?name=" + name)
    rps = d["resource_providers"]
    if not rps:
        sys.exit("nova-tree: no provider " + name)
    return rps[0]


def ensure_trait(t):
    if t.startswith("CUSTOM_"):
        req("PUT", "/traits/" + t)


def ensure_rc(rc):
    if rc.startswith("CUSTOM_"):
        req("PUT", "/resource_classes/" + rc)


def new_rp(name, parent=None):
    body = {"name": name}
    if parent:
        body["parent_provider_uuid"] = parent
    _, d = req("POST", "/resource_providers", body)
    return d


def set_inventory(rp, rc, total):
    """Nova's PUT of a provider's whole inventory (reserved 0)."""
    ensure_rc(rc)
    cur = req("GET", "/resource_providers/%s" % rp["uuid"])[1]
    req("PUT", "/resource_providers/%s/inventories" % rp["uuid"],
        {"resource_provider_generation": cur["generation"],
         "inventories": {rc: {"total": total, "reserved": 0, "min_unit": 1,
                              "max_unit": total, "step_size": 1,
                              "allocation_ratio": 1.0}}})


def set_traits(rp, traits):
    for t in traits:
        ensure_trait(t)
    cur = req("GET", "/resource_providers/%s" % rp["uuid"])[1]
    req("PUT", "/resource_providers/%s/traits" % rp["uuid"],
        {"resource_provider_generation": cur["generation"],
         "traits": sorted(traits)})


def vf_name(node, vf):
    return "%s_pci_%s" % (node, vf.replace(":", "_").replace(".", "_"))


def make_child(node, root, name, rc, total, trait):
    rp = new_rp(name, root["uuid"])
    set_inventory(rp, rc, total)
    set_traits(rp, [trait])
    return rp


def nova_rc_trait(name):
    """The resource class and Nova's trait of a child, from its name."""
    if "_pci_" in name:
        return "VGPU", "OWNER_NOVA"
    inv = req("GET", "/resource_providers/%s/inventories" %
              rp_by_name(name)["uuid"])[1]["inventories"]
    return next(iter(inv)), "COMPUTE_MANAGED_PCI_DEVICE"


def main(argv):
    cmd, args = argv[0], argv[1:]
    if cmd == "tree":
        node = args[0]
        root = new_rp(node)
        set_traits(root, ["COMPUTE_NODE"])
        i = 1
        while i < len(args):
            if args[i] == "--vf":
                make_child(node, root, vf_name(node, args[i + 1]), "VGPU",
                           1, "OWNER_NOVA")
            elif args[i] == "--pf":
                pf, rc, n = args[i + 1].rsplit(":", 2)
                make_child(node, root, "%s_%s" % (node, pf.upper()), rc,
                           int(n), "COMPUTE_MANAGED_PCI_DEVICE")
            i += 2
    elif cmd == "instance":
        name, consumer = args[1], args[2]
        rp = rp_by_name(name)
        rc = args[3] if len(args) > 3 else nova_rc_trait(name)[0]
        st, d = req("PUT", "/allocations/" + consumer,
                    {"allocations": {rp["uuid"]: {"resources": {rc: 1}}},
                     "project_id": "tenant", "user_id": "tenant",
                     "consumer_generation": None,
                     "consumer_type": "INSTANCE"}, ok=None)
        print(json.dumps({"status": st, "body": d}))
        return 0 if st == 204 else 1
    elif cmd == "nova-inventory":
        name = args[1]
        rp = rp_by_name(name)
        inv = req("GET", "/resource_providers/%s/inventories" %
                  rp["uuid"])[1]["inventories"]
        rc = next(iter(inv))
        total = int(args[2]) if len(args) > 2 else inv[rc]["total"]
        set_inventory(rp, rc, total)
    elif cmd == "nova-traits":
        name = args[1]
        set_traits(rp_by_name(name), [nova_rc_trait(name)[1]])
    elif cmd == "delete-allocation":
        req("DELETE", "/allocations/" + args[0])
    elif cmd == "recreate":
        name = args[1]
        rp = rp_by_name(name)
        rc, trait = nova_rc_trait(name)
        inv = req("GET", "/resource_providers/%s/inventories" %
                  rp["uuid"])[1]["inventories"]
        req("DELETE", "/resource_providers/" + rp["uuid"])
        make_child(args[0], rp_by_name(args[0]), name, rc,
                   inv[rc]["total"], trait)
    elif cmd == "show":
        root = rp_by_name(args[0])
        _, d = req("GET", "/resource_providers?in_tree=" + root["uuid"])
        for rp in sorted(d["resource_providers"], key=lambda r: r["name"]):
            if rp["uuid"] == root["uuid"]:
                continue
            u = rp["uuid"]
            inv = req("GET", "/resource_providers/%s/inventories" %
                      u)[1]["inventories"]
            traits = req("GET", "/resource_providers/%s/traits" %
                         u)[1]["traits"]
            allocs = req("GET", "/resource_providers/%s/allocations" %
                         u)[1]["allocations"]
            cons = []
            for c in sorted(allocs):
                a = req("GET", "/allocations/" + c)[1]
                cons.append({"consumer": c,
                             "consumer_type": a.get("consumer_type"),
                             "project_id": a.get("project_id"),
                             "used": sum(allocs[c]["resources"].values())})
            print(json.dumps({
                "name": rp["name"], "uuid": u,
                "inventory": {rc: {k: v[k] for k in ("total", "reserved",
                                                     "max_unit")}
                              for rc, v in inv.items()},
                "traits": sorted(traits), "allocations": cons},
                separators=(",", ":")))
    elif cmd == "request":
        body = json.loads(args[2]) if len(args) > 2 else None
        st, d = req(args[0], args[1], body, ok=None)
        print(json.dumps({"status": st, "body": d}, separators=(",", ":")))
    else:
        sys.exit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
