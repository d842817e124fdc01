/*
 * The handshake around Noise IK: sending and retrying Inits, answering them,
 * and turning a finished handshake into session keys. What a completed
 * handshake lets the data path do (send what waited) is the caller's job.
 */
#include "peer/internal.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "util/clock.h"
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

void handshake_abandon(struct yip_peer *p)
{
	if (!p->hs_pending)
		return;
	index_del(p->dev, p->hs_index);
	session_slot_free(p->dev, p->hs);
	p->hs = NULL;
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

/*
 * Where an Init goes: only the current path while it is alive (a rekey);
 * otherwise every candidate at once, and the first that answers wins
 * (docs/nat.md, "Punching").
 */
static unsigned init_targets(const struct yip_peer *p, uint64_t now, int *out)
{
	unsigned n = 0;

	if (p->path >= 0 && path_alive(p, p->path, now, p->dev->t.dead_after) &&
	    path_sendable(p, p->path)) {
		out[0] = p->path;
		return 1;
	}
	for (unsigned i = 0; i < p->n_paths; i++) {
		const struct yip_path *t = &p->paths[i];

		/* An address we were told of gets a few Inits until it answers. */
		if (t->kind == YIP_PATH_DIRECT && t->origin == YIP_ORIGIN_SERVER && !t->validated &&
		    t->inits >= YIP_UNVALIDATED_INITS)
			continue;
		if (path_sendable(p, (int)i))
			out[n++] = (int)i;
	}
	return n;
}

/* Our certificate, which every handshake to a peer (not to a rendezvous
 * server) carries on a CA-gated node: its bytes and length (0: none). */
static size_t own_cert(const struct yip_peer *p, const uint8_t **cert)
{
	const struct yip_device *dev = p->dev;

	if (!members_on(dev) || p->is_server)
		return 0;
	*cert = dev->members->cert.raw;
	return dev->members->cert.len;
}

const char *handshake_hint(const struct yip_device *dev)
{
	/* Without obf_psk a peer that has one cannot be told from an absent
	 * one: its datagrams are noise here and ours there. */
	return dev->obf
	           ? "is obf_psk the same on both sides?"
	           : "is the peer up and reachable, does it list our key, and is obf_psk set on "
	             "both sides or on neither?";
}

/*
 * obf_junk: junk datagrams of random lengths ahead of an Init on a direct
 * path, so a handshake does not open the flow (docs/obfuscation.md). A
 * receiver with the key throws them away; to anyone else they look like
 * every other datagram.
 */
static void send_junk(struct yip_peer *p, int path)
{
	uint8_t junk[OBF_JUNK_MAX] = {0}; /* type 0: the obfuscation layer fills it */

	if (!p->dev->obf || p->paths[path].kind != YIP_PATH_DIRECT)
		return;
	for (unsigned i = 0; i < p->dev->obf_junk; i++)
		frame_send_path(p, path, junk, obf_junk_len());
}

static void send_init(struct yip_peer *p, uint64_t now)
{
	struct yip_device *dev = p->dev;
	struct wire_init_payload pl = {.ciphers = (uint8_t)dev->ciphers};
	uint8_t payload[WIRE_INIT_PAYLOAD + WIRE_HS_CERT_MAX], d[WIRE_INIT_MAX], *msg1;
	const uint8_t *cert = NULL;
	size_t clen = own_cert(p, &cert), plen = WIRE_INIT_PAYLOAD + clen;
	size_t msg1_len = NOISE_MSG1_OVERHEAD + plen,
	       len = WIRE_INIT_MSG1 + msg1_len + 2 * WIRE_MAC_LEN;
	int targets[YIP_MAX_PATHS];
	unsigned n;

	handshake_abandon(p);
	n = init_targets(p, now, targets);
	if (n == 0 || index_add(dev, p, &p->hs_index) != 0)
		return;
	p->hs = session_slot_new(dev);
	if (p->hs == NULL) {
		index_del(dev, p->hs_index);
		return;
	}
	noise_hs_init(p->hs, true, (const uint8_t *)WIRE_PROLOGUE, WIRE_PROLOGUE_LEN,
	              dev->private_key, dev->public_key, p->public_key);
	/* Rounded down to 2^24 ns (17 ms): a responder accepts only a newer
	 * one, so a peer cannot make it take more than ~60 Inits a second. */
	yip_tai64n(pl.tai64n, frame_wall(dev) & ~((1ULL << 24) - 1));
	wire_init_payload_put(payload, &pl);
	if (clen > 0)
		memcpy(payload + WIRE_INIT_PAYLOAD, cert, clen);

	msg1 = wire_init_put(d, p->hs_index);
	if (noise_write_msg1(p->hs, payload, plen, msg1, msg1_len) != (int)msg1_len) {
		index_del(dev, p->hs_index);
		session_slot_free(dev, p->hs);
		p->hs = NULL;
		return;
	}
	wire_init_mac1_put_n(d, len, p->mac1_key);
	cookie_jar_stamp(&p->cookie, now, d, len);
	for (unsigned i = 0; i < n; i++) {
		if (!session_usable(p, now)) /* not a rekey: the flow is new, or back */
			send_junk(p, targets[i]);
		frame_send_path(p, targets[i], d, len);
		p->paths[targets[i]].inits++;
	}
	if (p->hs_unanswered == 0) {
		p->hs_unanswered = now;
		p->hs_hint_logged = false;
	}

	p->hs_pending = true;
	p->last_tx = now;
	p->hs_tries++;
	p->hs_next = now + retry_delay(&dev->t, p->hs_tries);
	schedule_peer(p, p->hs_next);
}

void handshake_start(struct yip_peer *p, uint64_t now)
{
	if (p->hs_pending || p->n_paths == 0)
		return;
	p->hs_first = now;
	p->hs_tries = 0;
	if (!p->is_server)
		p->dev->totals.hs_initiated++;
	for (unsigned i = 0; i < p->n_paths; i++)
		p->paths[i].inits = 0;
	send_init(p, now);
	schedule_peer(p, now + p->dev->t.rekey_attempt);
}

/* The peer or server p, and the path its Inits went to, for a log line. */
static void hs_target(const struct yip_peer *p, char *ep, size_t len)
{
	if (p->path >= 0)
		path_format(p, p->path, ep, len);
	else
		snprintf(ep, len, "%u candidate path%s", p->n_paths, p->n_paths == 1 ? "" : "s");
}

/*
 * With obf_psk, a node whose Inits go unanswered for YIP_NO_ANSWER_NS says
 * so once, with the likeliest reason: to every other key holder its
 * datagrams and ours are noise, dropped without a word.
 */
static void hint(struct yip_peer *p, uint64_t now)
{
	char ep[YIP_ADDRSTRLEN + 16];

	if (!p->dev->obf || p->hs_hint_logged || p->hs_unanswered == 0 ||
	    now - p->hs_unanswered < YIP_NO_ANSWER_NS)
		return;
	p->hs_hint_logged = true;
	hs_target(p, ep, sizeof(ep));
	log_warn("%s %02x%02x%02x%02x: no answer from %s for %llu s (%s)",
	         p->is_server ? "rendezvous server" : "peer", p->public_key[0], p->public_key[1],
	         p->public_key[2], p->public_key[3], ep,
	         (unsigned long long)((now - p->hs_unanswered) / YIP_NS_PER_S),
	         handshake_hint(p->dev));
}

uint64_t handshake_timers(struct yip_peer *p, uint64_t now, bool *gave_up)
{
	const struct yip_timing *t = &p->dev->t;

	*gave_up = false;
	if (!p->hs_pending)
		return UINT64_MAX;
	hint(p, now);
	if (now - p->hs_first >= t->rekey_attempt) {
		char ep[YIP_ADDRSTRLEN + 16];

		hs_target(p, ep, sizeof(ep));
		if (p->dev->obf)
			log_warn("peer %02x%02x%02x%02x: no answer from %s (%s); giving up after "
			         "%llu s until new traffic",
			         p->public_key[0], p->public_key[1], p->public_key[2],
			         p->public_key[3], ep, handshake_hint(p->dev),
			         (unsigned long long)(t->rekey_attempt / YIP_NS_PER_S));
		else
			log_warn(
			    "peer %02x%02x%02x%02x (%s): no handshake answer for %llu s, giving "
			    "up until new traffic",
			    p->public_key[0], p->public_key[1], p->public_key[2], p->public_key[3],
			    ep, (unsigned long long)(t->rekey_attempt / YIP_NS_PER_S));
		if (!p->is_server)
			p->dev->totals.hs_failed++;
		handshake_abandon(p);
		*gave_up = true;
		return UINT64_MAX;
	}
	if (now >= p->hs_next)
		send_init(p, now);
	if (p->dev->obf && !p->hs_hint_logged && p->hs_unanswered != 0)
		return min64(min64(p->hs_next, p->hs_first + t->rekey_attempt),
		             p->hs_unanswered + YIP_NO_ANSWER_NS);
	return min64(p->hs_next, p->hs_first + t->rekey_attempt);
}

/*
 * The per-source budget of Inits: a token bucket per hashed source. A
 * direct Init's source is its address (every port of a host shares it); a
 * relayed one's is its relay path: the server's address and port and the
 * sender's relay id there.
 */
static bool source_allowed(struct yip_device *dev, uint64_t now, const struct yip_from *from)
{
	const union yip_sockaddr *a = &from->addr;
	uint8_t src[1 + 16 + 2 + 4] = {0}, h[crypto_shorthash_BYTES];
	uint64_t v;
	size_t i;

	if (from->server >= 0) {
		src[0] = 'R';
		if (a->sa.sa_family == AF_INET)
			memcpy(src + 1, &a->in4.sin_addr, 4);
		else
			memcpy(src + 1, &a->in6.sin6_addr, 16);
		memcpy(src + 17, a->sa.sa_family == AF_INET ? &a->in4.sin_port : &a->in6.sin6_port,
		       2);
		memcpy(src + 19, &from->relay_id, 4);
	} else {
		/* An IPv4 address, or an IPv6 /64: one host holds a whole /64. */
		uint8_t pre[YIP_SOURCE_LEN];

		yip_sockaddr_source(a, pre);
		memcpy(src + 1, pre, sizeof(pre));
	}
	crypto_shorthash(h, src, sizeof(src), dev->hash_key);
	memcpy(&v, h, sizeof(v));
	i = v % YIP_INIT_BUCKETS;
	return yip_bucket_take(&dev->init_bucket[i], now, YIP_INIT_RATE, 2 * YIP_INIT_RATE);
}

/*
 * May we answer one more Init with a Cookie? At most YIP_COOKIE_RATE a
 * second in all: past that a flood costs a mac1 check per Init, not a
 * sealed answer and a send (an Init left unanswered is sent again).
 */
static bool cookie_answer_allowed(struct yip_device *dev, uint64_t now)
{
	return yip_bucket_take(&dev->cookie_bucket, now, YIP_COOKIE_RATE, YIP_COOKIE_RATE);
}

/*
 * The timestamp of an authenticated Init from p against replays and floods:
 * newer than the last one accepted from p, no older than
 * WIRE_INIT_MAX_AGE_NS by our clock (a replay after p's entry was
 * forgotten, or after a restart, is refused too), and no sooner than
 * YIP_INIT_PEER_NS after the last accepted one. Refusing changes nothing:
 * only an Init that passes advances p's timestamp and its limiter, so
 * neither a forged Init (it fails to authenticate before this) nor a
 * replayed one (it is stale) can lock p out.
 */
static bool init_fresh(struct yip_device *dev, struct yip_peer *p, uint64_t now,
                       const uint8_t ts[YIP_TAI64N_LEN], const uint8_t rs[YIP_KEY_LEN])
{
	if (p != NULL && memcmp(ts, p->last_tai64n, YIP_TAI64N_LEN) <= 0) {
		yip_device_drop(dev, YIP_DROP_STALE_INIT);
		return false;
	}
	if (!yip_tai64n_fresh(ts, frame_wall(dev), WIRE_INIT_MAX_AGE_NS)) {
		/* Newer than any we took from it, but old by our clock: a copy
		 * of an Init we no longer remember, or a clock that is wrong. */
		if (p != NULL &&
		    (p->old_init_logged == 0 || now - p->old_init_logged >= 60 * YIP_NS_PER_S)) {
			p->old_init_logged = now;
			log_warn("peer %02x%02x%02x%02x: refused an Init more than %llu s older "
			         "than our "
			         "clock (a replay, or is its clock or ours wrong?)",
			         rs[0], rs[1], rs[2], rs[3],
			         (unsigned long long)(WIRE_INIT_MAX_AGE_NS / YIP_NS_PER_S));
		}
		yip_device_drop(dev, YIP_DROP_STALE_INIT);
		return false;
	}
	if (p != NULL && p->last_init_rx != 0 && now - p->last_init_rx < YIP_INIT_PEER_NS) {
		yip_device_drop(dev, YIP_DROP_RATE_LIMITED);
		return false;
	}
	return true;
}

/*
 * An Init. Order matters for cost and safety: mac1 (no DH for strangers),
 * the source's budget, then e/es/s to learn who it claims to be, the
 * configured-peer check before the second DH, which authenticates it, then
 * its timestamp (init_fresh), and only then a certificate's signature.
 * Only an Init that passes all of them changes any per-peer state.
 */
void handshake_rx_init(struct yip_device *dev, uint64_t now, const struct yip_from *from,
                       const uint8_t *d, size_t len)
{
	uint8_t rs[YIP_KEY_LEN], payload[WIRE_INIT_PAYLOAD + WIRE_HS_CERT_MAX];
	uint8_t chosen[WIRE_RESP_PAYLOAD + WIRE_HS_CERT_MAX], resp[WIRE_RESP_MAX];
	struct member_cert mc;
	const uint8_t *cert = NULL;
	size_t clen, rlen, msg2_len;
	bool admit = false;
	int back, plen;
	struct wire_init_payload pl;
	struct cookie_source csrc;
	struct wire_init m;
	struct noise_hs hs;
	struct yip_keypair *kp;
	struct yip_peer *p;
	char name[9];
	int cipher;

	if (!wire_init_get(&m, d, len)) {
		yip_device_drop(dev, YIP_DROP_MALFORMED);
		return;
	}
	if (!wire_init_mac1_ok_n(d, len, dev->mac1_key)) {
		yip_device_drop(dev, YIP_DROP_BAD_MAC1);
		return;
	}
	/* Before any Diffie-Hellman: under load, only an Init that proves its
	 * source with a cookie; and never more than the source's budget. A
	 * relayed Init is no exception: the token that shows a server relayed
	 * it travels in the clear, so anyone on the path between us and the
	 * server can forge one. Its source is the relay path (the server and
	 * the sender's relay id there), and its Cookie goes back that way.
	 * With obf_psk no cookie is ever sent: it would answer replayed Inits
	 * (docs/obfuscation.md); the budget still holds. */
	if (from->server < 0)
		cookie_source_addr(&csrc, &from->addr);
	else
		cookie_source_relay(&csrc, &from->addr, from->relay_id);
	if (!dev->obf && cookie_under_load(&dev->cookies, now, YIP_INIT_LOAD) &&
	    !cookie_check(&dev->cookies, now, &csrc, d, len)) {
		uint8_t reply[WIRE_COOKIE_MSG];

		if (cookie_answer_allowed(dev, now)) {
			cookie_reply(&dev->cookies, now, &csrc, d, len, reply);
			frame_send_back(dev, from, reply, sizeof(reply));
		}
		yip_device_drop(dev, YIP_DROP_UNDER_LOAD);
		return;
	}
	if (!source_allowed(dev, now, from)) {
		yip_device_drop(dev, YIP_DROP_RATE_LIMITED);
		return;
	}
	noise_hs_init(&hs, false, (const uint8_t *)WIRE_PROLOGUE, WIRE_PROLOGUE_LEN,
	              dev->private_key, dev->public_key, NULL);
	if (noise_read_msg1_static(&hs, m.msg1, m.msg1_len, rs) != 0) {
		yip_device_drop(dev, YIP_DROP_HANDSHAKE_FAILED);
		goto out;
	}
	p = index_key_find(dev, rs);
	/* A stranger is heard out only on a CA-gated node: its certificate is
	 * in the payload, behind the second DH (the source budget above
	 * bounds how often that is paid for strangers). */
	if (p == NULL && !members_on(dev)) {
		yip_device_drop(dev, YIP_DROP_UNKNOWN_PEER);
		goto out;
	}
	/* The second DH: the payload opens only for the holder of rs. */
	plen = noise_read_msg1_payload(&hs, m.msg1, m.msg1_len, payload, sizeof(payload));
	if (plen < WIRE_INIT_PAYLOAD || !wire_init_payload_get(&pl, payload, WIRE_INIT_PAYLOAD)) {
		yip_device_drop(dev, YIP_DROP_HANDSHAKE_FAILED);
		goto out;
	}
	if (!init_fresh(dev, p, now, pl.tai64n, rs))
		goto out;
	/* Both sides initiated at once: the smaller public key keeps the
	 * initiator role, so exactly one of the two Inits is answered. The
	 * refused Init's timestamp still counts as seen (after the second DH:
	 * glare is rare), or a copy replayed later would be answered as new. */
	if (p != NULL && p->hs_pending && memcmp(dev->public_key, p->public_key, YIP_KEY_LEN) < 0) {
		memcpy(p->last_tai64n, pl.tai64n, YIP_TAI64N_LEN);
		yip_device_drop(dev, YIP_DROP_GLARE);
		goto out;
	}
	/* A member (a stranger, or a peer we admitted by certificate) proves
	 * its membership in every handshake: a certificate revoked or expired
	 * since is refused. */
	if (p == NULL || (!p->configured && members_on(dev))) {
		enum member_verdict v = members_admit(dev, rs, payload + WIRE_INIT_PAYLOAD,
		                                      (size_t)plen - WIRE_INIT_PAYLOAD, &mc);

		if (v != MEMBER_OK) {
			log_limited(YIP_LOG_DEBUG, yip_log_key(rs, YIP_KEY_LEN),
			            "handshake from %02x%02x%02x%02x refused: %s", rs[0], rs[1],
			            rs[2], rs[3],
			            (size_t)plen == WIRE_INIT_PAYLOAD ? "no certificate"
			                                              : member_verdict_name(v));
			yip_device_drop(dev, YIP_DROP_NOT_ADMITTED);
			goto out;
		}
		admit = true;
	}
	cipher = cipher_choose(dev->ciphers, pl.ciphers);
	if (cipher < 0) {
		log_limited(YIP_LOG_WARN, yip_log_key(rs, YIP_KEY_LEN),
		            "peer %02x%02x%02x%02x: no data cipher in common (it offers 0x%02x, we "
		            "allow 0x%02x); check 'cipher' on both sides",
		            rs[0], rs[1], rs[2], rs[3], pl.ciphers, dev->ciphers);
		yip_device_drop(dev, YIP_DROP_HANDSHAKE_FAILED);
		goto out;
	}
	/* A stranger admitted by its certificate becomes a peer. */
	if (p == NULL && (p = members_join(dev, now, rs, &mc)) == NULL) {
		yip_device_drop(dev, YIP_DROP_HANDSHAKE_FAILED);
		goto out;
	}
	if (admit && peer_set_member(p, &mc) != 0) {
		yip_device_drop(dev, YIP_DROP_HANDSHAKE_FAILED);
		goto out;
	}
	memcpy(p->last_tai64n, pl.tai64n, YIP_TAI64N_LEN);
	p->last_init_rx = now;
	handshake_abandon(p);
	p->hs_unanswered = 0; /* it reached us: whatever we sent will reach it too */

	session_clear(dev, &p->next);
	kp = session_slot_new(dev);
	if (kp == NULL) {
		yip_device_drop(dev, YIP_DROP_HANDSHAKE_FAILED);
		goto out;
	}
	if (index_add(dev, p, &kp->local_index) != 0) {
		/* No free index after many draws: the table is badly overfull. */
		session_slot_free(dev, kp);
		yip_device_drop(dev, YIP_DROP_HANDSHAKE_FAILED);
		goto out;
	}
	kp->remote_index = m.sender;
	kp->initiator = false;

	wire_resp_payload_put(chosen, (uint8_t)cipher);
	clen = own_cert(p, &cert);
	if (clen > 0)
		memcpy(chosen + WIRE_RESP_PAYLOAD, cert, clen);
	msg2_len = NOISE_MSG2_OVERHEAD + WIRE_RESP_PAYLOAD + clen;
	rlen = WIRE_RESP_MSG2 + msg2_len + WIRE_MAC_LEN;
	if (noise_write_msg2(&hs, chosen, WIRE_RESP_PAYLOAD + clen,
	                     wire_resp_put(resp, kp->local_index, kp->remote_index),
	                     msg2_len) != (int)msg2_len) {
		index_del(dev, kp->local_index);
		session_slot_free(dev, kp);
		yip_device_drop(dev, YIP_DROP_HANDSHAKE_FAILED);
		goto out;
	}
	wire_mac1_put(resp, rlen, p->mac1_key);
	keys_split(kp, &hs, (enum yip_cipher)cipher);
	p->next = kp;
	session_install(p, kp, now, frame_wall(dev));
	/* The Resp goes back the way the Init came, but that way becomes the
	 * peer's path only when the peer uses the keys it makes (datapath.c):
	 * an Init replayed from elsewhere, accepted because we forgot its
	 * timestamp (a restart), gets its Resp and moves nothing. */
	back = path_from(p, from);
	if (back < 0)
		back = path_note(p, now, from);
	if (back >= 0)
		frame_send_path(p, back, resp, rlen);
	p->last_tx = now;
	peer_name(p, name);
	log_limited(YIP_LOG_DEBUG, yip_log_key(p->public_key, YIP_KEY_LEN),
	            "peer %s: answered handshake (%s)", name, yip_cipher_name((unsigned)cipher));
out:
	noise_hs_wipe(&hs);
	sodium_memzero(payload, sizeof(payload));
	sodium_memzero(chosen, sizeof(chosen));
	sodium_memzero(&pl, sizeof(pl));
}

void handshake_rx_cookie(struct yip_device *dev, uint64_t now, const uint8_t *d, size_t len)
{
	struct wire_cookie m;
	struct yip_peer *p;

	if (!wire_cookie_get(&m, d, len)) {
		yip_device_drop(dev, YIP_DROP_MALFORMED);
		return;
	}
	p = index_find(dev, m.receiver);
	if (p == NULL || !p->hs_pending || p->hs_index != m.receiver) {
		yip_device_drop(dev, YIP_DROP_UNKNOWN_INDEX);
		return;
	}
	if (!cookie_jar_take(&p->cookie, now, &m)) {
		yip_device_drop(dev, YIP_DROP_BAD_COOKIE);
		return;
	}
	log_limited(YIP_LOG_DEBUG, yip_log_key(p->public_key, YIP_KEY_LEN),
	            "peer %02x%02x%02x%02x is under load: it sent a cookie", p->public_key[0],
	            p->public_key[1], p->public_key[2], p->public_key[3]);
}

/* A Resp to our pending Init: the handshake is done and we switch at once. */
struct yip_peer *handshake_rx_resp(struct yip_device *dev, uint64_t now,
                                   const struct yip_from *from, const uint8_t *d, size_t len)
{
	uint8_t payload[WIRE_RESP_PAYLOAD + WIRE_HS_CERT_MAX], cipher;
	struct member_cert mc;
	bool admit = false;
	struct wire_resp m;
	int plen;
	struct yip_keypair *kp;
	struct yip_peer *p;
	struct noise_hs hs;
	char name[9];

	if (!wire_resp_get(&m, d, len)) {
		yip_device_drop(dev, YIP_DROP_MALFORMED);
		return NULL;
	}
	if (!wire_mac1_ok(d, len, dev->mac1_key)) {
		yip_device_drop(dev, YIP_DROP_BAD_MAC1);
		return NULL;
	}
	p = index_find(dev, m.receiver);
	if (p == NULL || !p->hs_pending || p->hs_index != m.receiver) {
		yip_device_drop(dev, YIP_DROP_UNKNOWN_INDEX);
		return NULL;
	}
	/* Work on a copy: a forged Resp must not spoil the pending handshake. */
	hs = *p->hs;
	/* The responder must pick one of the ciphers we offered. */
	plen = noise_read_msg2(&hs, m.msg2, m.msg2_len, payload, sizeof(payload));
	if (plen < WIRE_RESP_PAYLOAD ||
	    !wire_resp_payload_get(&cipher, payload, WIRE_RESP_PAYLOAD) ||
	    cipher >= YIP_CIPHER_COUNT || !(dev->ciphers & YIP_CIPHER_BIT(cipher))) {
		noise_hs_wipe(&hs);
		yip_device_drop(dev, YIP_DROP_HANDSHAKE_FAILED);
		return NULL;
	}
	/* A peer we know only as a member (a root, or one admitted before)
	 * must show a valid certificate for its key in return. */
	if (!p->configured && members_on(dev)) {
		enum member_verdict v =
		    members_admit(dev, p->public_key, payload + WIRE_RESP_PAYLOAD,
		                  (size_t)plen - WIRE_RESP_PAYLOAD, &mc);

		if (v != MEMBER_OK) {
			peer_name(p, name);
			log_limited(YIP_LOG_DEBUG, yip_log_key(p->public_key, YIP_KEY_LEN),
			            "peer %s: its answer is refused: %s", name,
			            (size_t)plen == WIRE_RESP_PAYLOAD ? "no certificate"
			                                              : member_verdict_name(v));
			noise_hs_wipe(&hs);
			yip_device_drop(dev, YIP_DROP_NOT_ADMITTED);
			return NULL;
		}
		admit = true;
	}
	if (admit && peer_set_member(p, &mc) != 0) {
		noise_hs_wipe(&hs);
		yip_device_drop(dev, YIP_DROP_HANDSHAKE_FAILED);
		return NULL;
	}
	protect_flush(p, now); /* repairs for blocks sealed under the old keys go first */
	session_retire_current(p, now);
	session_clear(dev, &p->next);

	/* The handshake's slot, wiped, takes the keys it made. */
	kp = session_slot_reuse(p->hs);
	p->hs = NULL;
	kp->local_index = p->hs_index; /* the index now names the session */
	kp->remote_index = m.sender;
	kp->initiator = true;
	keys_split(kp, &hs, (enum yip_cipher)cipher);
	noise_hs_wipe(&hs);
	p->hs_pending = false;
	p->hs_index = 0;
	p->hs_unanswered = 0;
	p->cur = kp;
	session_install(p, kp, now, frame_wall(dev));
	if (!p->is_server)
		path_confirm(p, now, from, false);
	p->last_rx = now;

	peer_name(p, name);
	if (p->stats.handshakes == 1)
		log_limited(YIP_LOG_INFO, yip_log_key(p->public_key, YIP_KEY_LEN),
		            "peer %s: handshake completed in %.1f ms (%s)", name,
		            (double)(now - p->hs_first) / 1e6, yip_cipher_name(cipher));
	else
		log_limited(YIP_LOG_DEBUG, yip_log_key(p->public_key, YIP_KEY_LEN),
		            "peer %s: rekeyed", name);
	return p;
}
