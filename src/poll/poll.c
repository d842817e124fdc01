#include "poll/poll.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#define SLOT_BITS 8 /* the low bits of a tag: the slot (YIP_POLL_MAX fits) */
#define GEN_MASK  (~YIP_POLL_OWN >> SLOT_BITS)

_Static_assert(YIP_POLL_MAX <= 1 << SLOT_BITS, "a slot fits in a tag");

int yip_poll_open(struct yip_poll *p)
{
	memset(p, 0, sizeof(*p));
	for (unsigned i = 0; i < YIP_POLL_MAX; i++)
		p->e[i].fd = -1;
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	return p->epfd < 0 ? -1 : 0;
}

void yip_poll_close(struct yip_poll *p)
{
	if (p->epfd >= 0)
		close(p->epfd);
	p->epfd = -1;
}

static struct yip_poll_entry *find(struct yip_poll *p, int fd)
{
	for (unsigned i = 0; i < YIP_POLL_MAX; i++)
		if (p->e[i].fd == fd)
			return &p->e[i];
	return NULL;
}

int yip_poll_add(struct yip_poll *p, int fd, uint32_t events, yip_poll_fn fn, void *ctx)
{
	struct yip_poll_entry *e = fd >= 0 ? find(p, -1) : NULL;
	struct epoll_event ev = {.events = events};

	if (e == NULL) {
		errno = fd < 0 ? EBADF : ENOSPC;
		return -1;
	}
	p->gen = (p->gen + 1) & GEN_MASK;
	ev.data.u32 = YIP_POLL_OWN | p->gen << SLOT_BITS | (uint32_t)(e - p->e);
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
		return -1;
	*e = (struct yip_poll_entry){.fd = fd, .tag = ev.data.u32, .fn = fn, .ctx = ctx};
	return 0;
}

int yip_poll_mod(struct yip_poll *p, int fd, uint32_t events)
{
	struct yip_poll_entry *e = fd >= 0 ? find(p, fd) : NULL;
	struct epoll_event ev = {.events = events};

	if (e == NULL) {
		errno = ENOENT;
		return -1;
	}
	ev.data.u32 = e->tag;
	return epoll_ctl(p->epfd, EPOLL_CTL_MOD, fd, &ev);
}

void yip_poll_del(struct yip_poll *p, int fd)
{
	struct yip_poll_entry *e = fd >= 0 ? find(p, fd) : NULL;

	if (e == NULL)
		return;
	epoll_ctl(p->epfd, EPOLL_CTL_DEL, fd, NULL);
	*e = (struct yip_poll_entry){.fd = -1};
}

int yip_poll_wait(struct yip_poll *p, int timeout, struct epoll_event *evs, int max)
{
	int n, kept = 0;

	if (p->stopped)
		return -1;
	n = epoll_wait(p->epfd, evs, max, timeout);
	if (n < 0)
		return errno == EINTR ? 0 : -1;
	for (int i = 0; i < n; i++) {
		uint32_t tag = evs[i].data.u32;
		struct yip_poll_entry *e = &p->e[(tag & ((1u << SLOT_BITS) - 1)) % YIP_POLL_MAX];

		if (!(tag & YIP_POLL_OWN)) {
			evs[kept++] = evs[i];
			continue;
		}
		if (e->fd < 0 || e->tag != tag)
			continue; /* removed since epoll reported it */
		e->fn(e->ctx, evs[i].events);
		if (p->stopped)
			return -1;
	}
	return kept;
}

void yip_poll_stop(struct yip_poll *p)
{
	p->stopped = true;
}
