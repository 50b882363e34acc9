// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The listener's network: listening sockets, refused connections read until they close,
 * dialing an agent that listens, and sorting new connections into control and data.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

#include "../common/common-local.h"
#include "listen-local.h"
#include "transport-local.h"

/* What a failed dial (-errno @e) says. */
static const char *dial_error(const struct hgt_listen_peer *pr, int e)
{
	return hgt__sock_dial_error(pr->transport, e);
}

/* A connection to a peer's agent (TCP, vsock, or through a hybrid-vsock VMM), non-blocking
 * once made; -errno. */
static int dial(const struct hgt_listen_peer *pr)
{
	int fd = hgt__sock_dial(pr->transport, pr->host, pr->cid, pr->path, pr->port);

	if (fd >= 0)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

/* A dialed guest's READY says its CPUs: one data connection each, naming CPU and session. */
void hgt__listen_dial_data(struct listener *l, struct guest *g, const uint8_t *p)
{
	uint32_t ncpu;

	memcpy(&ncpu, p, 4);
	if (!ncpu || ncpu > MAX_CPUS) {
		hgt__listen_fault(l, g, "READY says %u CPUs", ncpu);
		return;
	}
	for (uint32_t cpu = 0; cpu < ncpu; cpu++) {
		int fd = dial(g->peer);
		uint8_t h[16];
		uint32_t magic = HGT__DATA_MAGIC;

		memcpy(h, &magic, 4);
		memcpy(h + 4, &cpu, 4);
		memcpy(h + 8, &g->session, 8);
		if (fd < 0 || hgt__write_full(fd, h, sizeof(h)) ||
		    hgt__listen_add_chan(l, g, fd, (int)cpu)) {
			if (fd >= 0)
				close(fd);
			hgt__listen_fault(l, g, "cannot open the data connection of cpu %u: %s",
					  cpu, fd < 0 ? dial_error(g->peer, fd) : strerror(errno));
			return;
		}
	}
}

/* A guest whose agent listens: dial its control connection, send its settings and start. */
int hgt__listen_open_peer(struct listener *l, const struct hgt_listen_peer *pr)
{
	struct guest *g = NULL;
	int fd;

	if (pr->transport != HGT_TRANSPORT_TCP && pr->transport != HGT_TRANSPORT_VSOCK &&
	    (pr->transport != HGT_TRANSPORT_HVSOCK || !pr->path))
		return hgt__errorf(EINVAL, "listen: guest %s: dial TCP, vsock or hybrid vsock",
				   pr->name);
	fd = hgt__listen_named_guest(l, pr->name, &g);
	if (fd)
		return fd;
	g->peer = pr;
	g->record = pr->record;
	fd = dial(pr);
	if (fd < 0) {
		if (pr->transport == HGT_TRANSPORT_HVSOCK)
			hgt__listen_fault(l, g, "cannot connect to unix:%s:%u: %s", pr->path,
					  pr->port, dial_error(pr, fd));
		else if (pr->transport == HGT_TRANSPORT_VSOCK)
			hgt__listen_fault(l, g, "cannot connect to vsock %u:%u: %s", pr->cid,
					  pr->port, strerror(-fd));
		else
			hgt__listen_fault(l, g, "cannot connect to %s:%u: %s", pr->host, pr->port,
					  strerror(-fd));
		return 0; /* the others and the host go on */
	}
	g->ctl_r = g->ctl_w = fd;
	if (g->record && hgt__listen_send_config(g))
		hgt__listen_fault(l, g, "cannot send its settings: %s", strerror(errno));
	else
		hgt__listen_send_cmd(g, "1\n");
	g->start_sent = true;
	return 0;
}

int hgt__listen_socket(struct listener *l, int family, unsigned int port)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1, e;

	if (fd < 0)
		return hgt__errorf(errno, "listen: socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_VSOCK) {
		struct sockaddr_vm sa = { .svm_family = AF_VSOCK,
					  .svm_cid = VMADDR_CID_ANY,
					  .svm_port = port };

		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
			goto fail;
	} else {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons((uint16_t)port) };

		sa.sin_addr.s_addr = htonl(INADDR_ANY);
		if (l->o.bind_addr && inet_pton(AF_INET, l->o.bind_addr, &sa.sin_addr) != 1) {
			close(fd);
			return hgt__errorf(EINVAL, "listen: --bind '%s': not an IPv4 address",
					   l->o.bind_addr);
		}
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
			goto fail;
	}
	if (listen(fd, 64))
		goto fail;
	return fd;
