/*
 * domain.c - the domain XML libvirt writes to a hook's stdin, read with
 * libxml2 (SPEC.md 6.6).
 *
 * The XML carries names users chose (Nova puts instance names and
 * metadata there), so it is parsed as untrusted, whatever its size
 * (SPEC 8.1: fed to libxml2 in pieces): XML_PARSE_NONET (no network),
 * neither XML_PARSE_NOENT nor XML_PARSE_DTDLOAD (no entity
 * substitution, no external DTD), and a document with any DOCTYPE is
 * not libvirt's (guard.c: 0, nothing done): libvirt never writes one,
 * so a DTD can only be an attack (entity expansion, external
 * entities). Every value taken from it is checked here: PCI addresses
 * through vfaddr, the UUID's shape, paths absolute and free of control
 * characters, names valid UTF-8. Nothing read here reaches a shell.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "io.h"
#include "utf8.h"
#include "vfaddr.h"
#include "libvirt-hook.h"

char *
domain_read(int fd, size_t *len)
{
	size_t cap = 16384, n = 0;
	char *buf = malloc(cap), *p;
	ssize_t r;

	while (buf != NULL && (r = io_read(fd, buf + n, cap - n - 1)) > 0) {
		n += (size_t)r;
		if (n + 1 < cap)
			continue;
		if (cap > SIZE_MAX / 2) {
			free(buf);
			errno = ENOMEM;
			return NULL;
		}
		cap *= 2;
		if ((p = realloc(buf, cap)) == NULL)
			free(buf);
		buf = p;
	}
	if (buf == NULL || r < 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* Copies an attribute of n into buf if it passes utf8_printable(); 1
 * copied, 0 absent, -1 invalid (why set). */
static int
attr_copy(xmlNode *n, const char *name, char *buf, size_t len,
    char *why, size_t whylen)
{
	xmlChar *v = xmlGetNoNsProp(n, (const xmlChar *)name);
	int rc = 1;

	if (v == NULL)
		return 0;
	if (!utf8_printable((const char *)v, len)) {
		(void)snprintf(why, whylen, "<%s %s=...> is not valid text "
		    "(UTF-8, no control characters, under %zu bytes)",
		    (const char *)n->name, name, len);
		rc = -1;
	} else
		(void)snprintf(buf, len, "%s", (const char *)v);
	xmlFree(v);
	return rc;
}

/* An attribute that must be an absolute path, as attr_copy(). */
static int
path_copy(xmlNode *n, const char *name, char *buf, size_t len, char *why,
    size_t whylen)
{
	int rc = attr_copy(n, name, buf, len, why, whylen);

	if (rc == 1 && buf[0] != '/') {
		(void)snprintf(why, whylen, "<%s %s=...> is not an absolute "
		    "path", (const char *)n->name, name);
		buf[0] = '\0';
		return -1;
	}
	return rc;
}

static bool
is_elem(const xmlNode *n, const char *name)
{
	return n->type == XML_ELEMENT_NODE && n->ns == NULL &&
	    strcmp((const char *)n->name, name) == 0;
}

static xmlNode *
child(xmlNode *n, const char *name)
{
	for (n = n->children; n != NULL; n = n->next)
		if (is_elem(n, name))
			return n;
	return NULL;
}

static bool
attr_is(xmlNode *n, const char *name, const char *want)
{
	xmlChar *v = xmlGetNoNsProp(n, (const xmlChar *)name);
	bool same = v != NULL && strcmp((const char *)v, want) == 0;

	xmlFree(v);
	return same;
}

/* One PCI address part as libvirt reads it (strtoul base 0: "0xe3",
 * "227"), at most max. 0 or -1. */
