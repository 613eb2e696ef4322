#!/bin/sh
# demo-vmm-vsock.sh - the host side of a Firecracker / Cloud Hypervisor
# hybrid vsock, for `make demo`. Run per connection by
#   socat UNIX-LISTEN:VMM_SOCK,fork EXEC:demo-vmm-vsock.sh
# with DEMO_GUEST_PORT and DEMO_GUEST_SOCK in the environment. Like the
# VMM it reads "CONNECT PORT", answers "OK HOSTPORT" when the guest
# listens on PORT and then bridges the stream to the guest's service
# (here vsock-answer on a Unix socket); otherwise it just closes.
# dash's read takes the socket byte by byte, so nothing after the first
# line is lost.
IFS= read -r line || exit 0
line=$(printf '%s' "$line" | tr -d '\r')
case $line in
"CONNECT "*) port=${line#CONNECT } ;;
*) exit 0 ;;
esac
[ "$port" = "${DEMO_GUEST_PORT:-2222}" ] || exit 0
printf 'OK %s\n' 1073741824
exec socat - "UNIX-CONNECT:$DEMO_GUEST_SOCK"