fail:
	e = errno;
	close(fd);
	return hgt__errorf(e, "listen: %s port %s%s%u: %s", family == AF_VSOCK ? "vsock" : "tcp",
			   family != AF_VSOCK && l->o.bind_addr ? l->o.bind_addr : "",
			   family != AF_VSOCK && l->o.bind_addr ? ":" : "", port, strerror(e));
}

/*
 * A listening UNIX socket at @path (where a hybrid-vsock VMM forwards its guests'
 * connections). A socket left there by an earlier run that nobody answers on is replaced;
 * anything else at @path (a file, a link, a live socket) is refused, never removed.
 */
int hgt__listen_unix_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, e;

	if (strlen(path) >= sizeof(sa.sun_path))
		return hgt__errorf(ENAMETOOLONG,
				   "listen: --unix '%s': path too long (at most %zu bytes)", path,
				   sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (!lstat(path, &st)) {
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		bool live = probe < 0 || !S_ISSOCK(st.st_mode) ||
			    !connect(probe, (struct sockaddr *)&sa, sizeof(sa)) ||
			    errno != ECONNREFUSED;

		if (probe >= 0)
			close(probe);
		if (live)
			return hgt__errorf(EEXIST, "listen: --unix '%s': %s exists", path,
					   S_ISSOCK(st.st_mode) ? "a socket someone listens on"
								: "a file that is not a socket");
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return hgt__errorf(errno, "listen: socket: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64)) {
		e = errno;
		close(fd);
		return hgt__errorf(e, "listen: --unix '%s': %s", path, strerror(e));
	}
	return fd;
}

/* Close a refused connection once its peer has read the refusal: closing with its bytes
 * unread would send a reset, which can overtake the refusal. */
static void linger_refused(struct listener *l, int fd)
{
	shutdown(fd, SHUT_WR);
	if (l->nr_refused == MAX_PENDING) { /* the oldest goes now */
		close(l->refused[0].fd);
		memmove(l->refused, l->refused + 1, sizeof(l->refused[0]) * (MAX_PENDING - 1));
		l->nr_refused--;
	}
	l->refused[l->nr_refused++] = (struct pending){ .fd = fd, .t = hgt__now_ms() };
}

/* Read and drop what refused peers send; close each at its end or when it lingered long. */
void hgt__listen_refused_tick(struct listener *l, uint64_t t)
{
	for (int i = 0; i < l->nr_refused;) {
		uint8_t junk[4096];
		ssize_t r;

		while ((r = read(l->refused[i].fd, junk, sizeof(junk))) > 0)
			;
		if ((r < 0 && errno == EAGAIN) && t - l->refused[i].t < REFUSED_LINGER_MS) {
			i++;
			continue;
		}
		close(l->refused[i].fd);
		l->refused[i] = l->refused[--l->nr_refused];
	}
}

/* accept() failed: out of file descriptors (or memory) is said once and the listening
 * sockets rest a second, instead of a loop that polls them readable and fails again. */
static void accept_failed(struct listener *l, int e)
{
	if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM)
		return;
	l->accept_paused = hgt__now_ms() + 1000;
	if (!l->accept_failing)
		hgt__listen_log(l, "cannot accept a connection: %s (%d guests): new guests wait",
				strerror(e), l->nr_g);
	l->accept_failing = true;
}

/* A new connection's first bytes say what it is: a control stream (its guest starts now)
 * or a data channel (joined to the guest whose HELLO names its session). Returns true when
 * the connection was handed over or closed. */
