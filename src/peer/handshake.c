/*
 * The handshake around Noise IK: sending and retrying Inits, answering them,
 * and turning a finished handshake into session keys.
 */
#include "peer/internal.h"

#include <sodium.h>
#include <string.h>

#include "util/log.h"

static void peer_name(const struct yip_peer *p, char out[9])
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < 4; i++) {
		out[2 * i] = hex[p->public_key[i] >> 4];
		out[2 * i + 1] = hex[p->public_key[i] & 15];
	}
	out[8] = '\0';
}

/*
 * The data cipher for a session: AES-256-GCM when both sides allow it (it is
 * about twice as fast where the CPU has AES instructions), else
 * ChaCha20-Poly1305. -1 when the two sets share nothing.
 */
static int cipher_choose(unsigned ours, unsigned offered)
{
	unsigned both = ours & offered;

	if (both & YIP_CIPHER_BIT(YIP_CIPHER_AES256_GCM))
		return YIP_CIPHER_AES256_GCM;
	if (both & YIP_CIPHER_BIT(YIP_CIPHER_CHACHA20_POLY1305))
		return YIP_CIPHER_CHACHA20_POLY1305;
	return -1;
}

/* Splits the finished handshake into kp's keys under the chosen cipher. */
static void keys_split(struct yip_keypair *kp, struct noise_hs *hs, enum yip_cipher cipher)
{
	uint8_t send[YIP_KEY_LEN], recv[YIP_KEY_LEN];

	noise_split(hs, send, recv, NULL);
	yip_cipher_key_set(&kp->send, cipher, send);
	yip_cipher_key_set(&kp->recv, cipher, recv);
	sodium_memzero(send, sizeof(send));
	sodium_memzero(recv, sizeof(recv));
}

void hs_abandon(struct yip_peer *p)
{
	if (!p->hs_pending)
		return;
	index_del(p->dev, p->hs_index);
	noise_hs_wipe(&p->hs);
	p->hs_pending = false;
	p->hs_index = 0;
}

/* Retransmit delay: doubles per attempt up to retry_max, with +-20 % jitter
 * so that peers that lost packets together do not retry in lockstep. */
static uint64_t retry_delay(const struct yip_timing *t, unsigned tries)
{
	uint64_t d = t->retry_base;

	while (tries-- > 1 && d < t->retry_max)
		d *= 2;
	if (d > t->retry_max)
		d = t->retry_max;
	return d - d / 5 + (uint64_t)randombytes_uniform(1000) * (d / 5) * 2 / 1000;
}

void hs_send_init(struct yip_peer *p, uint64_t now)
{
	struct yip_device *dev = p->dev;
	uint8_t payload[WIRE_INIT_PAYLOAD];
	uint8_t *d;

	hs_abandon(p);
	if (!p->has_endpoint || index_add(dev, p, &p->hs_index) != 0)
		return;
	noise_hs_init(&p->hs, true, (const uint8_t *)YIP_PROLOGUE, YIP_PROLOGUE_LEN,
	              dev->private_key, dev->public_key, p->public_key);
	yip_tai64n(payload, dev->io.wall_ns(dev->io.ctx));
	payload[YIP_TAI64N_LEN] = (uint8_t)dev->ciphers;

	d = dev->io.udp_buf(dev->io.ctx);
	wire_put32(d, WIRE_INIT);
	wire_put32(d + 4, p->hs_index);
	if (noise_write_msg1(&p->hs, payload, sizeof(payload), d + WIRE_INIT_MSG1, WIRE_MSG1_LEN) !=
	    WIRE_MSG1_LEN) {
		index_del(dev, p->hs_index);
		noise_hs_wipe(&p->hs);
		return;
	}
	wire_mac1_put(d, WIRE_INIT_LEN, p->mac1_key);
	dev->io.udp_send(dev->io.ctx, &p->endpoint, WIRE_INIT_LEN, 0);

	p->hs_pending = true;
	p->last_tx = now;
	p->hs_tries++;
	p->hs_next = now + retry_delay(&dev->t, p->hs_tries);
	schedule(dev, p->hs_next);
}

/* Begins a handshake series unless one is already running. */
void hs_start(struct yip_peer *p, uint64_t now)
{
	if (p->hs_pending || !p->has_endpoint)
		return;
	p->hs_first = now;
	p->hs_tries = 0;
	hs_send_init(p, now);
	schedule(p->dev, now + p->dev->t.rekey_attempt);
}

/*
 * An Init. Order matters for cost and safety: mac1 (no DH for strangers),
 * then e/es/s to learn who it claims to be, then the configured-peer check
 * before the second DH, then the timestamp against replays. Only then does
 * any per-peer state change.
 */
