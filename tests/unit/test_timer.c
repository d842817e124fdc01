/*
 * The peers' timer heap (src/peer/timer.c) against a brute-force model, and
 * the property it exists for: with 1 000 configured peers and one of them
 * busy, a node runs about as many peer timers as with that one peer alone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <string.h>

#include "pair.h"
#include "peer/internal.h"
#include "util/clock.h"

#include "testpkt.h"

#define N 300

static uint32_t rng = 12345;

static uint32_t next_rand(void)
{
	rng = rng * 1103515245 + 12345;
	return rng >> 8;
}

/* Random sets, deletions and pops; every pop is the earliest deadline. */
static void heap_matches_model(void **state)
{
	static struct yip_device dev;
	static struct yip_peer peers[N];
	uint64_t model[N];

	(void)state;
	memset(&dev, 0, sizeof(dev));
	assert_int_equal(timer_reserve(&dev, N), 0);
	for (int i = 0; i < N; i++) {
		memset(&peers[i], 0, sizeof(peers[i]));
		peers[i].dev = &dev;
		timer_init_peer(&peers[i]);
		model[i] = UINT64_MAX;
	}
	for (int step = 0; step < 200000; step++) {
		int i = (int)(next_rand() % N);
		unsigned op = next_rand() % 10;

		if (op < 6) {
			uint64_t when = 1 + next_rand() % 100000;

			timer_set(&peers[i], when);
			if (when < model[i])
				model[i] = when;
		} else if (op < 7) {
			timer_del(&peers[i]);
			model[i] = UINT64_MAX;
		} else {
			uint64_t now = next_rand() % 100000, best = UINT64_MAX;
			uint64_t first = timer_next(&dev);
			struct yip_peer *p = timer_pop_due(&dev, now);

			for (int k = 0; k < N; k++)
				if (model[k] < best)
					best = model[k];
			assert_int_equal(first, best);
			if (best > now) {
				assert_null(p);
				continue;
			}
			assert_non_null(p);
			assert_int_equal(model[p - peers], best);
			model[p - peers] = UINT64_MAX;
			assert_int_equal(p->timer_at, UINT64_MAX);
		}
		for (int k = 0; k < N; k++)
			assert_int_equal(peers[k].timer_at, model[k]);
	}
	timer_free(&dev);
}

/* A 64-byte IPv4/UDP packet from src to dst. */
static size_t ip4(uint8_t *p, const char *src, const char *dst)
{
	return ip4_packet(p, 64, IPPROTO_UDP, src, dst);
}

/* 30 s of a ping every 20 ms between nodes 0 and 1; node 0 also lists
 * `extra` idle peers. Returns how many peer timers node 0 ran. */
static uint64_t busy_pair(unsigned extra, uint64_t *delivered)
{
	struct pair_opts o = {.extra_peers = extra};
	struct pair P;
	uint8_t pkt[64];
	char err[256];
	uint64_t now = YIP_NS_PER_S, end = now + 30 * YIP_NS_PER_S, due = now, runs;

	assert_int_equal(pair_init(&P, &o, err, sizeof(err)), 0);
	for (uint64_t t = now; t < end; t += 20 * YIP_NS_PER_MS) {
		/* As the event loop does: the timers run at their deadlines and
		 * after every batch of I/O. */
		while (due <= t) {
			pair_settle(&P, due);
			due = pair_timers(&P, due);
		}
		yip_device_tx(&P.n[0].dev, t, pkt, ip4(pkt, "10.0.0.1", "10.0.0.2"));
		pair_settle(&P, t);
		yip_device_tx(&P.n[1].dev, t, pkt, ip4(pkt, "10.0.0.2", "10.0.0.1"));
		pair_settle(&P, t);
		due = pair_timers(&P, t);
	}
	*delivered = P.n[1].packets;
	runs = P.n[0].dev.timer_runs;
	pair_free(&P);
	return runs;
}

static void idle_peers_cost_nothing(void **state)
{
	uint64_t got1, got1000, alone, crowd;

	(void)state;
	alone = busy_pair(0, &got1);
	crowd = busy_pair(1000, &got1000);
	print_message("peer timer runs in 30 s with one busy peer: %llu alone, %llu among 1000 "
	              "idle peers\n",
	              (unsigned long long)alone, (unsigned long long)crowd);
	assert_true(got1 >= 1400 && got1000 >= 1400); /* the pings went through */
	assert_true(alone > 0);
	/* Idle peers have no deadline: not one run for any of them. */
	assert_true(crowd <= alone + alone / 10 + 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(heap_matches_model),
	    cmocka_unit_test(idle_peers_cost_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
