/*
 * undrain.c - `vfstore undrain --vf|--card`: the VFs' drains lifted, by
 * the half of drain.c that both commands share (SPEC.md 6.3).
 */
#include "vfstore.h"

int
cmd_undrain(struct ctx *c)
{
	return drain_run(c, false);
}
