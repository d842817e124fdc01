/* Shared between the files of the peer module; not part of its interface. */
#ifndef YIP_PEER_INTERNAL_H
#define YIP_PEER_INTERNAL_H

#include "peer/peer.h"

#define YIP_PROLOGUE     "yip-v1"
#define YIP_PROLOGUE_LEN (sizeof(YIP_PROLOGUE) - 1)

/* Counter limits: rekey well before the nonce space could ever wrap. */
#define YIP_REKEY_AFTER_MESSAGES  (1ULL << 60)
#define YIP_REJECT_AFTER_MESSAGES (UINT64_MAX - (1ULL << 13))

/* index.c: receiver-chosen session indices -> peer. */
int index_add(struct yip_device *dev, struct yip_peer *p, uint32_t *out);
void index_del(struct yip_device *dev, uint32_t index);
struct yip_peer *index_find(const struct yip_device *dev, uint32_t index);

/* handshake.c */
void hs_start(struct yip_peer *p, uint64_t now);
void hs_send_init(struct yip_peer *p, uint64_t now);
void hs_abandon(struct yip_peer *p);
void rx_init(struct yip_device *dev, uint64_t now, const union yip_sockaddr *src, const uint8_t *d,
             size_t len);
void rx_resp(struct yip_device *dev, uint64_t now, const union yip_sockaddr *src, const uint8_t *d,
             size_t len);

/* data.c */
void kp_clear(struct yip_device *dev, struct yip_keypair *kp);
void kp_move(struct yip_device *dev, struct yip_keypair *dst, struct yip_keypair *src);
void kp_install(struct yip_peer *p, struct yip_keypair *kp, uint64_t now);
bool session_usable(const struct yip_peer *p, uint64_t now);
void send_data(struct yip_peer *p, uint64_t now, const uint8_t *pkt, size_t len);
uint64_t seal_send(struct yip_peer *p, uint64_t now, uint8_t type, uint8_t idx, uint16_t block,
                   const uint8_t *pre, size_t prelen, const uint8_t *pkt, size_t len);
bool deliver(struct yip_peer *p, uint64_t now, const uint8_t *pkt, size_t len);
struct yip_keypair *kp_for_index(struct yip_peer *p, uint32_t index);
void rx_repair(struct yip_device *dev, uint64_t now, const union yip_sockaddr *src,
               const uint8_t *d, size_t len);
void rx_report(struct yip_device *dev, uint64_t now, const union yip_sockaddr *src,
               const uint8_t *d, size_t len);

/* icmp.c */
void icmp_unreachable(struct yip_device *dev, uint64_t now, const uint8_t *pkt, size_t len);

/* fec_tx.c: blocks on the sending side. */
int fec_peer_init(struct yip_peer *p);
void fec_peer_free(struct yip_peer *p);
void fec_tx_packet(struct yip_peer *p, uint64_t now, enum flow_class cls, const uint8_t *pkt,
                   size_t len);
void fec_tx_flush(struct yip_peer *p, uint64_t now);
uint64_t fec_tx_timers(struct yip_peer *p, uint64_t now);
void fec_retransmit(struct yip_peer *p, uint64_t now, uint64_t counter);

/* fec_rx.c: reassembly, loss statistics and missing counters on the receiving side. */
void fec_rx_source(struct yip_peer *p, uint64_t now, struct yip_keypair *kp, uint8_t idx,
                   uint16_t block, uint64_t counter, const uint8_t *pkt, size_t len);
void fec_rx_repair(struct yip_peer *p, uint64_t now, struct yip_keypair *kp, uint8_t idx,
                   uint16_t block, const uint8_t *plain, size_t len);
uint64_t fec_rx_timers(struct yip_peer *p, uint64_t now);
void loss_observe(struct yip_peer *p, uint64_t now, struct yip_keypair *kp, uint64_t counter,
                  bool data);
void miss_resolve(struct yip_peer *p, uint64_t counter);

/* report.c: loss reports, the redundancy controller's input, NACKs and RTT. */
uint64_t report_timers(struct yip_peer *p, uint64_t now);
void report_receive(struct yip_peer *p, uint64_t now, const uint8_t *plain, size_t len);
void queue_flush(struct yip_peer *p, uint64_t now);
void queue_drop_all(struct yip_peer *p, enum yip_drop why);
void rx_data(struct yip_device *dev, uint64_t now, const union yip_sockaddr *src, const uint8_t *d,
             size_t len);
void endpoint_update(struct yip_peer *p, const union yip_sockaddr *src);
uint64_t rekey_age(const struct yip_peer *p);
void maybe_rekey(struct yip_peer *p, uint64_t now);

static inline void schedule(struct yip_device *dev, uint64_t when)
{
	if (when < dev->next_timer)
		dev->next_timer = when;
}

#endif