static bool classify(struct listener *l, struct pending *p)
{
	uint32_t magic, h[4];
	uint64_t session;
	int i;

	memcpy(&magic, p->hdr, 4);
	if (magic == HGT__CTL_MAGIC) {
		char name[32];
		struct guest *g;

		snprintf(name, sizeof(name), "net-%d", ++l->tcp_count);
		g = hgt__listen_new_guest(l, name);
		if (!g) {
			/* the agent is told why, so it can say so and fail */
			static const char why[] = "too many guests connected to this listener";
			uint8_t m[HGT__MSG_HDR + sizeof(why)];
			uint32_t mh[3] = { HGT__CTL_MAGIC, HGT__MSG_REFUSED, sizeof(why) };

			memcpy(m, mh, HGT__MSG_HDR);
			memcpy(m + HGT__MSG_HDR, why, sizeof(why));
			if (write(p->fd, m, sizeof(m)) < 0)
				(void)0; /* it is being closed anyway */
			hgt__listen_log(l, "too many guests: connection closed");
			linger_refused(l, p->fd);
			return true;
		}
		g->ctl_r = g->ctl_w = p->fd;
		hgt__listen_ctl_bytes(l, g, p->hdr, 4);
		if (l->o.start) {
			hgt__listen_send_cmd(g, "1\n");
			g->start_sent = true;
			g->t_start = hgt__now_ms();
		}
		hgt__listen_log(l, "guest %s connected", g->name);
		return true;
	}
	if (magic != HGT__DATA_MAGIC) {
		hgt__listen_log(l, "a connection sent no hgtrace header (0x%08x): closed", magic);
		close(p->fd);
		return true;
	}
	if (p->got < HGT__DATA_HDR)
		return false;
	memcpy(h, p->hdr, 16);
	memcpy(&session, p->hdr + 16, 8);
	for (i = 0; i < l->nr_g; i++) {
		struct guest *g = l->g[i];
		struct chan *c;

		if (!g || g->fifo || !g->ready || g->session != session || g->done)
			continue;
		if (h[1] < HGT__PROTO_MIN || h[1] > HGT__PROTO_VERSION || h[2] >= MAX_CPUS ||
		    (g->nr_cpus && h[2] >= g->nr_cpus) || h[3] < 4096 || h[3] > 65536 ||
		    (h[3] & (h[3] - 1)) || (g->page_size && h[3] != g->page_size)) {
			hgt__listen_fault(
				l, g,
				"data channel header rejected (protocol version %u, cpu %u, page %u)",
				h[1], h[2], h[3]);
			close(p->fd);
			return true;
		}
		for (int k = 0; k < g->nr_data; k++)
			if (g->data[k].cpu == (int)h[2]) {
				hgt__listen_fault(l, g, "a second data channel for cpu %u", h[2]);
				close(p->fd);
				return true;
			}
		if (hgt__listen_add_chan(l, g, p->fd, (int)h[2])) {
			close(p->fd);
			return true;
		}
		c = &g->data[g->nr_data - 1];
		memcpy(c->hdr, p->hdr, HGT__DATA_HDR);
		c->hdr_got = HGT__DATA_HDR;
		hgt__listen_batch(c, true);
		g->page_size = h[3];
		return true;
	}
	return false; /* its HELLO has not arrived yet */
}

void hgt__listen_accept_one(struct listener *l, int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0) {
		accept_failed(l, errno);
		return;
	}
	if (l->accept_failing)
		hgt__listen_log(l, "accepting connections again");
	l->accept_failing = false;
	l->pend[l->nr_pend++] = (struct pending){ .fd = fd, .t = hgt__now_ms() };
}

/* A pending connection's first bytes: the magic, then the rest of a data header. */
void hgt__listen_pending_read(struct listener *l, struct pending *p)
{
	size_t want = p->got < 4 ? 4 : HGT__DATA_HDR;
	ssize_t r = read(p->fd, p->hdr + p->got, want - p->got);

	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		close(p->fd);
		p->fd = -1;
		return;
	}
	p->got += (size_t)r;
	if (p->got >= 4 && classify(l, p))
		p->fd = -1;
}

/* Data channels waiting for their HELLO; silent ones given up after 10 s. */
void hgt__listen_pending_tick(struct listener *l)
{
	for (int i = 0; i < l->nr_pend; i++) {
		struct pending *p = &l->pend[i];

		if (p->fd >= 0 && p->got == HGT__DATA_HDR && classify(l, p))
			p->fd = -1;
		if (p->fd >= 0 && hgt__now_ms() - p->t > 10000) {
			hgt__listen_log(l, "a connection waited 10 s for its guest: closed");
			close(p->fd);
			p->fd = -1;
		}
		if (p->fd < 0)
			l->pend[i--] = l->pend[--l->nr_pend];
	}
}
