/*
 * The loop's send path with worker threads (seal_later): a datagram the
 * socket cannot send (an IPv6 destination on an IPv4 socket) takes its seal
 * job with it. Before, the job stayed queued: the next datagram, built in
 * the same buffer, was sealed twice (and arrived unreadable), and a run of
 * failures queued jobs past the end of seal_jobs. Real loopback sockets;
 * what arrives is opened with the key it was sealed under.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loop/internal.h"
#include "peer/state.h" /* a device to pass the loop */

#define HDR  16
#define BODY 200

static int rx_fd = -1, tx_fd = -1;
static union yip_sockaddr rx_addr, v6_dest;
static struct yip_cipher_key key;
static struct yip_config cfg;
static struct yip_device *dev;
static struct yip_loop *loop;
static struct yip_io io;

static int setup(void **state)
{
	union yip_sockaddr lo = {.in4 = {.sin_family = AF_INET}};
	socklen_t len = sizeof(rx_addr);
	uint8_t raw[YIP_KEY_LEN];
	struct yip_loop_config lc;
	char err[256];

	(void)state;
	if (yip_crypto_init() != 0)
		return -1;
	lo.in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rx_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	tx_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (rx_fd < 0 || tx_fd < 0 || bind(rx_fd, &lo.sa, sizeof(lo.in4)) != 0 ||
	    bind(tx_fd, &lo.sa, sizeof(lo.in4)) != 0 || getsockname(rx_fd, &rx_addr.sa, &len) != 0)
		return -1;
	memset(&v6_dest, 0, sizeof(v6_dest));
	v6_dest.in6.sin6_family = AF_INET6;
	v6_dest.in6.sin6_port = htons(9);
	inet_pton(AF_INET6, "2001:db8::1", &v6_dest.in6.sin6_addr);
	memset(raw, 0x5a, sizeof(raw));
	yip_cipher_key_set(&key, YIP_CIPHER_CHACHA20_POLY1305, raw);
	memset(&cfg, 0, sizeof(cfg));
	lc = (struct yip_loop_config){
	    .tun_fd = -1,
	    .udp_fd = tx_fd,
	    .udp_family = AF_INET,
	    .device_name = "test0",
	    .workers = 2,
	    .config = &cfg,
	};
	loop = yip_loop_init(&lc, err, sizeof(err));
	dev = calloc(1, sizeof(*dev));
	if (loop == NULL || dev == NULL || !loop->threaded)
		return -1;
	yip_loop_io(loop, &io);
	yip_loop_attach(loop, dev); /* only its drop counters are used */
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	yip_loop_free(loop);
	free(dev);
	close(rx_fd);
	close(tx_fd);
	return 0;
}

/* Builds a datagram as the engine does with seal_later, and hands it to the
 * main link; a refusal is counted as the engine counts it. */
static void send_one(const union yip_sockaddr *to, uint64_t counter)
{
	const struct yip_link *lk = yip_link_get(io.links, YIP_LINK_MAIN);
	uint8_t *d = lk->ops->buf(lk->ctx, YIP_LINK_MAIN);

	assert_non_null(d);
	memset(d, 0, HDR);
	memcpy(d, &counter, sizeof(counter));
	for (unsigned i = 0; i < BODY; i++)
		d[HDR + i] = (uint8_t)(counter + i);
	io.seal_later(io.ctx, d, HDR, BODY, &key, counter);
	if (!lk->ops->send(lk->ctx, YIP_LINK_MAIN, to, HDR + BODY + YIP_AEAD_TAG, 0))
		yip_device_drop(dev, YIP_DROP_SEND_FAILED);
}

/* Receives one datagram and checks it opens under key with counter. */
static void expect_sealed_once(uint64_t counter)
{
	uint8_t d[2048], plain[2048];
	struct pollfd pfd = {.fd = rx_fd, .events = POLLIN};
	ssize_t n;

	assert_int_equal(poll(&pfd, 1, 2000), 1);
	n = recv(rx_fd, d, sizeof(d), 0);
	assert_int_equal(n, HDR + BODY + YIP_AEAD_TAG);
	assert_int_equal(yip_cipher_open(plain, &key, counter, d, HDR, d + HDR, (size_t)n - HDR),
	                 0);
	for (unsigned i = 0; i < BODY; i++)
		assert_int_equal(plain[i], (uint8_t)(counter + i));
}

/* One failed send, then a good one: the good one is sealed exactly once. */
static void test_failed_send_takes_its_job(void **state)
{
	uint64_t before = dev->drops[YIP_DROP_SEND_FAILED];

	(void)state;
	send_one(&v6_dest, 1);
	assert_int_equal(dev->drops[YIP_DROP_SEND_FAILED], before + 1);
	assert_int_equal(loop->n_seal, 0);
	send_one(&rx_addr, 2);
	yip_loop_flush(loop);
	expect_sealed_once(2);
}

/* Many more failures than a batch holds: no job piles up, and the next
 * datagrams still arrive readable. */
static void test_failures_do_not_overrun(void **state)
{
	uint64_t before = dev->drops[YIP_DROP_SEND_FAILED];

	(void)state;
	for (uint64_t c = 100; c < 100 + 3 * UDP_BATCH; c++) {
		send_one(&v6_dest, c);
		assert_true(loop->n_seal <= UDP_BATCH);
	}
	assert_int_equal(dev->drops[YIP_DROP_SEND_FAILED], before + 3 * UDP_BATCH);
	assert_int_equal(loop->n_seal, 0);
	for (uint64_t c = 1000; c < 1010; c++)
		send_one(&rx_addr, c);
	yip_loop_flush(loop);
	for (uint64_t c = 1000; c < 1010; c++)
		expect_sealed_once(c);
}

/* Failures between good datagrams of one batch: each good one arrives once, intact. */
static void test_interleaved(void **state)
{
	(void)state;
	for (uint64_t c = 2000; c < 2000 + 2 * UDP_BATCH; c++)
		send_one(c % 3 == 0 ? &v6_dest : &rx_addr, c);
	yip_loop_flush(loop);
	for (uint64_t c = 2000; c < 2000 + 2 * UDP_BATCH; c++)
		if (c % 3 != 0)
			expect_sealed_once(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_failed_send_takes_its_job),
	    cmocka_unit_test(test_failures_do_not_overrun),
	    cmocka_unit_test(test_interleaved),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
