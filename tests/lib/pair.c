/* Two engines back to back in memory; see pair.h. */
#include "pair.h"

#include <arpa/inet.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/crypto.h"
#include "wire/wire.h"

#define STRIDE ((YIP_MAX_DGRAM + 63) & ~(size_t)63)

/* A data datagram the engine asked us to seal (seal_later), with a copy of its key. */
struct pair_seal {
	uint8_t *d;
	size_t hdr, len;
	uint64_t counter;
	struct yip_cipher_key key;
};

static __attribute__((noreturn, format(printf, 1, 2))) void fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("pair: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

static void *alloc(size_t len)
{
	void *p = aligned_alloc(64, (len + 63) & ~(size_t)63);

	if (p == NULL)
		fatal("out of memory");
	return p;
}

static void *zalloc(size_t len)
{
	return memset(alloc(len), 0, len);
}

/*
 * The datagram buffers of freed nodes, kept for the next node made with
 * the same queue size. A fuzzer that builds a pair per input would
 * otherwise have AddressSanitizer map, poison and unmap over a megabyte
 * per node per input, which cost more than the rest of the input. A reused
 * buffer is filled with 0xbe, as AddressSanitizer fills fresh memory, so a
 * node never sees what an earlier one left. Nodes are made and freed by one
 * thread.
 */
#define REUSE_SLOTS 4

static struct {
	uint8_t *mem;
	size_t len;
} reuse[REUSE_SLOTS];

static uint8_t *mem_get(size_t len)
{
	for (unsigned i = 0; i < REUSE_SLOTS; i++)
		if (reuse[i].mem != NULL && reuse[i].len == len) {
			uint8_t *m = reuse[i].mem;

			reuse[i].mem = NULL;
			return memset(m, 0xbe, len);
		}
	return alloc(len);
}

static void mem_put(uint8_t *m, size_t len)
{
	for (unsigned i = 0; m != NULL && i < REUSE_SLOTS; i++)
		if (reuse[i].mem == NULL) {
			reuse[i].mem = m;
			reuse[i].len = len;
			return;
		}
	free(m);
}

/* ---- the engine's callbacks, and its links: the main socket and the extra ones ---- */

static uint8_t *io_udp_buf(void *ctx, uint32_t link)
{
	struct pair_node *n = ctx;

	(void)link;
	if (n->nout < n->out_cap)
		return n->out[n->nout].buf;
	if (!n->discard)
		fatal("more than %u datagrams queued at one node", n->out_cap);
	return n->spare;
}

/* Queues what the engine built in the next buffer; sent from link `link`. */
static bool io_udp_send(void *ctx, uint32_t link, const union yip_sockaddr *to, size_t len,
                        uint32_t train)
{
	struct pair_node *n = ctx;
	struct pair_dgram *d;

	n->datagrams++;
	n->wire_bytes += len;
	if (n->nout == n->out_cap) {
		n->overflow++;
		return true;
	}
	d = &n->out[n->nout];
	if (n->tx_drop != NULL && n->tx_drop(n->tx_drop_arg, d->buf, len)) {
		n->tx_dropped++;
		/* A seal job for this buffer would seal whatever reuses it: drop it too. */
		if (n->njobs > 0 && n->jobs[n->njobs - 1].d == d->buf)
			n->njobs--;
		return true;
	}
	d->to = *to;
	d->len = len;
	d->train = train;
	d->sock = link;
	n->nout++;
	return true;
}

/* The main socket's datagrams wait in the queue until pumped: it batches. */
static const struct yip_link_ops udp_ops = {
    .kind = YIP_LINK_UDP,
    .buf = io_udp_buf,
    .send = io_udp_send,
};

static int64_t io_link_open(void *ctx)
{
	struct pair_node *n = ctx;
	uint32_t sock;

	/* max_socks open at once; a closed one's number is not used again. */
	if (n->socks_opened - n->socks_closed >= n->max_socks || n->socks_opened >= PAIR_MAX_SOCKS)
		return -1;
	sock = ++n->socks_opened;
	yip_link_set(&n->links, sock, &udp_ops, n, YIP_MAX_DGRAM, 0);
	return sock;
}

static void io_link_close(void *ctx, uint32_t sock)
{
	struct pair_node *n = ctx;

	if (sock > 0 && sock <= PAIR_MAX_SOCKS)
		n->sock_closed[sock / 64] |= 1ULL << (sock % 64);
	yip_link_del(&n->links, sock);
	n->socks_closed++;
}

bool pair_sock_closed(const struct pair_node *n, uint32_t sock)
{
	return sock > 0 && sock <= PAIR_MAX_SOCKS &&
	       (n->sock_closed[sock / 64] >> (sock % 64) & 1) != 0;
}

static void io_tun_write(void *ctx, const uint8_t *pkt, size_t len)
{
	struct pair_node *n = ctx;
	struct pair_packet *k;

	n->packets++;
	n->packet_bytes += len;
	if (n->keep_cap == 0)
		return;
	if (n->ndelivered == n->keep_cap || len > n->keep_len) {
		if (!n->discard)
			fatal("%s: %zu bytes, %u of %u packets kept",
			      len > n->keep_len ? "delivered packet too long"
			                        : "too many packets delivered",
			      len, n->ndelivered, n->keep_cap);
		n->overflow++;
		return;
	}
	k = &n->delivered[n->ndelivered++];
	memcpy(k->buf, pkt, len);
	k->len = len;
}

static uint64_t io_wall(void *ctx)
{
	struct pair_node *n = ctx;

	/* Strictly increasing, and by more than the 2^24 ns to which Init
	 * timestamps are rounded, so every handshake is newer than the last. */
	return n->wall += 20000000;
}

static void io_seal_later(void *ctx, uint8_t *d, size_t hdr, size_t len,
                          const struct yip_cipher_key *key, uint64_t counter)
{
	struct pair_node *n = ctx;
	struct pair_seal *j;

	if (d == n->spare)
		return; /* it will not be sent */
	j = &n->jobs[n->njobs++];
	j->d = d;
	j->hdr = hdr;
	j->len = len;
	j->counter = counter;
	j->key = *key;
}

/* ---- nodes ---- */

int pair_node_init(struct pair_node *n, const struct yip_config *cfg, const struct yip_timing *t,
                   const struct pair_opts *o, char *err, size_t errlen)
{
	struct yip_io io = {
	    .ctx = n,
	    .links = &n->links,
	    .tun_write = io_tun_write,
	    .wall_ns = io_wall,
	};
	struct yip_timing def;

	memset(n, 0, sizeof(*n));
	n->wall = PAIR_WALL_START;
	n->out_cap = o->out_cap ? o->out_cap : 64;
	n->keep_cap = o->keep_cap;
	n->keep_len = o->keep_len ? o->keep_len : 1500;
	n->discard = o->discard_overflow;
	n->seal_later = o->seal_later;
	n->preopen = o->preopen;
	/* Datagram buffers: not cleared, the engine writes every byte it sends. */
	n->mem = mem_get((size_t)(n->out_cap + 1) * STRIDE);
	n->spare = n->mem + (size_t)n->out_cap * STRIDE;
	n->out = zalloc(sizeof(*n->out) * n->out_cap);
	for (unsigned i = 0; i < n->out_cap; i++)
		n->out[i].buf = n->mem + (size_t)i * STRIDE;
	if (n->keep_cap) {
		n->kept = zalloc(n->keep_cap * n->keep_len);
		n->delivered = zalloc(sizeof(*n->delivered) * n->keep_cap);
		for (unsigned i = 0; i < n->keep_cap; i++)
			n->delivered[i].buf = n->kept + i * n->keep_len;
	}
	if (n->seal_later) {
		n->jobs = zalloc(sizeof(*n->jobs) * n->out_cap);
		io.seal_later = io_seal_later;
	}
	n->max_socks = o->extra_socks;
	n->links.cap = o->extra_socks > 0 ? 1 + PAIR_MAX_SOCKS : 1;
	n->links.slot = zalloc(sizeof(*n->links.slot) * n->links.cap);
	yip_link_set(&n->links, YIP_LINK_MAIN, &udp_ops, n, YIP_MAX_DGRAM, YIP_LINK_BATCH);
	if (o->extra_socks > 0) {
		io.link_open = io_link_open;
		io.link_close = io_link_close;
	}
	if (n->preopen)
		n->plain = zalloc(YIP_MAX_DGRAM);
	if (t == NULL) {
		yip_timing_default(&def);
		t = &def;
	}
	if (yip_device_init(&n->dev, cfg, &io, t, err, errlen) != 0) {
		pair_node_free(n);
		return -1;
	}
	return 0;
}

void pair_node_free(struct pair_node *n)
{
	yip_device_free(&n->dev);
	if (n->jobs != NULL)
		sodium_memzero(n->jobs, sizeof(*n->jobs) * n->out_cap);
	free(n->jobs);
	free(n->plain);
	mem_put(n->mem, (size_t)(n->out_cap + 1) * STRIDE);
	free(n->out);
	free(n->kept);
	free(n->delivered);
	free(n->links.slot);
	memset(n, 0, sizeof(*n));
}

static void set_v4(union yip_sockaddr *a, const char *ip, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->in4.sin_family = AF_INET;
	a->in4.sin_port = htons(port);
	inet_pton(AF_INET, ip, &a->in4.sin_addr);
}

static const char *const underlay[2] = {"192.0.2.1", "192.0.2.2"};
static const char *const inner[2] = {"10.0.0.1", "10.0.0.2"};

int pair_node_reset(struct pair *p, int i, char *err, size_t errlen)
{
	const struct pair_opts *o = &p->opts;
	struct yip_cidr cidr = {.family = AF_INET, .plen = 32};
	struct yip_peer_config pc, *pcs = &pc;
	struct yip_cidr *cidrs = NULL;
	struct yip_config cfg;
	int other = 1 - i;
	unsigned extra = i == 0 ? o->extra_peers : 0;
	int rc;

	if (p->n[i].mem != NULL)
		pair_node_free(&p->n[i]);
	memset(&cfg, 0, sizeof(cfg));
	memcpy(cfg.private_key, p->keys[i], YIP_KEY_LEN);
	yip_key_public(cfg.public_key, p->keys[i]);
	cfg.mtu = o->mtu[i];
	cfg.ciphers = o->ciphers[i];
	cfg.fec_off = o->fec_off;
	cfg.has_ca = o->ca;
	if (o->obf_psk[i] != NULL) {
		cfg.obf = true;
		memcpy(cfg.obf_psk, o->obf_psk[i], sizeof(cfg.obf_psk));
		cfg.obf_junk = o->obf_junk;
		cfg.obf_cover_ms = o->obf_cover_ms;
	}
	cfg.device_kind = o->tap ? YIP_DEVICE_TAP : YIP_DEVICE_TUN;
	memset(&pc, 0, sizeof(pc));
	yip_key_public(pc.public_key, p->keys[other]);
	pc.has_endpoint = !o->no_endpoint[i];
	pc.persistent_keepalive = o->keepalive[i];
	set_v4(&pc.endpoint, underlay[other], PAIR_PORT);
	inet_pton(AF_INET, inner[other], cidr.addr);
	pc.allowed_ips = &cidr;
	pc.n_allowed_ips = 1;
	if (extra > 0) {
		pcs = calloc(1 + extra, sizeof(*pcs));
		cidrs = calloc(extra, sizeof(*cidrs));
		if (pcs == NULL || cidrs == NULL) {
			free(pcs);
			free(cidrs);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		pcs[0] = pc;
		for (unsigned k = 0; k < extra; k++) {
			uint8_t priv[YIP_KEY_LEN];
			char ip[32];

			yip_key_generate(priv);
			yip_key_public(pcs[1 + k].public_key, priv);
			sodium_memzero(priv, sizeof(priv));
			snprintf(ip, sizeof(ip), "198.18.%u.%u", (k + 1) / 256, (k + 1) % 256);
			set_v4(&pcs[1 + k].endpoint, ip, PAIR_PORT);
			pcs[1 + k].has_endpoint = true;
			cidrs[k].family = AF_INET;
			cidrs[k].plen = 32;
			snprintf(ip, sizeof(ip), "10.1.%u.%u", (k + 1) / 256, (k + 1) % 256);
			inet_pton(AF_INET, ip, cidrs[k].addr);
			pcs[1 + k].allowed_ips = &cidrs[k];
			pcs[1 + k].n_allowed_ips = 1;
		}
	}
	cfg.peers = pcs;
	cfg.n_peers = 1 + extra;
	rc = pair_node_init(&p->n[i], &cfg, o->timing, o, err, errlen);
	if (pcs != &pc)
		free(pcs);
	free(cidrs);
	if (rc != 0)
		return -1;
	set_v4(&p->n[i].addr, underlay[i], PAIR_PORT);
	return 0;
}

int pair_init(struct pair *p, const struct pair_opts *o, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->opts = *o;
	if (yip_crypto_init() != 0) {
		snprintf(err, errlen, "sodium_init failed");
		return -1;
	}
	for (int i = 0; i < 2; i++) {
		if (o->keys != NULL)
			memcpy(p->keys[i], o->keys[i], YIP_KEY_LEN);
		else
			yip_key_generate(p->keys[i]);
	}
	if (pair_node_reset(p, 0, err, errlen) != 0)
		return -1;
	if (pair_node_reset(p, 1, err, errlen) != 0) {
		pair_node_free(&p->n[0]);
		return -1;
	}
	return 0;
}

void pair_free(struct pair *p)
{
	pair_node_free(&p->n[0]);
	pair_node_free(&p->n[1]);
	sodium_memzero(p->keys, sizeof(p->keys));
}

/* ---- moving datagrams ---- */

void pair_flush(struct pair_node *n)
{
	for (unsigned i = 0; i < n->njobs; i++) {
		struct pair_seal *j = &n->jobs[i];

		yip_cipher_seal(j->d + j->hdr, &j->key, j->counter, j->d, j->hdr, j->d + j->hdr,
		                j->len);
	}
	n->njobs = 0;
}

void pair_rx(struct pair_node *n, uint64_t now, const union yip_sockaddr *src, const uint8_t *d,
             size_t len)
{
	const struct yip_cipher_key *key;
	struct yip_cipher_key copy;
	struct wire_hdr h;

	/* The loop opens nothing longer than its receive buffers hold (YIP_MAX_DGRAM). */
	key = n->preopen && wire_hdr_get(&h, d, len) && len <= YIP_MAX_DGRAM
	          ? yip_device_rx_key(&n->dev, d, len)
	          : NULL;
	if (key == NULL) {
		yip_device_rx(&n->dev, now, src, d, len);
		return;
	}
	/* As a worker thread would: with a copy of the key, into a buffer of our own. */
	copy = *key;
	{
		struct yip_preopened pre = {
		    .plain = n->plain,
		    .len = len - WIRE_DATA_MIN,
		    .result = yip_cipher_open(n->plain, &copy, h.counter, d, WIRE_DATA_HDR,
		                              d + WIRE_DATA_HDR, len - WIRE_DATA_HDR),
		    .key = &copy,
		};

		yip_device_preopened(&n->dev, &pre);
		yip_device_rx(&n->dev, now, src, d, len);
		yip_device_preopened(&n->dev, NULL);
	}
	sodium_memzero(&copy, sizeof(copy));
}

unsigned pair_pump(struct pair *p, int from, uint64_t now, pair_keep_fn keep, void *arg)
{
	struct pair_node *src = &p->n[from], *dst = &p->n[1 - from];
	unsigned n = src->nout;

	pair_flush(src);
	for (unsigned i = 0; i < n; i++)
		if (keep == NULL || keep(arg, &src->out[i], i))
			pair_rx(dst, now, &src->addr, src->out[i].buf, src->out[i].len);
	src->nout = 0;
	return n;
}

unsigned pair_discard(struct pair_node *n)
{
	unsigned k = n->nout;

	n->nout = 0;
	n->njobs = 0;
	return k;
}

void pair_settle(struct pair *p, uint64_t now)
{
	for (int i = 0; i < 10 && (p->n[0].nout || p->n[1].nout); i++) {
		pair_pump(p, 0, now, NULL, NULL);
		pair_pump(p, 1, now, NULL, NULL);
	}
}

uint64_t pair_timers(struct pair *p, uint64_t now)
{
	uint64_t a = yip_device_timers(&p->n[0].dev, now);
	uint64_t b = yip_device_timers(&p->n[1].dev, now);

	return a < b ? a : b;
}

void pair_forget(struct pair_node *n)
{
	n->ndelivered = 0;
}

bool pair_lose(uint32_t *state, unsigned percent)
{
	*state = *state * 1103515245 + 12345;
	return (*state >> 16) % 100 < percent;
}

bool pair_keep_lossy(void *arg, const struct pair_dgram *d, unsigned i)
{
	struct pair_loss *l = arg;

	(void)d;
	(void)i;
	return !pair_lose(&l->state, l->percent);
}
