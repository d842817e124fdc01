/* yip_loop_run: the engine on the configured driver. */
#include "loop/internal.h"

int yip_loop_run(struct yip_loop *l, struct yip_device *dev)
{
	yip_loop_attach(l, dev);
	switch (l->io) {
	case YIP_IO_URING:
		return yip_loop_run_uring(l, false);
	case YIP_IO_URING_BUSY:
		return yip_loop_run_uring(l, true);
	case YIP_IO_EPOLL:
	default:
		return yip_loop_run_epoll(l);
	}
}