void rx_init(struct yip_device *dev, uint64_t now, const union yip_sockaddr *src, const uint8_t *d,
             size_t len)
{
	const uint8_t *msg1 = d + WIRE_INIT_MSG1;
	uint8_t rs[YIP_KEY_LEN], payload[WIRE_INIT_PAYLOAD], chosen;
	struct noise_hs hs;
	struct yip_keypair *kp;
	struct yip_peer *p;
	uint8_t *out;
	char name[9];
	int cipher;

	if (!wire_mac1_ok(d, len, dev->mac1_key)) {
		yip_device_drop(dev, YIP_DROP_BAD_MAC1);
		return;
	}
	noise_hs_init(&hs, false, (const uint8_t *)YIP_PROLOGUE, YIP_PROLOGUE_LEN, dev->private_key,
	              dev->public_key, NULL);
	if (noise_read_msg1_static(&hs, msg1, WIRE_MSG1_LEN, rs) != 0) {
		yip_device_drop(dev, YIP_DROP_HANDSHAKE_FAILED);
		goto out;
	}
	p = yip_device_peer(dev, rs);
	if (p == NULL) {
		yip_device_drop(dev, YIP_DROP_UNKNOWN_PEER);
		goto out;
	}
	/* Both sides initiated at once: the smaller public key keeps the
	 * initiator role, so exactly one of the two Inits is answered. */
	if (p->hs_pending && memcmp(dev->public_key, p->public_key, YIP_KEY_LEN) < 0) {
		yip_device_drop(dev, YIP_DROP_GLARE);
		goto out;
	}
	if (noise_read_msg1_payload(&hs, msg1, WIRE_MSG1_LEN, payload, sizeof(payload)) !=
	    sizeof(payload)) {
		yip_device_drop(dev, YIP_DROP_HANDSHAKE_FAILED);
		goto out;
	}
	if (memcmp(payload, p->last_tai64n, YIP_TAI64N_LEN) <= 0) {
		yip_device_drop(dev, YIP_DROP_STALE_INIT);
		goto out;
	}
	cipher = cipher_choose(dev->ciphers, payload[YIP_TAI64N_LEN]);
	if (cipher < 0) {
		peer_name(p, name);
		log_warn("peer %s: no data cipher in common (it offers 0x%02x, we allow 0x%02x); "
		         "check 'cipher' on both sides",
		         name, payload[YIP_TAI64N_LEN], dev->ciphers);
		yip_device_drop(dev, YIP_DROP_HANDSHAKE_FAILED);
		goto out;
	}
	memcpy(p->last_tai64n, payload, YIP_TAI64N_LEN);
	hs_abandon(p);

	kp = &p->next;
	kp_clear(dev, kp);
	if (index_add(dev, p, &kp->local_index) != 0)
		goto out;
	kp->remote_index = wire_get32(d + 4);
	kp->initiator = false;

	out = dev->io.udp_buf(dev->io.ctx);
	wire_put32(out, WIRE_RESP);
	wire_put32(out + 4, kp->local_index);
	wire_put32(out + 8, kp->remote_index);
	chosen = (uint8_t)cipher;
	if (noise_write_msg2(&hs, &chosen, 1, out + WIRE_RESP_MSG2, WIRE_MSG2_LEN) !=
	    WIRE_MSG2_LEN) {
		index_del(dev, kp->local_index);
		sodium_memzero(kp, sizeof(*kp));
		goto out;
	}
	wire_mac1_put(out, WIRE_RESP_LEN, p->mac1_key);
	keys_split(kp, &hs, (enum yip_cipher)cipher);
	kp_install(p, kp, now);
	endpoint_update(p, src);
	dev->io.udp_send(dev->io.ctx, &p->endpoint, WIRE_RESP_LEN, 0);
	p->last_tx = now;
	peer_name(p, name);
	log_debug("peer %s: answered handshake (%s)", name, yip_cipher_name((unsigned)cipher));
out:
	noise_hs_wipe(&hs);
	sodium_memzero(payload, sizeof(payload));
}

/* A Resp to our pending Init: the handshake is done and we switch at once. */
void rx_resp(struct yip_device *dev, uint64_t now, const union yip_sockaddr *src, const uint8_t *d,
             size_t len)
{
	uint32_t index = wire_get32(d + 8);
	struct yip_peer *p;
	struct noise_hs hs;
	uint8_t cipher;
	char name[9];

	if (!wire_mac1_ok(d, len, dev->mac1_key)) {
		yip_device_drop(dev, YIP_DROP_BAD_MAC1);
		return;
	}
	p = index_find(dev, index);
	if (p == NULL || !p->hs_pending || p->hs_index != index) {
		yip_device_drop(dev, YIP_DROP_UNKNOWN_INDEX);
		return;
	}
	/* Work on a copy: a forged Resp must not spoil the pending handshake. */
	hs = p->hs;
	/* The responder must pick one of the ciphers we offered. */
	if (noise_read_msg2(&hs, d + WIRE_RESP_MSG2, WIRE_MSG2_LEN, &cipher, 1) != 1 ||
	    cipher >= YIP_CIPHER_COUNT || !(dev->ciphers & YIP_CIPHER_BIT(cipher))) {
		noise_hs_wipe(&hs);
		yip_device_drop(dev, YIP_DROP_HANDSHAKE_FAILED);
		return;
	}
	fec_tx_flush(p, now); /* repairs for blocks sealed under the old keys go first */
	kp_move(dev, &p->prev, &p->cur);
	p->prev_retire = now + dev->t.prev_overlap;
	schedule(dev, p->prev_retire);
	kp_clear(dev, &p->next);

	p->cur.local_index = p->hs_index; /* the index now names the session */
	p->cur.remote_index = wire_get32(d + 4);
	p->cur.initiator = true;
	keys_split(&p->cur, &hs, (enum yip_cipher)cipher);
	noise_hs_wipe(&hs);
	noise_hs_wipe(&p->hs);
	p->hs_pending = false;
	p->hs_index = 0;
	kp_install(p, &p->cur, now);
	endpoint_update(p, src);
	p->last_rx = now;

	peer_name(p, name);
	if (p->stats.handshakes == 1)
		log_info("peer %s: handshake completed in %.1f ms (%s)", name,
		         (double)(now - p->hs_first) / 1e6, yip_cipher_name(cipher));
	else
		log_debug("peer %s: rekeyed", name);

	/* Send what waited; an empty datagram otherwise, so the responder
	 * learns we switched and can start sending under the new keys. */
	if (p->queue_count > 0)
		queue_flush(p, now);
	else
		send_data(p, now, (const uint8_t *)"", 0);
}
