/*
 * The io_uring driver of the event loop (io=uring, io=uring-busy).
 *
 * Receives are kept armed in the ring: UDP_SLOTS recvmsg on the UDP socket
 * and TUN_SLOTS reads on the TUN, each with buffers of its own, so one
 * io_uring_enter both re-arms what completed and waits for the next
 * completion. Signals, the control socket, the resolver's eventfd and the
 * extra sockets of many-ports probing are on the loop's epoll set, which
 * the ring watches with a poll; sends keep the synchronous sendmmsg
 * path of yip_loop_flush. Everything is allocated once here; nothing per packet.
 */
#include "loop/internal.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <liburing.h>
#include <netinet/udp.h>

#include "util/clock.h"
#include "util/log.h"

#define RING_ENTRIES 256
#define UDP_SLOTS    16
#define TUN_SLOTS    8
#define N_SLOTS      (1 + UDP_SLOTS + TUN_SLOTS) /* the epoll poll, then UDP, then TUN */
#define CQE_BATCH    64 /* more than can be in flight (N_SLOTS receives + their polls) */
#define MAX_FAILS    100
#define EXIT_WAIT_MS 1000

/* What a request is, in the upper half of its user_data; the lower half is
 * the index of its slot. */
enum kind {
	K_EPOLL = 1, /* poll for POLLIN on the loop's epoll set */
	K_UDP,       /* recvmsg on the UDP socket */
	K_TUN,       /* read from the TUN */
	K_WAIT,      /* poll linked in front of a receive that found nothing last time */
	K_CANCEL,    /* async cancel at exit: its completion is not counted in flight */
	K_COUNT
};

static const char *const kind_what[K_COUNT] = {
    [K_EPOLL] = "poll on the epoll set",
    [K_UDP] = "recvmsg on the UDP socket",
    [K_TUN] = "read from the TUN",
    [K_WAIT] = "poll before a receive",
};

struct slot {
	enum kind kind;
	int fd;
	unsigned fails; /* failed completions in a row */
	/*
	 * The last attempt completed with -EAGAIN. Some kernels (6.1 for an
	 * O_NONBLOCK TUN) fail a read at once rather than wait for data, so
	 * re-arming it as is would spin; a linked poll waits first instead.
	 */
	bool wait_first;
	uint8_t *buf;
	/* UDP only: the kernel reads the msghdr and writes back msg_flags,
	 * msg_namelen and msg_controllen, so they live as long as the request. */
	struct msghdr msg;
	struct iovec iov;
	union yip_sockaddr from;
	union {
		char buf[UDP_CTRL_LEN];
		struct cmsghdr align;
	} ctrl;
};

struct uring {
	struct yip_loop *l;
	struct io_uring ring;
	bool ring_ok;
	bool busy;
	bool stopping;        /* leave after this batch of completions */
	int rc;               /* what to return once stopping */
	unsigned inflight;    /* requests whose completion has not been seen */
	unsigned enter_fails; /* io_uring_enter errors in a row */
	bool warned[K_COUNT]; /* an error of this kind was logged since the last success */
	size_t udp_buf_size;
	uint8_t *udp_bufs, *tun_bufs;
	struct slot slots[N_SLOTS];
};

static uint64_t user_data(enum kind k, unsigned idx)
{
	return (uint64_t)k << 32 | idx;
}

static void stop(struct uring *u, int rc)
{
	if (!u->stopping)
		u->rc = rc;
	u->stopping = true;
}

/* The next free SQE, submitting what is queued first if fewer than need are left. */
static struct io_uring_sqe *sqe_get(struct uring *u, unsigned need)
{
	if (io_uring_sq_space_left(&u->ring) < need)
		io_uring_submit(&u->ring);
	if (io_uring_sq_space_left(&u->ring) < need)
		return NULL;
	return io_uring_get_sqe(&u->ring);
}

/* Queues the slot's request (after a poll for POLLIN if wait_first); 0 or -1. */
static int arm(struct uring *u, struct slot *s)
{
	unsigned idx = (unsigned)(s - u->slots);
	bool linked = s->wait_first && s->kind != K_EPOLL;
	struct io_uring_sqe *sqe = sqe_get(u, linked ? 2 : 1);

	if (sqe == NULL) {
		log_err("io=uring: the submission queue is full");
		return -1;
	}
	if (linked) {
		/* Both SQEs go in the same submission (sqe_get made room for two),
		 * or the link would not hold. */
		io_uring_prep_poll_add(sqe, s->fd, POLLIN);
		io_uring_sqe_set_flags(sqe, IOSQE_IO_LINK);
		io_uring_sqe_set_data64(sqe, user_data(K_WAIT, idx));
		u->inflight++;
		sqe = io_uring_get_sqe(&u->ring);
	}
	switch (s->kind) {
	case K_EPOLL:
		io_uring_prep_poll_add(sqe, s->fd, POLLIN);
		break;
	case K_UDP:
		s->iov.iov_len = u->udp_buf_size;
		s->msg.msg_namelen = sizeof(s->from);
		s->msg.msg_controllen = s->msg.msg_control != NULL ? sizeof(s->ctrl.buf) : 0;
		s->msg.msg_flags = 0;
		io_uring_prep_recvmsg(sqe, s->fd, &s->msg, 0);
		break;
	case K_TUN:
		/* The TUN is not seekable: the offset is ignored. */
		io_uring_prep_read(sqe, s->fd, s->buf, TUN_BUF, 0);
		break;
	default:
		break;
	}
	io_uring_sqe_set_data64(sqe, user_data(s->kind, idx));
	u->inflight++;
	return 0;
}

