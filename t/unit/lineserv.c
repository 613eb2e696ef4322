/*
 * lineserv.c - unit tests (TAP) for the bounded one-line server: a
 * request line gets the reply the callback chose, a long request is cut
 * at request_max and still answered once, a full server drops its
 * oldest connection for a new one, and a silent connection is dropped
 * at its deadline.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "vsock-answer/lineserv.h"
#include "tap.h"

static struct lineserv_reply *reply_a, *reply_b;
static size_t last_len;

static struct lineserv_reply *
answer(void *ctx, const char *line, size_t len)
{
	(void)ctx;
	last_len = len;
	return len > 0 && line[0] == 'b' ? reply_b : reply_a;
}

static struct lineserv_reply *
reply(const char *text)
{
	struct lineserv_reply *r = lineserv_reply_new(strlen(text));

	memcpy(r->line, text, strlen(text));
	r->len = strlen(text);
	return r;
}

static int
listener(struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* /tmp, not TMPDIR: sun_path is 108 bytes, a long TMPDIR won't fit. */
	(void)snprintf(sa->sun_path, sizeof(sa->sun_path),
	    "/tmp/lineserv-%d.sock", (int)getpid());
	unlink(sa->sun_path);
	if (bind(fd, (struct sockaddr *)sa, sizeof(*sa)) < 0 ||
	    listen(fd, 16) < 0)
		return -1;
	return fd;
}

static int
client(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0)
		return -1;
	return fd;
}

/* Runs the server for up to ms milliseconds. */
static void
serve(struct lineserv *s, int lfd, int ms)
{
	struct pollfd pfds[9];
	long long until = 0;
	size_t n;
	int i;

	for (i = 0; i < ms / 10; i++) {
		pfds[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		n = lineserv_poll_fill(s, pfds + 1, &until);
		if (poll(pfds, n + 1, 10) < 0)
			return;
		lineserv_service(s, pfds + 1, n);
		if (pfds[0].revents != 0)
			(void)lineserv_accept(s);
	}
}

static void
read_reply(int fd, char *buf, size_t len)
{
	ssize_t n = read(fd, buf, len - 1);

	buf[n > 0 ? n : 0] = '\0';
}

int
main(void)
{
	struct sockaddr_un sa;
	struct lineserv s;
	char big[300], buf[64];
	int lfd, c1, c2, c3;

	reply_a = reply("A\n");
	reply_b = reply("B\n");
	lfd = listener(&sa);
	ok(lfd >= 0, "a listening socket");
	ok(lineserv_init(&s, lfd, 2, 200, 300, answer, NULL) == 0, "init");

	c1 = client(&sa);
	ok(write(c1, "b please\r\n", 10) == 10, "a request line sent");
	serve(&s, lfd, 100);
	read_reply(c1, buf, sizeof(buf));
	is_str(buf, "B\n", "the reply the callback chose");
	ok(last_len == 8, "the line without its newline and CR");
	ok(s.n == 0, "the connection is closed once the reply is sent");
	ok(reply_b->refs == 1, "the server dropped its reference");
	close(c1);

	memset(big, 'x', sizeof(big));
	c1 = client(&sa);
	ok(write(c1, big, sizeof(big)) == (ssize_t)sizeof(big),
	    "a long request sent");
	serve(&s, lfd, 100);
	read_reply(c1, buf, sizeof(buf));
	is_str(buf, "A\n", "a request over request_max is answered");
	ok(last_len == 201, "after request_max + 1 bytes, not more");
	close(c1);

	c1 = client(&sa);
	serve(&s, lfd, 50);
	c2 = client(&sa);
	serve(&s, lfd, 50);
	ok(s.n == 2 && s.evicted == 0, "two silent connections fill it");
	c3 = client(&sa);
	serve(&s, lfd, 30);
	ok(s.n == 2 && s.evicted == 1, "a third drops the oldest");
	ok(read(c1, buf, sizeof(buf)) == 0, "the oldest sees end of file");
	serve(&s, lfd, 400);
	ok(s.n == 0, "silent connections go at their deadline");
	close(c1);
	close(c2);
	close(c3);

	lineserv_release(&s);
	lineserv_reply_put(reply_a);
	lineserv_reply_put(reply_b);
	close(lfd);
	unlink(sa.sun_path);
	return done_testing();
}
