/*
 * sentinel-guests - test aid: one process serving many fake guest agents
 * (and hostile ones) on Unix sockets, for the sentinel-poll tests and
 * benchmark.
 *
 *	sentinel-guests DIR SPEC...
 *
 * SPEC is NAME=MODE (socket DIR/NAME) or NAME*N=MODE (DIR/NAME0 ..
 * DIR/NAME<N-1>). When every socket listens, DIR/ready is created. Each
 * connection reads one request line, then by MODE:
 *
 *	ok unknown failed unsupported   the vsock-answer replies
 *	garbage      "this is not json"
 *	badstate     {"state":"SIDEWAYS"}
 *	huge         10 MiB without a newline
 *	drip         {"state":"OK"} one byte a second
 *	silent       never answers (keeps the connection)
 *	closer       closes without answering
 *	noaccept     listens but never accept()s
 *	full         never accept()s and its backlog is full (connect fails)
 *	hv-ok        hybrid vsock: "CONNECT P" -> "OK 1073741824", then failed
 *	hv-silent    hybrid vsock proxy that never says OK
 *	hv-close     hybrid vsock proxy that closes instead of OK
 *	slow-failed  answers FAILED one second after the request, and not
 *	             while DIR/NAME.hold exists
 *	slow-ok      answers OK the same way
 *
 * Every accepted request is counted in DIR/NAME.hits (one byte each) so
 * tests can prove a guest was or was not polled. SIGTERM exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define HUGE_LEN (10 * 1024 * 1024)
#define FAILED_REPLY "{\"state\":\"FAILED\",\"failure_message\":" \
	"\"NVRM: GPU 0000:00:03.0: RmInitAdapter failed! (0x22:0x65:884)\"}\n"

enum mode {
	M_OK, M_UNKNOWN, M_FAILED, M_UNSUPPORTED, M_GARBAGE, M_BADSTATE,
	M_HUGE, M_DRIP, M_SILENT, M_CLOSER, M_NOACCEPT, M_FULL, M_HV_OK,
	M_HV_SILENT, M_HV_CLOSE, M_SLOW_FAILED, M_SLOW_OK
};

static const char *const mode_names[] = {
	"ok", "unknown", "failed", "unsupported", "garbage", "badstate",
	"huge", "drip", "silent", "closer", "noaccept", "full", "hv-ok",
	"hv-silent", "hv-close", "slow-failed", "slow-ok"
};

struct conn {
	int fd;
	int listener;			/* index of the listener */
	int lines;			/* request lines seen */
	const char *out;		/* reply being written */
	size_t outlen;
	size_t sent;
	long long next_drip;
};

struct listener {
	int fd;
	enum mode mode;
	char hits[256];
};

static struct listener *ls;
static size_t nls;
static struct conn *conns;
static size_t nconns;
static char *huge;
static volatile sig_atomic_t done;

static void
on_term(int sig)
{
	(void)sig;
	done = 1;
}

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int
parse_mode(const char *s)
{
	size_t i;

	for (i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
		if (strcmp(s, mode_names[i]) == 0)
			return (int)i;
	fprintf(stderr, "sentinel-guests: unknown mode %s\n", s);
	exit(64);
}

static void
add_listener(int ep, const char *dir, const char *name, enum mode m)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN };
	struct listener *l;
	int fd, i;

	ls = realloc(ls, (nls + 1) * sizeof(*ls));
	l = &ls[nls];
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name) >=
	    (int)sizeof(sa.sun_path)) {
		fprintf(stderr, "sentinel-guests: socket path too long\n");
		exit(64);
	}
	snprintf(l->hits, sizeof(l->hits), "%s/%s.hits", dir, name);
	unlink(sa.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, m == M_FULL ? 0 : 128) < 0) {
		perror(sa.sun_path);
		exit(71);
	}
	l->fd = fd;
	l->mode = m;
	/* Fill the backlog of a "full" listener with our own connects. */
	for (i = 0; m == M_FULL && i < 4; i++) {
		int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

		if (connect(c, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			close(c);
	}
	ev.data.u64 = nls;
	if (m != M_NOACCEPT && m != M_FULL)
		epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	nls++;
}

static void
add_spec(int ep, const char *dir, char *spec)
{
	char *eq = strchr(spec, '='), *star, name[200];
	long n = 1, i;
	enum mode m;

	if (eq == NULL) {
		fprintf(stderr, "sentinel-guests: bad spec %s\n", spec);
		exit(64);
	}
	*eq = '\0';
	m = (enum mode)parse_mode(eq + 1);
	if ((star = strchr(spec, '*')) != NULL) {
		*star = '\0';
		n = strtol(star + 1, NULL, 10);
	}
	for (i = 0; i < n; i++) {
		if (star != NULL)
			snprintf(name, sizeof(name), "%s%ld", spec, i);
		else
			snprintf(name, sizeof(name), "%s", spec);
		add_listener(ep, dir, name, m);
	}
}

static void
conn_close(int ep, struct conn *c)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
}

static void
hit(const struct listener *l)
{
	int fd = open(l->hits, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
	    0644);

	if (fd >= 0) {
		if (write(fd, "x", 1) != 1)
			perror(l->hits);
		close(fd);
	}
}