/*
 * Counts a failed completion of s. Transient errors only re-arm (-EAGAIN
 * after a wait for POLLIN). Others are logged once per run of failures,
 * and MAX_FAILS in a row end the loop rather than spin on them.
 */
static void failed(struct uring *u, struct slot *s, int res)
{
	if (res == -EAGAIN || res == -EINTR || res == -ENOBUFS) {
		if (res == -EAGAIN)
			s->wait_first = true;
		return;
	}
	if (!u->warned[s->kind]) {
		u->warned[s->kind] = true;
		log_warn("io=uring: %s: %s", kind_what[s->kind],
		         res == 0 ? "end of file" : strerror(-res));
	}
	if (++s->fails >= MAX_FAILS) {
		log_err("io=uring: %s failed %u times in a row (last: %s); giving up",
		        kind_what[s->kind], s->fails, res == 0 ? "end of file" : strerror(-res));
		stop(u, 1);
	}
}

static void succeeded(struct uring *u, struct slot *s)
{
	s->fails = 0;
	s->wait_first = false;
	u->warned[s->kind] = false;
}

/* Handles one completion and re-arms its slot. */
static void complete(struct uring *u, const struct io_uring_cqe *cqe, uint64_t now)
{
	struct yip_loop *l = u->l;
	uint64_t data = io_uring_cqe_get_data64(cqe);
	enum kind k = (enum kind)(data >> 32);
	unsigned idx = (unsigned)(data & 0xffffffffu);
	int res = cqe->res;
	struct slot *s;

	if (k == K_CANCEL)
		return;
	u->inflight--;
	if (u->stopping || idx >= N_SLOTS)
		return;
	s = &u->slots[idx];
	if (k == K_WAIT) {
		/* The receive linked behind completes too (-ECANCELED if this
		 * failed) and does the slot's accounting; only say why here. */
		if (res < 0 && !u->warned[K_WAIT]) {
			u->warned[K_WAIT] = true;
			log_warn("io=uring: %s: %s", kind_what[K_WAIT], strerror(-res));
		}
		return;
	}
	if (res < 0 || (res == 0 && k != K_UDP)) {
		failed(u, s, res);
	} else if (k == K_EPOLL) {
		struct epoll_event evs[8];

		succeeded(u, s);
		/* All in the set is yip_loop_wait's to handle: the fds registered
		 * with callbacks (signals, the control socket, the resolver) and
		 * the extra sockets. The TUN and the UDP socket are in the ring. */
		if (yip_loop_wait(l, 0, evs, 8) < 0) {
			stop(u, l->stopped ? 0 : 1);
			return;
		}
	} else if (k == K_UDP) {
		succeeded(u, s);
		if (s->msg.msg_flags & MSG_TRUNC)
			yip_loop_udp_truncated(l);
		else if (res > 0) {
			uint16_t seg;
			uint64_t stamp;

			udp_msg_info(&s->msg, &seg, &stamp);
			yip_loop_udp_message(l, now, &s->from, s->buf, (size_t)res, seg, stamp);
		}
	} else {
		succeeded(u, s);
		yip_loop_tun_read(l, now, s->buf, (size_t)res);
	}
	if (!u->stopping && arm(u, s) != 0)
		stop(u, 1);
}

/* Handles every completion that is ready, then flushes what they produced. */
static void drain(struct uring *u)
{
	struct io_uring_cqe *cqes[CQE_BATCH];
	unsigned n;

	while ((n = io_uring_peek_batch_cqe(&u->ring, cqes, CQE_BATCH)) > 0) {
		uint64_t now = yip_now_mono();

		for (unsigned i = 0; i < n; i++)
			complete(u, cqes[i], now);
		io_uring_cq_advance(&u->ring, n);
		if (!u->stopping)
			yip_loop_flush(u->l);
		if (n < CQE_BATCH)
			break;
	}
}

