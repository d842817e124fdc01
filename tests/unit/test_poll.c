/*
 * The fd registry (src/poll): a registered fd's callback runs with its
 * events, the caller's own fds come back to it, an fd removed during a wait
 * is not called back even if its slot is taken again at once, and
 * yip_poll_stop ends the wait.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/eventfd.h>
#include <unistd.h>

#include "poll/poll.h"

struct seen {
	struct yip_poll *p;
	int calls;
	uint32_t events;
	int del_fd, add_fd; /* on its call: removes del_fd, registers add_fd */
	bool stop;
};

static void on_fd(void *ctx, uint32_t events)
{
	struct seen *s = ctx;

	s->calls++;
	s->events = events;
	if (s->del_fd >= 0)
		yip_poll_del(s->p, s->del_fd);
	if (s->add_fd >= 0)
		assert_int_equal(yip_poll_add(s->p, s->add_fd, EPOLLIN, on_fd, s), 0);
	if (s->stop)
		yip_poll_stop(s->p);
}

static int ready_fd(void)
{
	int fd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

static void test_dispatch(void **state)
{
	struct yip_poll p;
	struct seen a = {.p = &p, .del_fd = -1, .add_fd = -1};
	struct epoll_event evs[8], own = {.events = EPOLLIN, .data.u32 = 7};
	int fa = ready_fd(), fb = ready_fd(), quiet = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	(void)state;
	assert_int_equal(yip_poll_open(&p), 0);
	assert_int_equal(yip_poll_add(&p, fa, EPOLLIN, on_fd, &a), 0);
	assert_int_equal(yip_poll_add(&p, quiet, EPOLLIN, on_fd, &a), 0);
	assert_int_equal(epoll_ctl(p.epfd, EPOLL_CTL_ADD, fb, &own), 0);
	/* The registered fd is called back; the caller's comes back to it. */
	assert_int_equal(yip_poll_wait(&p, 0, evs, 8), 1);
	assert_int_equal(evs[0].data.u32, 7);
	assert_int_equal(a.calls, 1);
	assert_true(a.events & EPOLLIN);
	/* Watched for writing, it is called with EPOLLOUT; removed, never again. */
	assert_int_equal(yip_poll_mod(&p, fa, EPOLLOUT), 0);
	assert_int_equal(epoll_ctl(p.epfd, EPOLL_CTL_DEL, fb, NULL), 0);
	assert_int_equal(yip_poll_wait(&p, 0, evs, 8), 0);
	assert_int_equal(a.calls, 2);
	assert_true(a.events & EPOLLOUT);
	yip_poll_del(&p, fa);
	assert_int_equal(yip_poll_wait(&p, 0, evs, 8), 0);
	assert_int_equal(a.calls, 2);
	assert_int_equal(yip_poll_mod(&p, fa, EPOLLIN), -1);
	yip_poll_del(&p, quiet);
	yip_poll_close(&p);
	close(fa);
	close(fb);
	close(quiet);
}

static void test_removed_during_wait(void **state)
{
	struct yip_poll p;
	struct seen a = {.p = &p, .del_fd = -1, .add_fd = -1};
	struct seen b = {.p = &p, .del_fd = -1, .add_fd = -1};
	struct epoll_event evs[8];
	int fa = ready_fd(), fb = ready_fd(), fc = ready_fd();

	(void)state;
	assert_int_equal(yip_poll_open(&p), 0);
	assert_int_equal(yip_poll_add(&p, fa, EPOLLIN, on_fd, &a), 0);
	assert_int_equal(yip_poll_add(&p, fb, EPOLLIN, on_fd, &b), 0);
	/* Whichever comes first removes the other and gives its slot to fc:
	 * the other's pending event is dropped; on the next wait the one left
	 * and fc are called. */
	a.del_fd = fb;
	a.add_fd = fc;
	b.del_fd = fa;
	b.add_fd = fc;
	assert_int_equal(yip_poll_wait(&p, 0, evs, 8), 0);
	assert_int_equal(a.calls + b.calls, 1);
	a.del_fd = a.add_fd = b.del_fd = b.add_fd = -1;
	assert_int_equal(yip_poll_wait(&p, 0, evs, 8), 0);
	assert_int_equal(a.calls + b.calls, 3);
	/* A stop ends this wait at once, and every later one. */
	a.stop = b.stop = true;
	assert_int_equal(yip_poll_wait(&p, 0, evs, 8), -1);
	assert_int_equal(a.calls + b.calls, 4);
	assert_int_equal(yip_poll_wait(&p, 0, evs, 8), -1);
	assert_int_equal(a.calls + b.calls, 4);
	yip_poll_close(&p);
	yip_poll_close(&p); /* safe to repeat */
	close(fa);
	close(fb);
	close(fc);
}

static void test_full(void **state)
{
	struct yip_poll p;
	struct seen a = {.p = &p, .del_fd = -1, .add_fd = -1};
	int fds[YIP_POLL_MAX + 1];

	(void)state;
	assert_int_equal(yip_poll_open(&p), 0);
	for (int i = 0; i <= YIP_POLL_MAX; i++) {
		fds[i] = ready_fd();
		assert_int_equal(yip_poll_add(&p, fds[i], EPOLLIN, on_fd, &a),
		                 i < YIP_POLL_MAX ? 0 : -1);
	}
	assert_int_equal(yip_poll_add(&p, -1, EPOLLIN, on_fd, &a), -1);
	yip_poll_close(&p);
	for (int i = 0; i <= YIP_POLL_MAX; i++)
		close(fds[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dispatch),
	    cmocka_unit_test(test_removed_during_wait),
	    cmocka_unit_test(test_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
