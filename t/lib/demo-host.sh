# shellcheck shell=bash
# demo-host.sh - builds the simulated GPU host of `make demo` (sourced by
# tools/demo.sh; plain bash, no bats). A fake sysfs tree that libpci and
# the vfsentinel host programs accept: NVIDIA L40S cards (10de:26b9) with
# vendor-VFIO VFs, as the NVIDIA vGPU host driver lays them out.

# demo_pcifn ROOT BDF - a PCI function (vendor, device, class, config...).
demo_pcifn() {
	local d=$1/sys/bus/pci/devices/$2 i
	mkdir -p "$d"
	printf '0x10de\n' >"$d/vendor"
	printf '0x26b9\n' >"$d/device"
	printf '0x030200\n' >"$d/class"
	printf '0x00\n' >"$d/revision"
	echo 0 >"$d/irq"
	for ((i = 0; i < 13; i++)); do
		echo "0x0000000000000000 0x0000000000000000 0x0000000000000000"
	done >"$d/resource"
	# config space: vendor/device little-endian, class at 0x09.
	{ printf '\xde\x10\xb9\x26'; head -c 5 /dev/zero
	  printf '\x00\x02\x03'; head -c 244 /dev/zero; } >"$d/config"
}

# demo_vf ROOT PF VF N GROUP - VF number N of card PF, in IOMMU group
# GROUP, offering two vGPU profiles and free (current_vgpu_type 0).
demo_vf() {
	local root=$1 pf=$2 vf=$3 n=$4 group=$5 d
	d=$root/sys/bus/pci/devices/$vf
	demo_pcifn "$root" "$vf"
	ln -sfn "../$pf" "$d/physfn"
	ln -sfn "../$vf" "$root/sys/bus/pci/devices/$pf/virtfn$n"
	ln -sfn "../../../kernel/iommu_groups/$group" "$d/iommu_group"
	mkdir -p "$d/nvidia"
	echo 0 >"$d/nvidia/current_vgpu_type"
	printf '%s\n' 'ID    : vGPU Name' '1160  : NVIDIA L40S-12Q' \
	    '1161  : NVIDIA L40S-24Q' >"$d/nvidia/creatable_vgpu_types"
}

# demo_host ROOT CARDS... - each card (a PF address such as 0000:e3:00.0)
# with 8 VFs at functions 00.4 .. 01.3 of its bus (SR-IOV offset 4).
demo_host() {
	local root=$1 pf bus n group=100 devfn
	shift
	for pf in "$@"; do
		bus=${pf%:*}
		demo_pcifn "$root" "$pf"
		echo 8 >"$root/sys/bus/pci/devices/$pf/sriov_totalvfs"
		echo 8 >"$root/sys/bus/pci/devices/$pf/sriov_numvfs"
		for ((n = 0; n < 8; n++)); do
			devfn=$((4 + n))
			demo_vf "$root" "$pf" \
			    "$(printf '%s:%02x.%d' "$bus" $((devfn / 8)) $((devfn % 8)))" \
			    "$n" $((group++))
		done
	done
}