/* Counts an io_uring_enter error; 0 or -1 once they persist. */
static int enter_result(struct uring *u, int ret)
{
	if (ret >= 0 || ret == -ETIME || ret == -EINTR || ret == -EAGAIN || ret == -EBUSY) {
		u->enter_fails = 0;
		return 0;
	}
	if (u->enter_fails++ == 0)
		log_warn("io=uring: io_uring_enter: %s", strerror(-ret));
	if (u->enter_fails >= MAX_FAILS) {
		log_err("io=uring: io_uring_enter failed %u times in a row (last: %s); giving up",
		        u->enter_fails, strerror(-ret));
		return -1;
	}
	return 0;
}

/* Submits the re-armed requests and sleeps until a completion or timeout_ms. */
static int wait_sleep(struct uring *u, int timeout_ms)
{
	struct __kernel_timespec ts = {
	    .tv_sec = timeout_ms / 1000,
	    .tv_nsec = (long long)(timeout_ms % 1000) * 1000000,
	};
	struct io_uring_cqe *cqe;

	return enter_result(u, io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, &ts, NULL));
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/*
 * Busy mode: submits without waiting, then spins on the completion queue
 * until something completes or timeout_ms (the next timer) passes. With
 * IORING_SETUP_TASKRUN_FLAG the kernel flags work it deferred to this task
 * (completions it has not posted yet) instead of interrupting it; that work
 * runs on a non-blocking io_uring_enter.
 */
