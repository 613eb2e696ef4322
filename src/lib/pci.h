/*
 * pci.h - libpci over SYSFS_ROOT/sys/bus/pci, with an error handler that
 * never exits (libpci's default handler calls exit(1)).
 */
#ifndef VFS_PCI_H
#define VFS_PCI_H

#include <stddef.h>

#define PCI_VENDOR_NVIDIA 0x10de

/* 1 if some function has vendor 0x10de, 0 if none, -1 with a reason in
 * why (unreadable or malformed tree). */
int pci_has_nvidia(const char *sysfs_root, char *why, size_t whylen);

/* The device name of addr into buf, as the fourth field of lspci -mm on
 * this host has it: pci.ids, then the udev hwdb ("AD102GL [L40S]"), else
 * "Device 26b9". 0 or -1. */
int pci_device_name(const char *sysfs_root, const char *addr, char *buf,
    size_t len);

#endif