static int
addr_part(xmlNode *n, const char *name, unsigned max, unsigned *out)
{
	xmlChar *v = xmlGetNoNsProp(n, (const xmlChar *)name);
	unsigned long x = 0;
	char *end = NULL;
	int rc = -1;

	if (v != NULL && isdigit(v[0]) && strlen((const char *)v) <= 10) {
		errno = 0;
		x = strtoul((const char *)v, &end, 0);
		if (errno == 0 && *end == '\0' && x <= max)
			rc = 0;
	}
	xmlFree(v);
	*out = (unsigned)x;
	return rc;
}

/* <hostdev mode='subsystem' type='pci'><source><address .../>: the VF's
 * canonical address appended to d->hostdevs. 0, or -1 (why set). */
static int
parse_hostdev(xmlNode *n, struct domain *d, char *why, size_t whylen)
{
	unsigned dom, bus, slot, fn;
	char text[32], vf[VF_ADDR_LEN + 1];
	xmlNode *src, *a;

	if (!attr_is(n, "type", "pci"))
		return 0;
	d->has_pci = true;
	if (!attr_is(n, "mode", "subsystem"))
		return 0;
	if ((src = child(n, "source")) == NULL ||
	    (a = child(src, "address")) == NULL)
		return 0;
	if (addr_part(a, "domain", 0xffff, &dom) == -1 ||
	    addr_part(a, "bus", 0xff, &bus) == -1 ||
	    addr_part(a, "slot", 0x1f, &slot) == -1 ||
	    addr_part(a, "function", 7, &fn) == -1) {
		(void)snprintf(why, whylen, "<hostdev> PCI source address is "
		    "invalid (domain, bus, slot, function)");
		return -1;
	}
	(void)snprintf(text, sizeof(text), "%04x:%02x:%02x.%x", dom, bus,
	    slot, fn);
	if (vfaddr_parse_arg(text, vf) == -1) {
		vfaddr_why("<hostdev> VF", text, why, whylen);
		return -1;
	}
	if (sysfs_vf_list_add(&d->hostdevs, vf) == -1) {
		(void)snprintf(why, whylen, "out of memory");
		return -1;
	}
	return 0;
}

/* vfsentinel's <vfsentinel:vgpu vf=... profile=.../> in <metadata>. */
static int
parse_metadata(xmlNode *md, struct domain *d, char *why, size_t whylen)
{
	char vf[64];
	xmlNode *n;
	int rc;

	for (n = md->children; n != NULL; n = n->next) {
		if (n->type != XML_ELEMENT_NODE || n->ns == NULL ||
		    n->ns->href == NULL || strcmp((const char *)n->ns->href,
		    HOOK_XMLNS) != 0 || strcmp((const char *)n->name,
		    HOOK_XML_ELEMENT) != 0)
			continue;
		d->has_meta = true;
		if (attr_copy(n, "profile", d->profile, sizeof(d->profile),
		    why, whylen) == -1 || attr_copy(n, "verify-token",
		    d->verify_token, sizeof(d->verify_token), why,
		    whylen) == -1)
			return -1;
		vf[0] = '\0';
		rc = attr_copy(n, "vf", vf, sizeof(vf), why, whylen);
		if (rc == 1 && vfaddr_parse_arg(vf, d->meta_vf) == -1) {
			vfaddr_why("metadata VF", vf, why, whylen);
			return -1;
		}
		return rc < 0 ? -1 : 0;
	}
	return 0;
}

/* <vsock><cid address='N'/>: a guest CID (3 and up; 0-2 are the
 * hypervisor, the loopback and the host). */
static int
parse_vsock(xmlNode *n, struct domain *d, char *why, size_t whylen)
{
	xmlNode *cid = child(n, "cid");
	unsigned v;

	if (cid == NULL || xmlHasProp(cid, (const xmlChar *)"address") ==
	    NULL)
		return 0;
	if (addr_part(cid, "address", UINT_MAX - 1, &v) == -1 || v < 3) {
		(void)snprintf(why, whylen, "<vsock><cid address=...> is not "
		    "a guest CID");
		return -1;
	}
	d->has_cid = true;
	d->cid = v;
	return 0;
}

