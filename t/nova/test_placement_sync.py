"""placement-sync against Nova's own code (SPEC 8.4; t/77-placement-nova.bats).

Nova 26's functional bases from python3-nova: its API, conductor,
scheduler and compute (libvirt driver on fake libvirt, resource tracker,
report client) against Placement's own code (placement's in-process
fixture, noauth2). placement-sync's cycle runs in this process (its own
file, imported), configured from a placement.conf as an operator writes
it, its requests carried by keystoneauth1 to that Placement.

VF_PATH: Nova's mdev path, one provider per VF (total 1, as with SR-IOV
GPUs). Nova never places an instance on an excluded VF, and its periodic
update, its provider-cache refresh and a restart undo nothing.

PF_PATH: Nova's PCI path with [pci] report_in_placement (one provider per
PF, Nova's PCI tracker picks the VF). The hook's refusal of the excluded
VF is played by the fake libvirt domain's start; the test measures how
many builds the PCI tracker sends to the excluded VF, and what the
BuildFailureWeigher then holds against the host. It prints one
"MEASURED ..." line per figure.
"""
import importlib.machinery
import importlib.util
import os
import tempfile

import time

import fixtures
from oslo_serialization import jsonutils

import nova.conf
from nova import context as nova_context
from nova import exception
from nova import objects
from nova.tests.fixtures import libvirt as fakelibvirt
from nova.tests.functional.api import client as api_client
from nova.tests.functional.libvirt import test_pci_in_placement
from nova.tests.functional.libvirt import test_vgpu
from nova.virt.libvirt import driver as libvirt_driver

ROOT = os.environ.get("VFS_ROOT", os.path.join(os.path.dirname(
    os.path.abspath(__file__)), "..", ".."))
TRAIT = "CUSTOM_VFSENTINEL_EXCLUDED"
# nova-common's api-paste.ini, unpacked by tools/deps.sh (python3-nova
# lacks it): where Nova's test fixtures look for etc/nova/api-paste.ini.
API_PASTE = os.environ.get("NOVA_API_PASTE", os.path.join(
    ROOT, "build-tools", "nova-common", "api-paste.ini"))
_state_path_def = nova.conf.paths.state_path_def


def state_path_def(*args):
    if args == ("etc/nova/api-paste.ini",):
        return API_PASTE
    return _state_path_def(*args)


nova.conf.paths.state_path_def = state_path_def


