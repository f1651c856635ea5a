/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A udmabuf (drivers/dma-buf/udmabuf.c: a dma-buf over a memfd sealed
 * against shrinking) for the peer tests: peer-test.c and peer-fuzz.c.
 */
#ifndef PEER_UDMABUF_UTIL_H
#define PEER_UDMABUF_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/udmabuf.h>

/* The dma-buf fd, or -errno with *@what naming the step that failed. */
static inline int peer_make_udmabuf(size_t len, const char **what)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC,
				    .size = len };
	int u, memfd, fd, e;

	*what = "open /dev/udmabuf";
	u = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (u < 0)
		return -errno;
	*what = "sealed memfd";
	memfd = memfd_create("peer", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, len) ||
	    fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0) {
		e = -errno;
		goto out;
	}
	*what = "UDMABUF_CREATE";
	c.memfd = memfd;
	fd = ioctl(u, UDMABUF_CREATE, &c);
	e = fd < 0 ? -errno : fd;
out:
	if (memfd >= 0)
		close(memfd);
	close(u);
	return e;
}

#endif
