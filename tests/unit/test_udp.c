/*
 * The UDP send batch on real loopback sockets: equal-size datagrams to one
 * address leave as one GSO train, and a train the kernel refuses as a whole
 * still arrives, datagram by datagram. A socket with SO_NO_CHECK makes the
 * kernel refuse every UDP_SEGMENT send (EINVAL), so the fallback is
 * exercised without needing a route whose MTU is smaller than a segment.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "udp/udp.h"

#define N    5
#define SIZE 1000

static int rx_fd = -1, tx_fd = -1;
static union yip_sockaddr rx_addr;

static int setup(void **state)
{
	union yip_sockaddr any = {.in4 = {.sin_family = AF_INET}};
	socklen_t len = sizeof(rx_addr);

	(void)state;
	any.in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rx_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	tx_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (rx_fd < 0 || tx_fd < 0 || bind(rx_fd, &any.sa, sizeof(any.in4)) != 0 ||
	    bind(tx_fd, &any.sa, sizeof(any.in4)) != 0 ||
	    getsockname(rx_fd, &rx_addr.sa, &len) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	close(rx_fd);
	close(tx_fd);
	return 0;
}

/* Receives what arrives within 1 s; checks each datagram's size and first byte. */
static unsigned drain(void)
{
	unsigned got = 0;
	uint8_t buf[65536];

	for (;;) {
		struct pollfd p = {.fd = rx_fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, got == N ? 50 : 1000) <= 0)
			return got;
		n = recv(rx_fd, buf, sizeof(buf), 0);
		assert_int_equal(n, SIZE);
		assert_int_equal(buf[0], got);
		got++;
	}
}

static unsigned send_train(struct udp_batch *b)
{
	for (unsigned i = 0; i < N; i++) {
		uint8_t *d = udp_tx_buf(b);

		assert_non_null(d);
		memset(d, (int)i, SIZE);
		assert_true(udp_tx_push(b, &rx_addr, SIZE, 0));
	}
	return udp_tx_flush(b);
}

static void train(void **state)
{
	struct udp_batch b;

	(void)state;
	assert_int_equal(udp_batch_init(&b, tx_fd, AF_INET, 2048, false, true), 0);
	assert_int_equal(send_train(&b), 0);
	assert_int_equal(drain(), N);
	if (b.gso) /* one message on kernels with UDP_SEGMENT */
		assert_int_equal(b.trains_sent, 1);
	udp_batch_free(&b);
}

static void refused_train_goes_singly(void **state)
{
	struct udp_batch b;
	int one = 1;

	(void)state;
	assert_int_equal(setsockopt(tx_fd, SOL_SOCKET, SO_NO_CHECK, &one, sizeof(one)), 0);
	assert_int_equal(udp_batch_init(&b, tx_fd, AF_INET, 2048, false, true), 0);
	assert_int_equal(send_train(&b), 0);
	assert_int_equal(drain(), N);
	udp_batch_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(train, setup, teardown),
	    cmocka_unit_test_setup_teardown(refused_train_goes_singly, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