/* <channel type='unix'> whose target is virtio org.vfsentinel.0. */
static int
parse_channel(xmlNode *n, struct domain *d, char *why, size_t whylen)
{
	xmlNode *t = child(n, "target"), *src = child(n, "source");

	if (!attr_is(n, "type", "unix") || t == NULL || src == NULL ||
	    !attr_is(t, "type", "virtio") || !attr_is(t, "name",
	    HOOK_PORT_NAME))
		return 0;
	return path_copy(src, "path", d->channel, sizeof(d->channel), why,
	    whylen) < 0 ? -1 : 0;
}

/* A console file: <serial|console type='file'><source path=...>, or
 * their <log file=...>. The first found is kept. */
static int
parse_console(xmlNode *n, struct domain *d, char *why, size_t whylen)
{
	xmlNode *src = child(n, "source"), *log = child(n, "log");

	if (d->app_log[0] != '\0')
		return 0;
	if (attr_is(n, "type", "file") && src != NULL) {
		d->app_log_append = attr_is(src, "append", "on");
		return path_copy(src, "path", d->app_log, sizeof(d->app_log),
		    why, whylen) < 0 ? -1 : 0;
	}
	if (log != NULL) {
		d->app_log_append = attr_is(log, "append", "on");
		return path_copy(log, "file", d->app_log, sizeof(d->app_log),
		    why, whylen) < 0 ? -1 : 0;
	}
	return 0;
}

static int
parse_devices(xmlNode *devs, struct domain *d, char *why, size_t whylen)
{
	char later[256];
	xmlNode *n;
	int rc = 0, r = 0;

	/* Every device is read: the first invalid one is the error, and the
	 * others still tell whose domain it is (SPEC 8.1). */
	for (n = devs->children; n != NULL; n = n->next) {
		if (is_elem(n, "hostdev"))
			r = parse_hostdev(n, d, rc ? later : why, rc ? sizeof(
			    later) : whylen);
		else if (is_elem(n, "vsock"))
			r = parse_vsock(n, d, rc ? later : why, rc ? sizeof(
			    later) : whylen);
		else if (is_elem(n, "channel"))
			r = parse_channel(n, d, rc ? later : why, rc ? sizeof(
			    later) : whylen);
		else if (is_elem(n, "serial") || is_elem(n, "console"))
			r = parse_console(n, d, rc ? later : why, rc ? sizeof(
			    later) : whylen);
		if (r == -1)
			rc = -1;
	}
	return rc;
}

/* The text of element n into buf (utf8_printable()); -1 when invalid. */
static int
elem_text(xmlNode *n, char *buf, size_t len)
{
	xmlChar *v = xmlNodeGetContent(n);
	int rc = -1;

	if (v != NULL && utf8_printable((const char *)v, len)) {
		(void)snprintf(buf, len, "%s", (const char *)v);
		rc = 0;
	}
	xmlFree(v);
	return rc;
}

/* <uuid>: 8-4-4-4-12 hex digits, kept in lower case. */
static int
parse_uuid(xmlNode *n, struct domain *d)
{
	char *p;
	size_t i;

	if (elem_text(n, d->uuid, sizeof(d->uuid)) == -1 ||
	    strlen(d->uuid) != UUID_LEN)
		return -1;
	for (i = 0, p = d->uuid; i < UUID_LEN; i++, p++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (*p != '-')
				return -1;
		} else if (!isxdigit((unsigned char)*p))
			return -1;
		*p = (char)tolower((unsigned char)*p);
	}
	return 0;
}

/* <domain id='N'>: the running domain's id (absent while shut off). */
static int
parse_id(xmlNode *root, struct domain *d)
{
	unsigned v;

	d->id = -1;
	if (xmlHasProp(root, (const xmlChar *)"id") == NULL)
		return 0;
	if (addr_part(root, "id", INT_MAX, &v) == -1)
		return -1;
	d->id = (long)v;
	return 0;
}