static int wait_spin(struct uring *u, int timeout_ms)
{
	uint64_t deadline = yip_now_mono() + (uint64_t)timeout_ms * YIP_NS_PER_MS;

	if (io_uring_sq_ready(&u->ring) > 0 && enter_result(u, io_uring_submit(&u->ring)) != 0)
		return -1;
	for (unsigned spin = 0;; spin++) {
		if (io_uring_cq_ready(&u->ring) > 0)
			return 0;
		if ((IO_URING_READ_ONCE(*u->ring.sq.kflags) &
		     (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) &&
		    enter_result(u, io_uring_get_events(&u->ring)) != 0)
			return -1;
		/* The clock every few rounds: the timers need ms, not ns. */
		if (spin % 32 == 0 && yip_now_mono() >= deadline)
			return 0;
		cpu_relax();
	}
}

/*
 * Limits the ring to the operations this file submits, and to linked
 * requests, before it is enabled: the seccomp filter (src/sandbox) does not
 * see what a ring does, so a ring able to open files or connect sockets
 * would be a way around it. No registrations are allowed either.
 */
static int restrict_ring(struct io_uring *ring)
{
	struct io_uring_restriction res[] = {
	    {.opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = IORING_OP_POLL_ADD},
	    {.opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = IORING_OP_RECVMSG},
	    {.opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = IORING_OP_READ},
	    {.opcode = IORING_RESTRICTION_SQE_OP, .sqe_op = IORING_OP_ASYNC_CANCEL},
	    {.opcode = IORING_RESTRICTION_SQE_FLAGS_ALLOWED, .sqe_flags = IOSQE_IO_LINK},
	};
	/* The system call itself: some liburing builds declare
	 * io_uring_register_restrictions and io_uring_enable_rings but do not
	 * export them. */
	if (syscall(__NR_io_uring_register, ring->ring_fd, IORING_REGISTER_RESTRICTIONS, res,
	            sizeof(res) / sizeof(res[0])) != 0 ||
	    syscall(__NR_io_uring_register, ring->ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0) !=
	        0)
		return -errno;
	return 0;
}

static int setup_ring(struct uring *u)
{
	/*
	 * COOP_TASKRUN (5.19+): completions are posted when this task enters
	 * the kernel rather than by interrupting it; the loop enters it all the
	 * time. TASKRUN_FLAG lets busy mode see that some are waiting.
	 * R_DISABLED (5.10+): the ring starts disabled, to be restricted first.
	 */
	unsigned flags = IORING_SETUP_COOP_TASKRUN | (u->busy ? IORING_SETUP_TASKRUN_FLAG : 0);
	int ret = io_uring_queue_init(RING_ENTRIES, &u->ring, flags | IORING_SETUP_R_DISABLED);
	bool restricted = ret == 0;

	if (ret == -EINVAL) {
		ret = io_uring_queue_init(RING_ENTRIES, &u->ring, IORING_SETUP_R_DISABLED);
		restricted = ret == 0;
	}
	if (ret == -EINVAL)
		ret = io_uring_queue_init(RING_ENTRIES, &u->ring, 0);
	if (ret < 0) {
		log_err("io=uring: cannot set up io_uring: %s; use io=epoll", strerror(-ret));
		return -1;
	}
	u->ring_ok = true;
	if (!restricted) {
		log_info("io=uring: this kernel cannot restrict a ring to the operations it uses");
		return 0;
	}
	ret = restrict_ring(&u->ring);
	if (ret < 0) {
		log_err("io=uring: cannot restrict the ring: %s", strerror(-ret));
		return -1;
	}
	return 0;
}

static int setup(struct uring *u, struct yip_loop *l, bool busy)
{
	u->l = l;
	u->busy = busy;
	u->udp_buf_size = l->rx.gro ? UDP_GRO_BUF : l->rx.buf_size;
	if (setup_ring(u) != 0)
		return -1;
	u->udp_bufs = malloc(UDP_SLOTS * u->udp_buf_size);
	u->tun_bufs = malloc(TUN_SLOTS * (size_t)TUN_BUF);
	if (u->udp_bufs == NULL || u->tun_bufs == NULL) {
		log_err("io=uring: out of memory for the receive buffers");
		return -1;
	}
	for (unsigned i = 0; i < N_SLOTS; i++) {
		struct slot *s = &u->slots[i];

		if (i == 0) {
			s->kind = K_EPOLL;
			s->fd = l->poll.epfd;
		} else if (i <= UDP_SLOTS) {
			s->kind = K_UDP;
			s->fd = l->udp_fd;
			s->buf = u->udp_bufs + (size_t)(i - 1) * u->udp_buf_size;
			s->iov.iov_base = s->buf;
			s->msg.msg_name = &s->from;
			s->msg.msg_iov = &s->iov;
			s->msg.msg_iovlen = 1;
			s->msg.msg_control = s->ctrl.buf;
		} else {
			s->kind = K_TUN;
			s->fd = l->tun_fd;
			s->buf = u->tun_bufs + (size_t)(i - 1 - UDP_SLOTS) * TUN_BUF;
		}
	}
	for (unsigned i = 0; i < N_SLOTS; i++)
		if (arm(u, &u->slots[i]) != 0)
			return -1;
	return 0;
}

/*
 * Cancels whatever is still in flight and waits (a bounded time) for the
 * kernel to let go of the buffers before freeing them. Cancels by user_data
 * rather than IORING_ASYNC_CANCEL_ANY (5.19+) to work on every kernel with
 * io_uring; a receive waiting behind its linked poll goes with the poll.
 */
static void teardown(struct uring *u)
{
	bool leak = false;

	if (u->ring_ok && u->inflight > 0) {
		uint64_t deadline = yip_now_mono() + EXIT_WAIT_MS * YIP_NS_PER_MS;

		u->stopping = true;
		for (unsigned i = 0; i < N_SLOTS; i++) {
			enum kind kinds[2] = {u->slots[i].kind, K_WAIT};

			for (unsigned j = 0; j < 2; j++) {
				struct io_uring_sqe *sqe = sqe_get(u, 1);

				if (sqe == NULL)
					break;
				io_uring_prep_cancel64(sqe, user_data(kinds[j], i), 0);
				io_uring_sqe_set_data64(sqe, user_data(K_CANCEL, i));
			}
		}
		while (u->inflight > 0 && yip_now_mono() < deadline) {
			struct __kernel_timespec ts = {.tv_nsec = 100 * 1000000};
			struct io_uring_cqe *cqe;
			struct io_uring_cqe *cqes[CQE_BATCH];
			unsigned n;

			io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, &ts, NULL);
			n = io_uring_peek_batch_cqe(&u->ring, cqes, CQE_BATCH);
			for (unsigned i = 0; i < n; i++)
				complete(u, cqes[i], 0);
			io_uring_cq_advance(&u->ring, n);
		}
		if (u->inflight > 0) {
			/* The kernel may still write into them: better leaked than reused. */
			log_warn("io=uring: %u requests still in flight at exit", u->inflight);
			leak = true;
		}
	}
	if (u->ring_ok)
		io_uring_queue_exit(&u->ring);
	if (!leak) {
		free(u->udp_bufs);
		free(u->tun_bufs);
	}
}

int yip_loop_run_uring(struct yip_loop *l, bool busy)
{
	struct uring *u = calloc(1, sizeof(*u));
	int rc = 1;

	if (u == NULL) {
		log_err("io=uring: out of memory");
		return 1;
	}
	if (setup(u, l, busy) == 0 && yip_loop_sandbox(l) == 0) {
		log_info("io=uring: %d UDP receives and %d TUN reads in flight%s", UDP_SLOTS,
		         TUN_SLOTS, busy ? ", busy polling" : "");
		while (!u->stopping) {
			int timeout = yip_loop_timeout(l);

			if ((busy ? wait_spin(u, timeout) : wait_sleep(u, timeout)) != 0) {
				stop(u, 1);
				break;
			}
			drain(u);
		}
		rc = u->rc;
	}
	teardown(u);
	free(u);
	return rc;
}
