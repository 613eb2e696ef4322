#!/bin/bash
# demo-vm.sh DIR MODE TRANSPORT - one simulated vGPU VM for `make demo`.
#
# The "VMM" part: a listening control socket DIR/qmp.sock (sentinel-poll
# polls a guest only while its VMM is alive, SPEC 4.4) and, for TRANSPORT
# hvsock, a hybrid-vsock socket DIR/vmm.vsock made with socat. The guest
# part runs the real guest programs on recordings:
#
#   kmsg-watch --kmsg DIR/kmsg --.
#                                +--> pipe --> vsock-answer --listen unix:DIR/answer.sock
#   gpu-probe --nvidia-smi ... --'
#
# MODE wedged: the VF the VM got is wedged, so the guest kernel logs the
# RmInitAdapter failure and nvidia-smi cannot reach the driver. MODE
# healthy: the driver initialises. MODE healthy-open: the same on an image
# without nvidia-smi; gpu-probe --method open opens the GPU's node, found
# in a recorded DIR/proc/driver/nvidia/gpus (a regular file DIR/dev/nvidia0
# stands in for the node of a driver that initialised). Logs go to DIR/guest.log, the event
# stream to DIR/events. Run it in its own session; the caller ends it by
# killing the process group.
set -u
dir=$1 mode=$2 transport=$3
here=$(cd "$(dirname "$0")" && pwd)

write_kmsg() {
	local fail='NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)'
	printf '%s\n' \
	    '5,0,0,-;Linux version 6.1.0-21-cloud-amd64 (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC Debian 6.1.90-1' \
	    '6,312,1042113,-;pci 0000:00:03.0: [10de:26b9] type 00 class 0x030200' \
	    ' SUBSYSTEM=pci' ' DEVICE=+pci:0000:00:03.0' \
	    '4,1038,8401277,-;nvidia: loading out-of-tree module taints kernel.' \
	    '6,1041,8462100,-;NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.90.07  Release Build'
	[ "$mode" = wedged ] || return 0
	printf '%s\n' "3,1042,8462102,-;$fail" \
	    '3,1043,8462110,-;NVRM: GPU 0000:00:03.0: rm_init_adapter failed, device minor number 0' \
	    "3,1057,28470215,-;$fail" \
	    '12,1058,28901003,-;NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x0:0x0:0) forged by a user-space write' \
	    "3,1071,48477380,-;$fail"
}

write_nvidia_smi() {
	if [ "$mode" = wedged ]; then
		printf '%s\n' '#!/bin/sh' \
		    "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\"" \
		    'exit 9'
	else
		# shellcheck disable=SC2016 # a script, expanded when run
		printf '%s\n' '#!/bin/sh' '[ "$1" = -L ] || exit 2' \
		    'echo "GPU 0: NVIDIA L40S-12Q (UUID: GRID-5f1c2a9e-8d41-4b7e-9c3a-2e6f0b7d4a11)"'
	fi >"$dir/nvidia-smi"
	chmod +x "$dir/nvidia-smi"
}

# write_driver_tree: the driver's GPU list and the GPU's node.
write_driver_tree() {
	local gpu=$dir/proc/driver/nvidia/gpus/0000:00:03.0
	mkdir -p "$gpu" "$dir/dev"
	printf '%s\n' 'Model: 		 NVIDIA L40S-12Q' 'IRQ:   		 45' \
	    'Bus Location: 	 0000:00:03.0' 'Device Minor: 	 0' >"$gpu/information"
	: >"$dir/dev/nvidia0"
}

write_kmsg >"$dir/kmsg"
if [ "$mode" = healthy-open ]; then
	write_driver_tree
	probe=(--method open --proc-root "$dir" --dev-dir "$dir/dev")
else
	write_nvidia_smi
	probe=(--nvidia-smi "$dir/nvidia-smi")
fi
socat "UNIX-LISTEN:$dir/qmp.sock,fork" EXEC:cat 2>>"$dir/guest.log" &
if [ "$transport" = hvsock ]; then
	DEMO_GUEST_SOCK=$dir/answer.sock DEMO_GUEST_PORT=2222 \
	    socat "UNIX-LISTEN:$dir/vmm.vsock,fork" \
	    "EXEC:$here/demo-vmm-vsock.sh" 2>>"$dir/guest.log" &
fi
{
	kmsg-watch --no-pci-check --kmsg "$dir/kmsg" &
	gpu-probe "${probe[@]}" --retry-interval 1 --window 3 &
	wait
} 2>>"$dir/guest.log" | tee "$dir/events" |
    vsock-answer --events - --listen "unix:$dir/answer.sock" \
    --state-file "$dir/gpu-init.json" >>"$dir/guest.log" 2>&1 &
wait