/* The children of <domain>; like parse_devices(), every one is read. */
static int
parse_children(xmlNode *root, struct domain *d, char *why, size_t whylen)
{
	char later[256], *w;
	size_t wl;
	xmlNode *n;
	int rc = 0, r;

	for (n = root->children; n != NULL; n = n->next) {
		w = rc ? later : why;
		wl = rc ? sizeof(later) : whylen;
		r = 0;
		if (is_elem(n, "uuid") && parse_uuid(n, d) == -1) {
			(void)snprintf(w, wl, "<uuid> is not a UUID");
			r = -1;
		} else if (is_elem(n, "name") && elem_text(n, d->name,
		    sizeof(d->name)) == -1) {
			(void)snprintf(w, wl, "<name> is not valid text");
			r = -1;
		} else if (is_elem(n, "metadata"))
			r = parse_metadata(n, d, w, wl);
		else if (is_elem(n, "devices"))
			r = parse_devices(n, d, w, wl);
		if (r == -1)
			rc = -1;
	}
	return rc;
}

static int
parse_root(xmlNode *root, struct domain *d, char *why, size_t whylen)
{
	if (root == NULL || !is_elem(root, "domain")) {
		(void)snprintf(why, whylen, "not a <domain> document");
		return DOMAIN_NOT_XML;
	}
	if (parse_children(root, d, why, whylen) == -1)
		return DOMAIN_BAD_VALUE;
	if (parse_id(root, d) == -1) {
		(void)snprintf(why, whylen, "<domain id=...> is not a number");
		return DOMAIN_BAD_VALUE;
	}
	return 0;
}

/* The document, fed to libxml2 in pieces (any size); NULL when it is
 * not well-formed. */
static xmlDoc *
read_doc(const char *text, size_t len)
{
	const int opts = XML_PARSE_NONET | XML_PARSE_NOERROR |
	    XML_PARSE_NOWARNING | XML_PARSE_NOCDATA | XML_PARSE_HUGE;
	const size_t piece = 1 << 20;
	xmlParserCtxt *ctx;
	xmlDoc *doc = NULL;
	size_t off = 0, n;

	ctx = xmlCreatePushParserCtxt(NULL, NULL, NULL, 0, "domain.xml");
	if (ctx == NULL)
		return NULL;
	(void)xmlCtxtUseOptions(ctx, opts);
	do {
		n = len - off < piece ? len - off : piece;
		if (xmlParseChunk(ctx, text + off, (int)n, off + n == len) != 0)
			break;
		off += n;
	} while (off < len);
	if (off == len && ctx->wellFormed)
		doc = ctx->myDoc;
	else
		xmlFreeDoc(ctx->myDoc);
	ctx->myDoc = NULL;
	xmlFreeParserCtxt(ctx);
	return doc;
}

int
domain_parse(const char *text, size_t len, struct domain *d, char *why,
    size_t whylen)
{
	xmlDoc *doc;
	int rc;

	memset(d, 0, sizeof(*d));
	d->id = -1;
	if ((doc = read_doc(text, len)) == NULL) {
		(void)snprintf(why, whylen, "domain XML is not well-formed");
		return DOMAIN_NOT_XML;
	}
	if (doc->intSubset != NULL || doc->extSubset != NULL) {
		(void)snprintf(why, whylen, "domain XML has a DOCTYPE (libvirt "
		    "never writes one)");
		rc = DOMAIN_NOT_XML;
	} else
		rc = parse_root(xmlDocGetRootElement(doc), d, why, whylen);
	xmlFreeDoc(doc);
	return rc;
}

void
domain_release(struct domain *d)
{
	free(d->hostdevs.v);
	d->hostdevs.v = NULL;
	d->hostdevs.n = 0;
}
