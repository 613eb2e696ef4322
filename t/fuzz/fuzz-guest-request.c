/*
 * fuzz-guest-request.c - the request parser of vsock-answer
 * (guestproto_request_parse): bytes from the host, or from anything that can
 * reach the guest's port. Properties: a request over GUEST_REQUEST_MAX is
 * always bad; an accepted request is exactly a JSON object (duplicate
 * keys rejected) with a string "method", and the method is
 * GetGPUInitStatus only when that string is exactly the name.
 */
#include <jansson.h>

#include "fuzz.h"
#include "guestproto.h"

#define T "guest-request"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum guest_method m;
	const char *name;
	json_t *obj;
	int rc;

	rc = guestproto_request_parse((const char *)data, size, &m);
	obj = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES,
	    NULL);
	name = json_string_value(json_object_get(obj, "method"));
	if (size > GUEST_REQUEST_MAX || !json_is_object(obj) || name == NULL) {
		fuzz_require(rc == -1, T, "a bad request was accepted");
	} else {
		fuzz_require(rc == 0, T, "a good request was refused");
		fuzz_require((m == GUEST_METHOD_STATUS) ==
		    (strcmp(name, GUEST_METHOD_STATUS_NAME) == 0), T,
		    "wrong method");
	}
	json_decref(obj);
	return 0;
}
