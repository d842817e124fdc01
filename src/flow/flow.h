/*
 * Traffic classes for loss recovery, decided per flow and kept stable:
 *
 *   interactive  small packets at a low rate (pings, games, voice, key
 *                presses, request/response), or DSCP EF/CS5-CS7. Short FEC
 *                blocks sent at once, a redundancy floor, never ARQ.
 *   bulk         large packets (TCP transfers), or DSCP CS1/AF1x. Long
 *                blocks, redundancy only where loss is seen, ARQ.
 *   default      everything else.
 *
 * DSCP decides when it is set; otherwise a flow (5-tuple) is classified from
 * the running averages of its packet size and rate once it has sent a few
 * packets, and keeps that class unless its behaviour clearly changes for
 * long. The table has a fixed size; nothing is allocated per packet.
 */
#ifndef YIP_FLOW_FLOW_H
#define YIP_FLOW_FLOW_H

#include <stddef.h>
#include <stdint.h>

enum flow_class { FLOW_DEFAULT = 0, FLOW_INTERACTIVE = 1, FLOW_BULK = 2, FLOW_CLASSES = 3 };

#define FLOW_TABLE_SIZE 4096 /* a power of two */

struct flow_entry {
	uint64_t key;        /* hash of the 5-tuple, 0 = empty */
	uint64_t last_ns;    /* last packet */
	uint32_t avg_size;   /* EWMA of packet size, bytes */
	uint32_t avg_gap_us; /* EWMA of the gap between packets, microseconds */
	uint16_t packets;    /* saturating */
	uint8_t cls;         /* current class */
	uint8_t against;     /* consecutive packets that disagree with cls */
};

struct flow_table {
	struct flow_entry e[FLOW_TABLE_SIZE];
};

const char *flow_class_name(enum flow_class c);

/* Classifies one IP packet (IPv4 or IPv6, as read from a TUN device) at time now. */
enum flow_class flow_classify(struct flow_table *t, const uint8_t *pkt, size_t len, uint64_t now);

#endif
