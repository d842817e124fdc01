/*
 * What yipd tells the service manager (src/poll/notify.h): READY once the
 * loop serves, RELOADING/READY around a reload, STOPPING, WATCHDOG from the
 * timer, and a STATUS line of the peers when it changes (at most once a
 * second).
 */
#include <stdio.h>

#include "loop/internal.h"
#include "util/clock.h"

/* "3/4 peers up, 2 direct" and, on a CA-gated node, its members. */
static void status_line(struct yip_loop *l, uint64_t now, char *out, size_t outlen)
{
	struct yip_device_info di;
	struct yip_members_info mi;
	size_t up = 0, direct = 0, members = 0;

	if (l->dev == NULL) {
		snprintf(out, outlen, "starting");
		return;
	}
	yip_device_info(l->dev, &di);
	for (size_t i = 0; i < di.n_peers; i++) {
		struct yip_peer_info pi;

		if (!yip_device_peer_info(l->dev, i, now, &pi))
			continue;
		members += pi.dynamic;
		if (!pi.established)
			continue;
		up++;
		direct += pi.has_path && pi.relayed_why == NULL;
	}
	if (yip_device_members_info(l->dev, &mi))
		snprintf(out, outlen, "%zu/%zu peers up, %zu direct; network %s, %zu members", up,
		         di.n_peers, direct, mi.network, members);
	else
		snprintf(out, outlen, "%zu/%zu peers up, %zu direct", up, di.n_peers, direct);
}

void loop_notify_ready(struct yip_loop *l)
{
	char status[YIP_NOTIFY_STATUS_MAX];
	uint64_t now = yip_now_mono();

	if (l->notify == NULL || !yip_notify_on(l->notify))
		return;
	status_line(l, now, status, sizeof(status));
	yip_notify_ready(l->notify, status);
	l->notify->next_status = now + YIP_NS_PER_S;
}

void loop_notify_reloading(struct yip_loop *l)
{
	if (l->notify != NULL)
		yip_notify_reloading(l->notify);
}

void loop_notify_stopping(struct yip_loop *l)
{
	if (l->notify != NULL)
		yip_notify_stopping(l->notify);
}

uint64_t loop_notify_tick(struct yip_loop *l, uint64_t now)
{
	char status[YIP_NOTIFY_STATUS_MAX];
	uint64_t next;

	if (l->notify == NULL || !yip_notify_on(l->notify))
		return 0;
	next = yip_notify_tick(l->notify, now);
	if (yip_notify_status_due(l->notify, now)) {
		status_line(l, now, status, sizeof(status));
		yip_notify_status(l->notify, now, status);
	}
	return next;
}