static void
accept_one(int ep, size_t li)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct conn *c;
	size_t i;
	int fd;

	fd = accept4(ls[li].fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	for (i = 0; i < nconns && conns[i].fd != -1; i++)
		;
	if (i == nconns) {
		conns = realloc(conns, ++nconns * sizeof(*conns));
	}
	c = &conns[i];
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->listener = (int)li;
	ev.data.u64 = (1ULL << 32) | i;
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static void
set_reply(struct conn *c, const char *s, size_t len)
{
	c->out = s;
	c->outlen = len;
	c->sent = 0;
}

/* A whole request (or CONNECT) line arrived: choose the answer. */
static void
on_line(int ep, struct conn *c)
{
	enum mode m = ls[c->listener].mode;
	static const char *const fixed[] = {
		[M_OK] = "{\"state\":\"OK\"}\n",
		[M_UNKNOWN] = "{\"state\":\"UNKNOWN\"}\n",
		[M_FAILED] = FAILED_REPLY,
		[M_UNSUPPORTED] = "{\"error\":\"unsupported method\"}\n",
		[M_GARBAGE] = "this is not json\n",
		[M_BADSTATE] = "{\"state\":\"SIDEWAYS\"}\n",
		[M_DRIP] = "{\"state\":\"OK\"}\n",
	};

	if (c->lines++ == 0)
		hit(&ls[c->listener]);
	if (m == M_HV_OK && c->lines == 1)
		set_reply(c, "OK 1073741824\n", 14);
	else if (m == M_HV_OK)
		set_reply(c, FAILED_REPLY, strlen(FAILED_REPLY));
	else if (m == M_CLOSER || m == M_HV_CLOSE)
		conn_close(ep, c);
	else if (m == M_SLOW_FAILED || m == M_SLOW_OK) {
		m = m == M_SLOW_OK ? M_OK : M_FAILED;
		set_reply(c, fixed[m], strlen(fixed[m]));
		c->next_drip = now_ms() + 1000;
	} else if (m == M_HUGE)
		set_reply(c, huge, HUGE_LEN);
	else if (m <= M_DRIP && fixed[m] != NULL)
		set_reply(c, fixed[m], strlen(fixed[m]));
}

/* held: a slow guest's answer waits while DIR/NAME.hold exists (a test
 * changes things in between without racing the one second). */
static int
held(const struct listener *l)
{
	char p[sizeof(l->hits)];
	size_t n = strlen(l->hits);

	if ((l->mode != M_SLOW_FAILED && l->mode != M_SLOW_OK) || n < 5)
		return 0;
	memcpy(p, l->hits, n - 5);
	memcpy(p + n - 5, ".hold", 6);
	return access(p, F_OK) == 0;
}

static void
conn_write(int ep, struct conn *c)
{
	enum mode m = ls[c->listener].mode;
	size_t len = c->outlen - c->sent;
	ssize_t n;

	if (c->fd == -1 || c->out == NULL || len == 0)
		return;
	if (now_ms() < c->next_drip || held(&ls[c->listener]))
		return;
	if (m == M_DRIP) {
		len = 1;
		c->next_drip = now_ms() + 1000;
	}
	n = send(c->fd, c->out + c->sent, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0 && errno != EAGAIN) {
		conn_close(ep, c);
		return;
	}
	if (n > 0)
		c->sent += (size_t)n;
}

static void
conn_read(int ep, struct conn *c)
{
	char buf[4096];
	ssize_t n, i;

	n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN)) {
		conn_close(ep, c);
		return;
	}
	for (i = 0; i < n && c->fd != -1; i++)
		if (buf[i] == '\n')
			on_line(ep, c);
}

static void
serve(int ep)
{
	struct epoll_event evs[64];
	int n, i;
	size_t k;

	while (!done) {
		n = epoll_wait(ep, evs, 64, 50);
		for (i = 0; i < n; i++) {
			if (evs[i].data.u64 >> 32 == 0) {
				accept_one(ep, (size_t)evs[i].data.u64);
				continue;
			}
			k = (size_t)(evs[i].data.u64 & 0xffffffffu);
			if (conns[k].fd != -1)
				conn_read(ep, &conns[k]);
		}
		for (k = 0; k < nconns; k++)
			conn_write(ep, &conns[k]);
	}
}

int
main(int argc, char **argv)
{
	char ready[4096];
	int ep, i, fd;

	if (argc < 3) {
		fprintf(stderr, "usage: sentinel-guests DIR SPEC...\n");
		return 64;
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	signal(SIGPIPE, SIG_IGN);
	huge = malloc(HUGE_LEN);
	memset(huge, 'A', HUGE_LEN);
	ep = epoll_create1(EPOLL_CLOEXEC);
	for (i = 2; i < argc; i++)
		add_spec(ep, argv[1], argv[i]);
	snprintf(ready, sizeof(ready), "%s/ready", argv[1]);
	if ((fd = open(ready, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0)
		close(fd);
	serve(ep);
	free(huge);
	free(ls);
	free(conns);
	return 0;
}