def load_placement_sync():
    path = os.path.join(ROOT, "integrations", "openstack", "placement-sync")
    loader = importlib.machinery.SourceFileLoader("placement_sync", path)
    spec = importlib.util.spec_from_loader("placement_sync", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


PS = load_placement_sync()

# How long a build may take to reach ACTIVE or ERROR. Nova's own helpers
# give it 5 s (10 polls of 0.5 s) and the first version of this file 10 s;
# in CI's sanitizer stage, beside TCG guests on 2 cores, a build took
# longer. A deadline, not a count: what it measures is the outcome.
BUILD_SECONDS = float(os.environ.get("VFS_NOVA_BUILD_SECONDS", "300"))


def wait_for_build(test, server, statuses=("ACTIVE", "ERROR")):
    """Poll the server until its status is one of STATUSES; fail, naming
    the status and the time waited, past BUILD_SECONDS."""
    start = time.monotonic()
    while True:
        server = test.api.get_server(server["id"])
        if server["status"] in statuses:
            return server
        if time.monotonic() - start > BUILD_SECONDS:
            test.fail("server %s still %s after %.0f s (wanted %s)" % (
                server["id"], server["status"], time.monotonic() - start,
                " or ".join(statuses)))
        time.sleep(0.1)


class Patient(object):
    """Nova's _wait_until_deleted (40 polls of 0.5 s) under the same
    deadline as a build."""

    def _wait_until_deleted(self, server):
        initially_in_error = server.get("status") == "ERROR"
        start = time.monotonic()
        while time.monotonic() - start <= BUILD_SECONDS:
            try:
                server = self.api.get_server(server["id"])
            except api_client.OpenStackApiNotFoundException:
                return
            if not initially_in_error and server["status"] == "ERROR":
                self.fail("server %s went to ERROR instead of going away"
                          % server["id"])
            time.sleep(0.1)
        self.fail("server %s not deleted after %.0f s" % (
            server["id"], time.monotonic() - start))


class Sync(object):
    """placement-sync's cycle, configured as an operator would."""

    def __init__(self, endpoint, node):
        self.dir = tempfile.mkdtemp(prefix="placement-sync-")
        path = os.path.join(self.dir, "placement.conf")
        with open(path, "w") as f:
            f.write("[placement]\nauth_type = admin_token\n"
                    "endpoint = %s\ntoken = admin\n"
                    "[vfsentinel]\ncompute_node = %s\n" % (endpoint, node))
        self.settings, adapter = PS.load_config(path)
        self.pl = PS.Placement(adapter)
        self.state = {"root": None, "allocated": set()}
        self.lines = []

    def cycle(self, excluded, cards=()):
        """One cycle over {vf: vf line}; the changes it made."""
        self.pl.discover()
        self.lines = []
        cyc = PS.Cycle(self.pl, self.settings, self.state, self.lines.append)
        cyc.run(excluded, set(cards))
        return [(o["vf"], o["action"]) for o in self.lines], cyc.errors


class VFPath(Patient, test_vgpu.VGPUTestBase):
    """Nova's mdev path: one provider per VF, total 1."""

    def setUp(self):
        # An SR-IOV GPU's VF: one vGPU per mdev-capable device.
        self.useFixture(fixtures.MonkeyPatch(
            "nova.tests.fixtures.libvirt.FakePCIDevice.mdevtypes_templ",
            fakelibvirt.FakePCIDevice.mdevtypes_templ.replace(
                "%(instances)s", "1")))
        super(VFPath, self).setUp()
        self.flags(enabled_mdev_types=fakelibvirt.NVIDIA_11_VGPU_TYPE,
                   group="devices")
        self.flavor = self._create_flavor(extra_spec={"resources:VGPU": "1"})
        self.hostname = self.start_compute(
            pci_info=fakelibvirt.HostPCIDevicesInfo(
                num_pci=0, num_pfs=0, num_vfs=0, num_mdevcap=4),
            hostname="host1")
        self.compute = self.computes[self.hostname]
        root = self.compute_rp_uuids[self.hostname]
        self.vfs = {}
        for rp in self._get_all_rp_uuids_in_a_tree(root):
            name = self.placement.get(
                "/resource_providers/%s" % rp, version="1.14").body["name"]
            vf = PS.vf_of_provider(self.hostname, name)
            if vf is not None:
                self.vfs[vf] = rp
                inv = self._get_provider_inventory(rp)
                self.assertEqual(1, inv["VGPU"]["total"])
        self.assertEqual(4, len(self.vfs))
        self.sync = Sync(self.placement.fixture.endpoint, self.hostname)

    def boot(self, expected_state="ACTIVE"):
        server = self.api.post_server({"server": self._build_server(
            image_uuid="155d900f-4e14-4e4c-a73d-069cbf4541e6",
            flavor_id=self.flavor, networks="none")})
        server = wait_for_build(self, server)
        self.assertEqual(expected_state, server["status"])
        return server

    def vf_of_server(self, server):
        allocs = self._get_allocations_by_server_uuid(server["id"])
        vgpu = [rp for rp, a in allocs.items()
                if "VGPU" in a["resources"]]
        self.assertEqual(1, len(vgpu))
        return [vf for vf, rp in self.vfs.items() if rp == vgpu[0]][0]

    def assert_still_excluded(self, excluded, when):
        changes, errors = self.sync.cycle(excluded)
        self.assertEqual([], changes, "Nova undid the exclusion: " + when)
        self.assertEqual({}, errors)
        for vf in excluded:
            traits = self._get_provider_traits(self.vfs[vf])
            self.assertIn(TRAIT, traits, when)
            usages = self._get_provider_usages(self.vfs[vf])
            self.assertEqual(1, usages["VGPU"], when)

    def test_nova_never_places_on_an_excluded_vf(self):
        vfs = sorted(self.vfs)
        excluded = {vf: {"vf_address": vf, "state": "quarantined"}
                    for vf in vfs[:3]}
        changes, errors = self.sync.cycle(excluded)
        self.assertEqual(6, len(changes))
        self.assertEqual({}, errors)
        # Nova's periodic update, its provider-cache refresh (what
        # [compute] resource_provider_association_refresh does) and a
        # restart: the exclusion stays.
        self._run_periodics()
        self.assert_still_excluded(excluded, "periodic update")
        self.compute.manager.rt.reportclient.clear_provider_cache()
        self._run_periodics()
        self.assert_still_excluded(excluded, "provider cache refresh")
        self.compute = self.restart_compute_service(self.hostname)
        self._run_periodics()
        self.assert_still_excluded(excluded, "compute restart")
        # A plain VGPU flavor lands on the one VF left, then no more.
        server = self.boot()
        self.assertEqual(vfs[3], self.vf_of_server(server))
        self.boot(expected_state="ERROR")
        # The first VF comes back: placement-sync releases it, Nova
        # places the next instance there.
        del excluded[vfs[0]]
        changes, _ = self.sync.cycle(excluded)
        self.assertEqual([(vfs[0], "deallocate"), (vfs[0], "untrait")],
                         changes)
        server = self.boot()
        self.assertEqual(vfs[0], self.vf_of_server(server))
        # Quarantined while an instance holds it: 409, counted, the trait
        # set; allocated once the instance is gone.
        excluded[vfs[0]] = {"vf_address": vfs[0], "state": "quarantined",
                            "instance_id": server["id"]}
        changes, errors = self.sync.cycle(excluded)
        self.assertEqual([(vfs[0], "trait")], changes)
        self.assertEqual({"in_use": 1}, errors)
        self._delete_server(server)
        changes, errors = self.sync.cycle(excluded)
        self.assertEqual([(vfs[0], "allocate")], changes)
        self.assertEqual({}, errors)
        # (No boot after this: fake libvirt keeps the deleted instance's
        # mdev and still says one more instance is available, so Nova
        # reports that VF with total 2, which a real SR-IOV VF never has.)


class PFPath(Patient, test_pci_in_placement.PlacementPCIReportingTests):
    """Nova's PCI path (report_in_placement): one provider per PF; Nova
    26's PCI tracker, not Placement, picks the VF."""

    RC = "CUSTOM_NVIDIA_L40S_12Q"
    PCI_DEVICE_SPEC = [jsonutils.dumps({
        "vendor_id": fakelibvirt.PCI_VEND_ID,
        "product_id": fakelibvirt.VF_PROD_ID,
        "resource_class": RC})]
    PCI_ALIAS = [jsonutils.dumps({
        "vendor_id": fakelibvirt.PCI_VEND_ID,
        "product_id": fakelibvirt.VF_PROD_ID,
        "device_type": "type-VF", "name": "vgpu"})]
    BUILDS = 12

    def setUp(self):
        super(PFPath, self).setUp()
        self.start_compute(
            hostname="host1",
            pci_info=fakelibvirt.HostPCIDevicesInfo(
                num_pci=0, num_pfs=1, num_vfs=4))
        self.compute = self.computes["host1"]
        self.flavor = self._create_flavor(
            extra_spec={"pci_passthrough:alias": "vgpu:1"})
        self.ctx = nova_context.get_admin_context()
        self.api.microversion = "latest"

    def failed_builds(self):
        """What the BuildFailureWeigher reads (the compute node's stats,
        flushed by the periodic)."""
        self._run_periodics()
        return int(self.node().stats.get("failed_builds", 0))

    def node(self):
        return objects.ComputeNode.get_by_nodename(self.ctx, "host1")

    def build(self):
        server = self.api.post_server({"server": self._build_server(
            flavor_id=self.flavor, networks="none")})
        return wait_for_build(self, server)

    def test_measure_pci_tracker_and_failed_builds(self):
        devs = objects.PciDeviceList.get_by_compute_node(
            self.ctx, self.node().id)
        vfs = sorted(d.address for d in devs if d.dev_type == "type-VF")
        self.assertEqual(4, len(vfs))
        pf = [d.parent_addr for d in devs if d.dev_type == "type-VF"][0]
        # Which VF Nova's PCI tracker hands out first: that one is
        # quarantined (no claim holds it), the worst case for the host.
        server = self.build()
        self.assertEqual("ACTIVE", server["status"])
        first = [p.address for p in objects.PciDeviceList.get_by_instance_uuid(
            self.ctx, server["id"])]
        self._delete_server(server)
        bad = set(first)
        sync = Sync(self.placement.fixture.endpoint, "host1")
        excluded = {vf: {"vf_address": vf, "card": pf,
                         "state": "quarantined"} for vf in bad}
        changes, errors = sync.cycle(excluded, cards=[pf])
        self.assertEqual([(pf, "reserve")], changes)
        self.assertEqual({}, errors)
        rp = self._get_provider_uuid_by_name("host1_" + pf.upper())
        inv = self._get_provider_inventory(rp)[self.RC]
        self.assertEqual((4, 1), (inv["total"], inv["reserved"]))
        # Nova's periodic and its provider-cache refresh keep reserved.
        self._run_periodics()
        self.compute.manager.rt.reportclient.clear_provider_cache()
        self._run_periodics()
        inv = self._get_provider_inventory(rp)[self.RC]
        self.assertEqual(1, inv["reserved"], "Nova reverted reserved")
        changes, errors = sync.cycle(excluded, cards=[pf])
        self.assertEqual([], changes)

        # The hook refuses a start on the excluded VF.
        picked = []
        real_create = libvirt_driver.LibvirtDriver._create_guest_with_network

        def hook_refuses(drv, context, xml, instance, *a, **kw):
            pcis = [p.address for p in instance.get_pci_devices()]
            picked.extend(pcis)
            if bad & set(pcis):
                raise exception.InternalError(
                    "libvirt-hook: VF refused (quarantined)")
            return real_create(drv, context, xml, instance, *a, **kw)
        self.useFixture(fixtures.MonkeyPatch(
            "nova.virt.libvirt.driver.LibvirtDriver."
            "_create_guest_with_network", hook_refuses))
        outcomes = []
        for _ in range(self.BUILDS):
            server = self.build()
            outcomes.append(server["status"])
            self._delete_server(server)  # out of the quota
            if self.service_status() != "enabled":
                break
        failed = self.failed_builds()
        print("MEASURED pf_path builds=%d outcomes=%s picks=%s "
              "failed_builds=%d weigher=%d service=%s" % (
                  len(outcomes), ",".join(outcomes),
                  ",".join("excluded" if a in bad else "good"
                           for a in picked),
                  failed, -1000000 * failed, self.service_status()))
        # Every build the host got went to the excluded VF and was
        # refused: reserved caps the count, it does not steer Nova 26's
        # PCI tracker; each refusal is one more failed build the
        # BuildFailureWeigher holds against the whole host.
        self.assertEqual([], [a for a in picked if a not in bad])
        self.assertNotIn("ACTIVE", outcomes)
        self.assertEqual(len(outcomes), failed)

        # Mitigation on Nova 26: the quarantined VF out of Nova's
        # [pci] device_spec (one entry per good VF) and nova-compute
        # restarted: Nova drops it from its pools, the next build lands
        # on a good VF and the success ends the failed-build count.
        good = [vf for vf in vfs if vf not in bad]
        self.flags(group="pci", device_spec=[jsonutils.dumps({
            "vendor_id": fakelibvirt.PCI_VEND_ID,
            "product_id": fakelibvirt.VF_PROD_ID,
            "address": vf, "resource_class": self.RC}) for vf in good])
        self.compute = self.restart_compute_service("host1")
        self._run_periodics()
        del picked[:]
        server = self.build()
        print("MEASURED pf_path after_device_spec=%s picked=%s "
              "failed_builds=%d" % (
                  server["status"], ",".join(
                      "excluded" if a in bad else "good" for a in picked),
                  self.failed_builds()))
        self.assertEqual("ACTIVE", server["status"])
        self.assertEqual(0, self.failed_builds())
        inv = self._get_provider_inventory(rp)[self.RC]
        print("MEASURED pf_path inventory_after_device_spec total=%d "
              "reserved=%d" % (inv["total"], inv["reserved"]))

    def service(self):
        return [s for s in self.admin_api.get_services(
            binary="nova-compute", host="host1")][0]

    def service_status(self):
        return self.service()["status"]
