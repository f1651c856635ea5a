// SPDX-License-Identifier: GPL-2.0
/*
 * Lab test driver of the /dev/fxblk-peer ioctls (tests/lab/tests/40-peer-kernel.sh).
 * Each subcommand checks one area, prints "ok: ..." per check and exits 1
 * with "FAIL: ..." at the first one that does not hold.
 *
 *   peer-test providers                  print the providers, one a line
 *   peer-test host DEV                   host memory: RW sync/async, errors,
 *                                        another process, exit while pinned
 *   peer-test gpu rocm|ascend DEV        a fake vendor's memory through its
 *                                        glue: EREMOTEIO, bad ranges, the
 *                                        vendor's lifetime (v1/Ascend free
 *                                        callback, v2 none), thread, exit
 *   peer-test dmabuf DEV                 a udmabuf
 *   peer-test revoke-io DEV              host revoke (test hook) during I/O
 *                                        (retried until I/O was in flight)
 *   peer-test revoke-peerq DEV           fake Ascend memory revoked by its
 *                                        driver while synchronous RWs move
 *                                        it over fxblk's peer queues (DEV:
 *                                        4 NVMe-oF/RDMA members, peer
 *                                        queues on): they finish or fail
 *                                        ENXIO, then the pin goes
 *   peer-test revoke-held DEV MODE HOLD RELEASE
 *                                        fake Ascend memory freed by its
 *                                        driver while one peer READ into it
 *                                        is held by the target (shell
 *                                        commands HOLD before the RW and
 *                                        RELEASE after: dmsetup suspend and
 *                                        resume of the target's namespaces).
 *                                        MODE wait: RELEASE 300 ms into the
 *                                        callback (the commands complete
 *                                        while it waits); fence: RELEASE
 *                                        after it returned (its queues were
 *                                        stopped). Either way no page the
 *                                        fake poisoned when the callback
 *                                        returned is written afterwards
 *                                        (fake_ascend late_dma 0)
 *                                        (65-peer-revoke.sh)
 *   peer-test cache DEV                  RW coherent with DEV's page cache,
 *                                        BLKROSET honoured
 *   peer-test badcount                   PROVIDERS with an input count
 *   peer-test p2pmem ALLOC DEV [RDMADEV] PCI P2PDMA memory (mmap of
 *                                        p2pmem/allocate) registered as host
 *                                        memory: RW with DEV (fxN over
 *                                        nvme-pci), EREMOTEIO with RDMADEV
 *   peer-test memlock                    (unprivileged) RLIMIT_MEMLOCK
 *   peer-test use-fd FD HANDLE           (exec'd by host) use a foreign ctx
 *   peer-test rwfile read|write DEV BUF_OFF DEV_OFF LEN FILE [MEM]
 *                                        one synchronous RW of LEN bytes at
 *                                        BUF_OFF of a fresh registration
 *                                        and DEV_OFF of DEV: FILE is written
 *                                        from the buffer (read) or read into
 *                                        it (write); the bytes around the
 *                                        range must stay untouched
 *                                        (44-peer-queue.sh). MEM: host
 *                                        (default); rocm: fake amd_rdma v2
 *                                        memory, ascend: fake Ascend memory,
 *                                        dmabuf: a udmabuf (its mmap the
 *                                        CPU's view)
 *                                        (PEERQ flag required, an async RW
 *                                        refused); rocm-refused,
 *                                        ascend-refused: the same, the RW
 *                                        must fail with EREMOTEIO and move
 *                                        nothing; MEM may end in +fua (the
 *                                        write with FXBLK_PEER_RW_FUA; a
 *                                        read with it must fail EINVAL)
 *                                        and/or +fsync (fsync of DEV after
 *                                        it), e.g. host+fua (55-peer-crash)
 *
 * DEV is /dev/fxN striped with 64 KiB chunks over at least 2 members.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/fxblk_peer.h>

#include "udmabuf-util.h"

#define MiB (1024UL * 1024)
#define KiB 1024UL

static const char *self;

static void vsay(const char *tag, const char *fmt, va_list ap)
{
	printf("%s", tag);
	vprintf(fmt, ap);
	printf("\n");
}

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("FAIL: ", fmt, ap);
	va_end(ap);
	fflush(stdout);
	exit(1);
}

static void good(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("ok: ", fmt, ap);
	va_end(ap);
}

static int soft_failed;

/* A failed check that lets the others run; the command exits 1 at its end. */
static void soft_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("FAIL: ", fmt, ap);
	va_end(ap);
	soft_failed = 1;
}

/* ioctl expecting errno @want (0: success). */
static void expect(int ret, int want, const char *what)
{
	int got = ret < 0 ? errno : 0;

	if (got != want)
		fail("%s: got %s (%d), expected %s", what,
		     got ? strerror(got) : "success", got,
		     want ? strerror(want) : "success");
	good("%s -> %s", what, want ? strerror(want) : "success");
}

static int open_ctl(void)
{
	int fd = open(FXBLK_PEER_DEVICE, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		fail("open %s: %s", FXBLK_PEER_DEVICE, strerror(errno));
	return fd;
}

static void get_providers(int ctl, struct fxblk_peer_providers *p)
{
	memset(p, 0, sizeof(*p));
	p->abi = FXBLK_PEER_ABI;
	if (ioctl(ctl, FXBLK_PEER_IOC_PROVIDERS, p))
		fail("PROVIDERS: %s", strerror(errno));
}

static uint64_t pinned_of(int ctl, uint32_t id)
{
	struct fxblk_peer_providers p;

	get_providers(ctl, &p);
	return p.p[id - 1].pinned_bytes;
}

/* Pinned bytes of provider @id become @want within ~5 s (revoke work). */
static void expect_pinned(int ctl, uint32_t id, uint64_t want, const char *w)
{
	uint64_t got = 0;
	int i;

	for (i = 0; i < 500; i++) {
		got = pinned_of(ctl, id);
		if (got == want)
			break;
		usleep(10000);
	}
	if (got != want)
		fail("%s: pinned bytes %" PRIu64 ", expected %" PRIu64, w,
		     got, want);
	good("%s: pinned bytes %" PRIu64, w, got);
}

static int reg(int ctl, uint32_t prov, uint32_t flags, uint64_t addr,
	       uint64_t len, struct fxblk_peer_register *out)
{
	struct fxblk_peer_register r = {
		.abi = FXBLK_PEER_ABI, .provider = prov, .flags = flags,
		.addr = addr, .len = len,
	};
	int ret = ioctl(ctl, FXBLK_PEER_IOC_REGISTER, &r);

	if (out)
		*out = r;
	return ret;
}

static int dereg(int ctl, uint64_t handle)
{
	struct fxblk_peer_deregister d = { .abi = FXBLK_PEER_ABI,
					   .handle = handle };

	return ioctl(ctl, FXBLK_PEER_IOC_DEREGISTER, &d);
}

static struct fxblk_peer_rw rw_args(uint64_t h, uint32_t op, int fd,
				    uint64_t buf_off, uint64_t dev_off,
				    uint64_t len)
{
	struct fxblk_peer_rw a = {
		.abi = FXBLK_PEER_ABI, .op = op, .fd = fd, .handle = h,
		.buf_off = buf_off, .dev_off = dev_off, .len = len,
		.eventfd = -1,
	};

	return a;
}

static int rw(int ctl, uint64_t h, uint32_t op, int fd, uint64_t buf_off,
	      uint64_t dev_off, uint64_t len)
{
	struct fxblk_peer_rw a = rw_args(h, op, fd, buf_off, dev_off, len);

	return ioctl(ctl, FXBLK_PEER_IOC_RW, &a);
}

static int rw_flagged(int ctl, uint64_t h, uint32_t op, int fd,
		      uint64_t buf_off, uint64_t dev_off, uint64_t len,
		      uint32_t flags)
{
	struct fxblk_peer_rw a = rw_args(h, op, fd, buf_off, dev_off, len);

	a.flags = flags;
	return ioctl(ctl, FXBLK_PEER_IOC_RW, &a);
}

static int query(int ctl, uint64_t h, struct fxblk_peer_query *q)
{
	memset(q, 0, sizeof(*q));
	q->abi = FXBLK_PEER_ABI;
	q->handle = h;
	return ioctl(ctl, FXBLK_PEER_IOC_QUERY, q);
}

static void fill(unsigned char *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 7 + seed + (i >> 12));
}

static void *alloc_buf(size_t n)
{
	void *p;

	if (posix_memalign(&p, 4096, n))
		fail("posix_memalign");
	memset(p, 0, n);
	return p;
}

static void cmp(const void *a, const void *b, size_t n, const char *what)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (((const unsigned char *)a)[i] !=
		    ((const unsigned char *)b)[i])
			fail("%s: differs at byte %zu", what, i);
	good("%s: %zu bytes equal", what, n);
}

static int cmd_providers(void)
{
	struct fxblk_peer_providers p;
	int ctl = open_ctl();
	unsigned int i;

	get_providers(ctl, &p);
	for (i = 0; i < p.count; i++)
		printf("%s present=%d direct=%d flags=0x%x pinned=%" PRIu64
		       " regs=%" PRIu64 " reason=%s\n", p.p[i].name,
		       !!(p.p[i].flags & FXBLK_PEER_F_PRESENT),
		       !!(p.p[i].flags & FXBLK_PEER_F_DIRECT), p.p[i].flags,
		       (uint64_t)p.p[i].pinned_bytes,
		       (uint64_t)p.p[i].registrations, p.p[i].reason);
	return 0;
}

/*
 * Data through the handle, checked with O_DIRECT on DEV: 1 MiB + 8 KiB at
 * 60 KiB crosses 17 chunk boundaries, so every member.
 */
static void host_data(int ctl, int dev, int devd, uint64_t h,
		      unsigned char *buf)
{
	const uint64_t len = MiB + 8 * KiB, dev_off = 60 * KiB;
	const uint64_t buf_off = 12 * KiB;
	unsigned char *chk = alloc_buf(len);

	fill(buf + buf_off, len, 1);
	expect(rw(ctl, h, FXBLK_PEER_OP_WRITE, dev, buf_off, dev_off, len), 0,
	       "RW write 1 MiB + 8 KiB at 60 KiB");
	if (pread(devd, chk, len, dev_off) != (ssize_t)len)
		fail("pread O_DIRECT: %s", strerror(errno));
	cmp(chk, buf + buf_off, len, "peer write, O_DIRECT read back");

	fill(chk, len, 99);
	if (pwrite(devd, chk, len, dev_off) != (ssize_t)len)
		fail("pwrite O_DIRECT: %s", strerror(errno));
	memset(buf, 0, 2 * MiB);
	expect(rw(ctl, h, FXBLK_PEER_OP_READ, dev, buf_off, dev_off, len), 0,
	       "RW read 1 MiB + 8 KiB at 60 KiB");
	cmp(buf + buf_off, chk, len, "O_DIRECT write, peer read back");
	free(chk);
}

/* 8 async RWs of 128 KiB with one eventfd, reaped, then verified. */
static void host_async(int ctl, int dev, int devd, uint64_t h,
		       unsigned char *buf)
{
	struct fxblk_peer_reap r;
	unsigned char *chk = alloc_buf(MiB);
	uint64_t seen = 0, cnt = 0, v;
	int efd = eventfd(0, EFD_CLOEXEC), i, n = 0;

	fill(buf, MiB, 5);
	for (i = 0; i < 8; i++) {
		struct fxblk_peer_rw a = rw_args(h, FXBLK_PEER_OP_WRITE, dev,
						 i * 128 * KiB,
						 4 * MiB + i * 128 * KiB,
						 128 * KiB);

		a.flags = FXBLK_PEER_RW_ASYNC;
		a.eventfd = efd;
		a.user_data = 1000 + i;
		if (ioctl(ctl, FXBLK_PEER_IOC_RW, &a))
			fail("async RW %d: %s", i, strerror(errno));
	}
	while (n < 8) {
		memset(&r, 0, sizeof(r));
		r.abi = FXBLK_PEER_ABI;
		r.max = FXBLK_PEER_REAP_MAX;
		r.flags = FXBLK_PEER_REAP_WAIT;
		if (ioctl(ctl, FXBLK_PEER_IOC_REAP, &r))
			fail("REAP: %s", strerror(errno));
		for (i = 0; i < (int)r.count; i++) {
			if (r.c[i].result != (int64_t)(128 * KiB) ||
			    r.c[i].user_data < 1000 || r.c[i].user_data > 1007)
				fail("completion %" PRIu64 ": result %" PRId64,
				     (uint64_t)r.c[i].user_data,
				     (int64_t)r.c[i].result);
			seen |= 1ULL << (r.c[i].user_data - 1000);
		}
		n += r.count;
	}
	if (seen != 0xff)
		fail("async: user_data seen 0x%" PRIx64, seen);
	good("async: 8 completions reaped with their user_data and 128 KiB each");
	while (cnt < 8 && read(efd, &v, 8) == 8)
		cnt += v;
	if (cnt != 8)
		fail("eventfd counted %" PRIu64 ", expected 8", cnt);
	good("eventfd signalled 8 times");
	memset(&r, 0, sizeof(r));
	r.abi = FXBLK_PEER_ABI;
	r.max = 4;
	r.flags = FXBLK_PEER_REAP_WAIT;
	expect(ioctl(ctl, FXBLK_PEER_IOC_REAP, &r), 0,
	       "REAP WAIT with nothing in flight returns");
	if (r.count)
		fail("REAP with nothing in flight: count %u", r.count);
	if (pread(devd, chk, MiB, 4 * MiB) != (ssize_t)MiB)
		fail("pread: %s", strerror(errno));
	cmp(chk, buf, MiB, "async writes read back");
	close(efd);
	free(chk);
}

static void host_errors(int ctl, int dev, int devro, uint64_t h,
			unsigned char *buf, uint64_t size)
{
	struct fxblk_peer_register r;
	struct fxblk_peer_rw a;
	struct fxblk_peer_query q;
	int null = open("/dev/null", O_RDWR);
	void *hole;

	r = (struct fxblk_peer_register){ .abi = 99, .len = 4096,
		.addr = (uintptr_t)buf };
	expect(ioctl(ctl, FXBLK_PEER_IOC_REGISTER, &r), EPROTO,
	       "REGISTER with a wrong abi");
	r = (struct fxblk_peer_register){ .abi = FXBLK_PEER_ABI, .len = 4096,
		.addr = (uintptr_t)buf, .reserved[2] = 1 };
	expect(ioctl(ctl, FXBLK_PEER_IOC_REGISTER, &r), EINVAL,
	       "REGISTER with a reserved field set");
	expect(reg(ctl, 0, 0, (uintptr_t)buf + 512, 4096, NULL), EINVAL,
	       "REGISTER of an unaligned address");
	expect(reg(ctl, 0, 0, (uintptr_t)buf, 4096 + 512, NULL), EINVAL,
	       "REGISTER of an unaligned length");
	expect(reg(ctl, 0, 0, (uintptr_t)buf, 0, NULL), EINVAL,
	       "REGISTER of length 0");
	expect(reg(ctl, 0, 0, 0xfffffffffffff000ULL, 0x2000, NULL), EINVAL,
	       "REGISTER of a range that wraps around");
	expect(reg(ctl, 0, 0, 0x7ffffffff000ULL, 0x2000, NULL), EFAULT,
	       "REGISTER beyond the user address space");
	/*
	 * Root has no RLIMIT_MEMLOCK: the length reaches the allocation of the
	 * page array (2 GiB for 1 TiB), which must fail without a kernel
	 * warning (kvmalloc() warns above INT_MAX unless told not to; the lab
	 * fails on the WARNING line).
	 */
	if (!geteuid()) {
		/* low, so that 1 TiB after it is still user address space */
		void *low = mmap((void *)(8ULL << 30), 8192,
				 PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS |
				 MAP_FIXED_NOREPLACE, -1, 0);

		if (low == MAP_FAILED)
			fail("mmap at 8 GiB: %s", strerror(errno));
		expect(reg(ctl, FXBLK_PEER_PROV_HOST, 0, (uintptr_t)low,
			   1ULL << 40, NULL), ENOMEM,
		       "REGISTER of 1 TiB at 8 GiB as root (page array too large)");
		munmap(low, 8192);
	}
	hole = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(hole, 8192);
	expect(reg(ctl, 0, 0, (uintptr_t)hole, 8192, NULL), EFAULT,
	       "REGISTER of unmapped memory");
	expect(reg(ctl, FXBLK_PEER_PROV_DMABUF, 0, (uintptr_t)buf, 4096,
		   NULL), EINVAL, "REGISTER of an address as dmabuf");
	expect(reg(ctl, 9, 0, (uintptr_t)buf, 4096, NULL), EINVAL,
	       "REGISTER with an unknown provider");

	expect(rw(ctl, h, FXBLK_PEER_OP_WRITE, dev, 100, 0, 4096), EINVAL,
	       "RW with an unaligned buf_off");
	expect(rw(ctl, h, FXBLK_PEER_OP_WRITE, dev, 0, 100, 4096), EINVAL,
	       "RW with an unaligned dev_off");
	expect(rw(ctl, h, FXBLK_PEER_OP_WRITE, dev, 0, 0, 1000), EINVAL,
	       "RW with an unaligned length");
	expect(rw(ctl, h, FXBLK_PEER_OP_WRITE, dev, 0, 0, 0), EINVAL,
	       "RW of length 0");
	expect(rw(ctl, h, FXBLK_PEER_OP_WRITE, dev, 0, 0,
		  FXBLK_PEER_MAX_RW + 512), EINVAL, "RW longer than MAX_RW");
	expect(rw(ctl, h, FXBLK_PEER_OP_WRITE, dev, 2 * MiB - 4096, 0, 8192),
	       EINVAL, "RW past the registration's end");
	expect(rw(ctl, h, FXBLK_PEER_OP_WRITE, dev, 0xfffffffffffffe00ULL, 0,
		  4096), EINVAL, "RW with buf_off + len wrapping around");
	expect(rw(ctl, h, FXBLK_PEER_OP_WRITE, dev, 0, 0xfffffffffffffe00ULL,
		  4096), EINVAL, "RW with dev_off + len wrapping around");
	expect(rw(ctl, h, FXBLK_PEER_OP_WRITE, dev, 0, size - 512, 4096),
	       ENOSPC, "RW past the disk's end");
	expect(rw(ctl, h, FXBLK_PEER_OP_WRITE, null, 0, 0, 4096), ENOTBLK,
	       "RW on /dev/null (not an fxblk disk)");
	expect(rw(ctl, h, FXBLK_PEER_OP_WRITE, 999, 0, 0, 4096), EBADF,
	       "RW on a closed fd");
	expect(rw(ctl, h, FXBLK_PEER_OP_WRITE, devro, 0, 0, 4096), EBADF,
	       "RW write on a read-only fd of the disk");
	expect(rw(ctl, h, 7, dev, 0, 0, 4096), EINVAL, "RW with an unknown op");
	a = rw_args(h, FXBLK_PEER_OP_WRITE, dev, 0, 0, 4096);
	a.eventfd = null;
	expect(ioctl(ctl, FXBLK_PEER_IOC_RW, &a), EINVAL,
	       "RW sync with an eventfd");
	a = rw_args(h, FXBLK_PEER_OP_WRITE, dev, 0, 0, 4096);
	a.flags = FXBLK_PEER_RW_ASYNC;
	a.eventfd = null;
	expect(ioctl(ctl, FXBLK_PEER_IOC_RW, &a), EINVAL,
	       "RW async with /dev/null as eventfd");
	expect(rw(ctl, 12345, FXBLK_PEER_OP_WRITE, dev, 0, 0, 4096), ENOENT,
	       "RW on a bad handle");
	expect(query(ctl, 12345, &q), ENOENT, "QUERY of a bad handle");
	expect(query(ctl, 0, &q), ENOENT, "QUERY of handle 0");
	expect(dereg(ctl, 1ULL << 40), ENOENT, "DEREGISTER of a bad handle");
	close(null);
}

/* Another process with this context's fd: refused, nothing happens. */
static void host_foreign(int ctl, int dev, uint64_t h)
{
	char fdarg[16], harg[32];
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		struct fxblk_peer_query q;

		if (query(ctl, h, &q) == 0 || errno != EPERM)
			_exit(2);
		if (rw(ctl, h, FXBLK_PEER_OP_WRITE, dev, 0, 0, 4096) == 0 ||
		    errno != EPERM)
			_exit(3);
		if (dereg(ctl, h) == 0 || errno != EPERM)
			_exit(4);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fail("forked child using the parent's context: status %d", st);
	good("forked child: QUERY, RW, DEREGISTER on the parent's handle -> EPERM");

	/* exec'd: the fd is inherited (no CLOEXEC on this dup) */
	snprintf(fdarg, sizeof(fdarg), "%d", dup(ctl));
	snprintf(harg, sizeof(harg), "%" PRIu64, h);
	pid = fork();
	if (pid == 0) {
		execl(self, self, "use-fd", fdarg, harg, (char *)NULL);
		_exit(5);
	}
	waitpid(pid, &st, 0);
	close(atoi(fdarg));
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fail("exec'd process using the context: status %d", st);
	good("exec'd process: the inherited context refuses it (EPERM)");
}

static int cmd_use_fd(int ctl, uint64_t h)
{
	struct fxblk_peer_query q;

	if (query(ctl, h, &q) == 0 || errno != EPERM)
		return 2;
	if (dereg(ctl, h) == 0 || errno != EPERM)
		return 3;
	return 0;
}

/* A child registers 1 MiB and exits without deregistering. */
static void host_exit(int ctl)
{
	uint64_t before = pinned_of(ctl, FXBLK_PEER_PROV_HOST);
	int p[2], st;
	char c;
	pid_t pid;

	if (pipe(p))
		fail("pipe");
	pid = fork();
	if (pid == 0) {
		int c2 = open_ctl();
		void *b = alloc_buf(MiB);

		if (reg(c2, 0, 0, (uintptr_t)b, MiB, NULL))
			_exit(2);
		if (write(p[1], "x", 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1)
		fail("child did not register");
	expect_pinned(ctl, FXBLK_PEER_PROV_HOST, before + MiB,
		      "child registered 1 MiB");
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	close(p[0]);
	expect_pinned(ctl, FXBLK_PEER_PROV_HOST, before,
		      "child killed with 1 MiB registered");
}

static uint64_t dev_size(int fd)
{
	off_t end = lseek(fd, 0, SEEK_END);

	if (end <= 0)
		fail("size of the disk: %s", strerror(errno));
	return end;
}

static int cmd_host(const char *path)
{
	int ctl = open_ctl();
	int dev = open(path, O_RDWR | O_CLOEXEC);
	int devd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	int devro = open(path, O_RDONLY | O_CLOEXEC);
	unsigned char *buf = alloc_buf(2 * MiB), *ro = alloc_buf(64 * KiB);
	struct fxblk_peer_register r;
	struct fxblk_peer_query q;
	uint64_t size;

	if (dev < 0 || devd < 0 || devro < 0)
		fail("open %s: %s", path, strerror(errno));
	size = dev_size(dev);
	expect(reg(ctl, 0, 0, (uintptr_t)buf, 2 * MiB, &r), 0,
	       "REGISTER 2 MiB of host memory (AUTO)");
	if (r.provider != FXBLK_PEER_PROV_HOST || !r.handle ||
	    !(r.out_flags & FXBLK_PEER_F_DIRECT) ||
	    !(r.out_flags & FXBLK_PEER_F_STRUCT_PAGE) || r.reason[0])
		fail("host registration: provider %u flags 0x%x reason '%s'",
		     r.provider, r.out_flags, r.reason);
	good("host registration: handle %" PRIu64 ", direct, struct pages",
	   (uint64_t)r.handle);
	expect(query(ctl, r.handle, &q), 0, "QUERY");
	if (q.state != FXBLK_PEER_STATE_ACTIVE || q.len != 2 * MiB ||
	    q.pinned_bytes != 2 * MiB || q.provider != FXBLK_PEER_PROV_HOST)
		fail("QUERY: state %u len %" PRIu64 " pinned %" PRIu64,
		     q.state, (uint64_t)q.len, (uint64_t)q.pinned_bytes);
	host_data(ctl, dev, devd, r.handle, buf);
	host_async(ctl, dev, devd, r.handle, buf);
	host_errors(ctl, dev, devro, r.handle, buf, size);
	host_foreign(ctl, dev, r.handle);

	{
		struct fxblk_peer_register rr;

		expect(reg(ctl, FXBLK_PEER_PROV_HOST, FXBLK_PEER_REG_READONLY,
			   (uintptr_t)ro, 64 * KiB, &rr), 0,
		       "REGISTER read-only");
		expect(rw(ctl, rr.handle, FXBLK_PEER_OP_READ, dev, 0, 0,
			  4096), EROFS, "RW read into a read-only registration");
		expect(rw(ctl, rr.handle, FXBLK_PEER_OP_WRITE, devro, 0, 0,
			  4096), EBADF, "RW write through a read-only fd");
		expect(dereg(ctl, rr.handle), 0, "DEREGISTER read-only");
	}
	expect(dereg(ctl, r.handle), 0, "DEREGISTER");
	expect(dereg(ctl, r.handle), ENOENT, "DEREGISTER again");
	expect(rw(ctl, r.handle, FXBLK_PEER_OP_WRITE, dev, 0, 0, 4096), ENOENT,
	       "RW on a deregistered handle");
	expect_pinned(ctl, FXBLK_PEER_PROV_HOST, 0, "all deregistered");
	host_exit(ctl);
	return 0;
}

/*
 * @len bytes of a fake vendor's "device memory", at an address aligned to
 * @align (the device page size: a 2 MiB heap hands out 2 MiB-aligned VAs).
 */
static unsigned char *map_fake(const char *name, size_t len, size_t align)
{
	unsigned char *res, *p;
	char path[64];
	uintptr_t a;
	int fd;

	snprintf(path, sizeof(path), "/dev/%s", name);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		fail("open %s: %s", path, strerror(errno));
	res = mmap(NULL, len + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (res == MAP_FAILED)
		fail("mmap reserve: %s", strerror(errno));
	a = ((uintptr_t)res + align - 1) & ~(uintptr_t)(align - 1);
	p = mmap((void *)a, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 fd, 0);
	if (p == MAP_FAILED)
		fail("mmap %s: %s", path, strerror(errno));
	if (a > (uintptr_t)res)
		munmap(res, a - (uintptr_t)res);
	munmap(p + len, (uintptr_t)res + len + align - (uintptr_t)(p + len));
	close(fd);
	return p;
}

static FILE *fake_param_file(const char *mod, const char *name,
			     const char *mode)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/%s/parameters/%s", mod,
		 name);
	f = fopen(path, mode);
	if (!f)
		fail("open %s: %s", path, strerror(errno));
	return f;
}

/* A fake's (or fxblk's) numeric module parameter. */
static unsigned long fake_param(const char *mod, const char *name)
{
	FILE *f = fake_param_file(mod, name, "r");
	unsigned long v;

	if (fscanf(f, "%lu", &v) != 1)
		fail("read %s parameter %s", mod, name);
	fclose(f);
	return v;
}

/* Make the vendor call the free callbacks; the errno of the write. */
static int try_revoke(const char *mod)
{
	FILE *f = fake_param_file(mod, strcmp(mod, "fxblk") ? "revoke" :
				  "peer_revoke_host", "w");
	int err = 0;

	if (fputs("1\n", f) < 0 || fflush(f))
		err = errno;
	if (fclose(f) && !err)
		err = errno;
	return err;
}

static void trigger_revoke(const char *mod)
{
	int err = try_revoke(mod);

	if (err)
		fail("revoke through %s: %s", mod, strerror(err));
}

/* A fake's counter becomes @want within ~5 s (deferred vendor work). */
static void expect_fake(const char *mod, const char *name,
			unsigned long want, const char *what)
{
	unsigned long got = 0;
	int i;

	for (i = 0; i < 500; i++) {
		got = fake_param(mod, name);
		if (got == want)
			break;
		usleep(10000);
	}
	if (got != want)
		fail("%s: %s %s is %lu, expected %lu", what, mod, name, got,
		     want);
	good("%s: %s %s = %lu", what, mod, name, got);
}

/*
 * DMA addresses only: never DIRECT; PEERQ (moved over fxblk's peer queues)
 * exactly when the provider maps for NICs (@peerq: amd_rdma v2).
 */
static void expect_dma_only(const struct fxblk_peer_register *r, uint32_t id,
			    int peerq)
{
	if (r->provider != id || !(r->out_flags & FXBLK_PEER_F_DMA_ONLY) ||
	    (r->out_flags & FXBLK_PEER_F_DIRECT) ||
	    !(r->out_flags & FXBLK_PEER_F_PEERQ) != !peerq ||
	    !strstr(r->reason, peerq ? "direct: only over fxblk's peer queues" :
		    "direct: no"))
		fail("registration: provider %u (want %u) flags 0x%x reason '%s'",
		     r->provider, id, r->out_flags, r->reason);
	good("provider %u: DMA addresses only, %s, reason '%s'", id,
	     peerq ? "peer queues can move it" : "staged", r->reason);
}

/* The handle turns REVOKED and lets go of its pins (the revoke work). */
static void expect_revoked(int ctl, int dev, uint32_t id, uint64_t h,
			   const char *by)
{
	struct fxblk_peer_query q;
	int i;

	for (i = 0; i < 500; i++) {
		expect(query(ctl, h, &q) ? -1 : 0, 0, "QUERY after revoke");
		if (q.state == FXBLK_PEER_STATE_REVOKED && !q.pinned_bytes)
			break;
		usleep(10000);
	}
	if (q.state != FXBLK_PEER_STATE_REVOKED || q.pinned_bytes)
		fail("after %s: state %u pinned %" PRIu64, by, q.state,
		     (uint64_t)q.pinned_bytes);
	good("%s: state REVOKED, reason '%s', unpinned", by, q.reason);
	expect(rw(ctl, h, FXBLK_PEER_OP_WRITE, dev, 0, 0, 4096), ENXIO,
	       "RW on a revoked handle");
	expect_pinned(ctl, id, 0, "after revoke");
	expect(dereg(ctl, h), 0, "DEREGISTER a revoked handle");
	expect(dereg(ctl, h), ENOENT, "DEREGISTER it again");
}

/* The vendor, in the glue of the fake under test. */
struct gpu {
	const char *mod, *glue;	/* fake_amdkfd, fxblk_rocm */
	uint32_t id, other;
	unsigned long api;	/* amd_rdma API, 0 for Ascend */
	size_t page, len;	/* device page size, test mapping */
};

/*
 * While a handle of it exists, the glue module is held: delete_module
 * (O_NONBLOCK, as rmmod) is refused, so fxblk never calls into an
 * unloaded glue.
 */
static void expect_glue_held(const struct gpu *g)
{
	long ret = syscall(SYS_delete_module, g->glue, O_NONBLOCK);

	expect(ret ? -1 : 0, EWOULDBLOCK, "rmmod of the glue while pinned");
}

/*
 * The owner frees its device memory (hipFree/aclrtFree: munmap here) while
 * it is registered: v1 and Ascend call the free callback (REVOKED), v2 never
 * does and keeps the memory pinned until DEREGISTER.
 */
static void gpu_owner_free(int ctl, int dev, const struct gpu *g)
{
	unsigned char *m = map_fake(g->mod, g->len, g->page);
	unsigned long pins = fake_param(g->mod, "pins");
	struct fxblk_peer_register r;
	struct fxblk_peer_query q;

	expect(reg(ctl, 0, 0, (uintptr_t)m, g->len, &r), 0,
	       "REGISTER device memory the owner frees next");
	munmap(m, g->len);
	if (g->api != 2) {
		expect_revoked(ctl, dev, g->id, r.handle,
			       "owner freed the memory");
		expect_fake(g->mod, "pins", pins, "the vendor's pin is gone");
		return;
	}
	usleep(200000);
	expect(query(ctl, r.handle, &q) ? -1 : 0, 0, "QUERY after the free");
	if (q.state == FXBLK_PEER_STATE_REVOKED || q.pinned_bytes != g->len)
		fail("amd_rdma v2 after the owner's free: state %u pinned %" PRIu64
		     " (v2 never calls back and keeps the BO)", q.state,
		     (uint64_t)q.pinned_bytes);
	good("amd_rdma v2: the owner's free revokes nothing, %zu bytes stay pinned",
	     g->len);
	expect_fake(g->mod, "pins", pins + 1, "v2 keeps the buffer");
	expect(dereg(ctl, r.handle), 0, "DEREGISTER after the owner's free");
	expect_fake(g->mod, "pins", pins, "v2 buffer released by put_pages");
}

struct thread_reg {
	int ctl;
	uintptr_t addr;
	size_t len;
	struct fxblk_peer_register r;
	int ret;
};

static void *thread_register(void *arg)
{
	struct thread_reg *t = arg;

	t->ret = reg(t->ctl, 0, 0, t->addr, t->len, &t->r) ? errno : 0;
	return NULL;
}

/*
 * Registered from a thread that exits before the DEREGISTER: the vendor
 * must know the process by its thread group (amd_rdma v1's put_pages looks
 * the pid up again; a thread's pid would be gone and the pin leak).
 */
static void gpu_thread(int ctl, const struct gpu *g)
{
	struct thread_reg t = { .ctl = ctl, .len = g->len };
	unsigned long pins = fake_param(g->mod, "pins");
	pthread_t th;

	t.addr = (uintptr_t)map_fake(g->mod, g->len, g->page);
	if (pthread_create(&th, NULL, thread_register, &t) ||
	    pthread_join(th, NULL))
		fail("registering thread: %s", strerror(errno));
	usleep(100000);	/* join returns before the task is quite gone */
	if (t.ret || t.r.provider != g->id)
		fail("REGISTER from a thread: %s, provider %u", strerror(t.ret),
		     t.r.provider);
	good("REGISTER from a thread that has exited since");
	expect(dereg(ctl, t.r.handle), 0, "DEREGISTER from the main thread");
	expect_fake(g->mod, "pins", pins, "the vendor's pin released");
	munmap((void *)t.addr, g->len);
}

static void gpu_init(struct gpu *g, const char *which)
{
	int rocm = !strcmp(which, "rocm");

	g->mod = rocm ? "fake_amdkfd" : "fake_ascend";
	g->glue = rocm ? "fxblk_rocm" : "fxblk_ascend";
	g->id = rocm ? FXBLK_PEER_PROV_ROCM : FXBLK_PEER_PROV_ASCEND;
	g->other = rocm ? FXBLK_PEER_PROV_ASCEND : FXBLK_PEER_PROV_ROCM;
	g->api = rocm ? fake_param(g->mod, "api") : 0;
	g->page = rocm ? 4096 : fake_param(g->mod, "page_size");
	g->len = g->page > MiB ? 2 * g->page : MiB;
	printf("vendor %s (glue %s): amd_rdma API %lu, device page %zu\n",
	       g->mod, g->glue, g->api, g->page);
}

/* Arguments a vendor refuses, each a clean errno. */
static void gpu_bad(int ctl, const struct gpu *g, unsigned char *vram,
		    unsigned char *host)
{
	expect(reg(ctl, g->id, 0, (uintptr_t)host, 64 * KiB, NULL), EFAULT,
	       "REGISTER host memory as this provider");
	expect(reg(ctl, g->id, 0, (uintptr_t)vram + g->len - 4096, 8192, NULL),
	       EFAULT, "REGISTER a range running past the device mapping");
	if (g->page > 4096)
		expect(reg(ctl, g->id, 0, (uintptr_t)vram + 4096, 4096, NULL),
		       EOPNOTSUPP, "REGISTER a VA not aligned to the device page");
	if (!access(g->id == FXBLK_PEER_PROV_ROCM ? "/sys/module/fxblk_ascend" :
		    "/sys/module/fxblk_rocm", F_OK))
		expect(reg(ctl, g->other, 0, (uintptr_t)vram, g->len, NULL),
		       EFAULT, "REGISTER it as the other vendor's memory");
}

static int cmd_gpu(const char *which, const char *path)
{
	int ctl = open_ctl(), dev = open(path, O_RDWR | O_CLOEXEC);
	unsigned char *vram, *host = alloc_buf(64 * KiB);
	struct fxblk_peer_register r;
	struct gpu g;
	pid_t pid;
	int st;

	if (dev < 0)
		fail("open %s: %s", path, strerror(errno));
	gpu_init(&g, which);
	vram = map_fake(g.mod, g.len, g.page);
	fill(vram, g.len, 3);
	expect(reg(ctl, 0, 0, (uintptr_t)vram, g.len, &r), 0,
	       "REGISTER fake device memory (AUTO)");
	expect_dma_only(&r, g.id, g.api != 1);	/* not amd_rdma v1 */
	if (r.page_size != g.page)
		fail("page size %" PRIu64 ", the vendor's is %zu",
		     (uint64_t)r.page_size, g.page);
	good("page size %" PRIu64 " as the vendor's table", (uint64_t)r.page_size);
	expect_pinned(ctl, g.id, g.len, "registered");
	expect_fake(g.mod, "pins", 1, "the vendor holds one pin");
	expect_glue_held(&g);
	expect(rw(ctl, r.handle, FXBLK_PEER_OP_WRITE, dev, 0, 0, 4096),
	       EREMOTEIO, "RW on DMA-address-only memory");
	gpu_bad(ctl, &g, vram, host);
	if (g.api == 2) {	/* the fake refuses: nothing to call back */
		if (try_revoke(g.mod) != EINVAL)
			fail("fake amd_rdma v2 called a free callback");
		good("amd_rdma v2: no free callback");
	} else {
		trigger_revoke(g.mod);
		expect_revoked(ctl, dev, g.id, r.handle, "revoked by the vendor");
	}
	gpu_owner_free(ctl, dev, &g);
	gpu_thread(ctl, &g);

	/* exit with device memory registered: the pin goes */
	pid = fork();
	if (pid == 0) {	/* its own device memory: a region is per process */
		int c2 = open_ctl();
		void *mine = map_fake(g.mod, g.len, g.page);
		struct fxblk_peer_register cr;

		if (reg(c2, 0, 0, (uintptr_t)mine, g.len, &cr) ||
		    cr.provider != g.id || pinned_of(c2, g.id) < g.len)
			_exit(2);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fail("child registering device memory: status %d", st);
	if (g.api == 2) {	/* v2 kept the first one; it goes with the fd */
		expect(dereg(ctl, r.handle), 0, "DEREGISTER (v2: still pinned)");
	}
	expect_pinned(ctl, g.id, 0, "child exited with device memory registered");
	expect_fake(g.mod, "pins", 0, "no pin left in the vendor");
	if (g.api == 1)
		expect_fake(g.mod, "double_frees", 0,
			    "no put_pages after a v1 free callback");
	munmap(vram, g.len);
	return 0;
}

static int make_udmabuf(size_t len)
{
	const char *what;
	int fd = peer_make_udmabuf(len, &what);

	if (fd < 0)
		fail("udmabuf: %s: %s", what, strerror(-fd));
	return fd;
}

static int reg_dmabuf(int ctl, int fd, uint64_t off, uint64_t len,
		      struct fxblk_peer_register *out)
{
	struct fxblk_peer_register r = {
		.abi = FXBLK_PEER_ABI, .flags = FXBLK_PEER_REG_DMABUF,
		.dmabuf_fd = fd, .offset = off, .len = len,
	};
	int ret = ioctl(ctl, FXBLK_PEER_IOC_REGISTER, &r);

	if (out)
		*out = r;
	return ret;
}

/*
 * The dma-buf core lists every buffer with its attachments in debugfs
 * (dma_buf_debug_show(), 5.10 to 7.3: the exporter's name, then "Attached
 * Devices:" and one device name a line). fxblk must not be among them: an
 * attachment lets the exporter move the buffer for its importer.
 */
static void dmabuf_not_attached(void)
{
	const char *path = "/sys/kernel/debug/dma_buf/bufinfo";
	FILE *f = fopen(path, "r");
	char line[256];
	int udmabufs = 0, ours = 0;

	if (!f)
		fail("open %s: %s (is debugfs mounted?)", path,
		     strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		udmabufs += !!strstr(line, "udmabuf");
		ours += !!strstr(line, "fxblk-peer");
	}
	fclose(f);
	if (!udmabufs)
		fail("%s lists no udmabuf: the check would prove nothing",
		     path);
	if (ours)
		fail("fxblk-peer is attached to a dma-buf (%s)", path);
	good("the registered udmabuf has no fxblk attachment (%s)", path);
}

static int cmd_dmabuf(const char *path)
{
	int ctl = open_ctl(), dev = open(path, O_RDWR | O_CLOEXEC);
	int buf = make_udmabuf(MiB), memfd = memfd_create("x", MFD_CLOEXEC);
	struct fxblk_peer_register r;

	if (dev < 0)
		fail("open %s: %s", path, strerror(errno));
	expect(reg_dmabuf(ctl, buf, 64 * KiB, 512 * KiB, &r), 0,
	       "REGISTER 512 KiB at 64 KiB of a udmabuf (AUTO)");
	dmabuf_not_attached();
	expect_dma_only(&r, FXBLK_PEER_PROV_DMABUF, 1);
	if (r.out_flags & FXBLK_PEER_F_REVOCABLE)
		fail("dma-buf handle revocable (flags 0x%x): not attached, nothing calls back",
		     r.out_flags);
	expect_pinned(ctl, FXBLK_PEER_PROV_DMABUF, 512 * KiB, "registered");
	expect(rw(ctl, r.handle, FXBLK_PEER_OP_READ, dev, 0, 0, 4096),
	       EREMOTEIO, "RW on a dma-buf");
	expect(reg_dmabuf(ctl, buf, 768 * KiB, 512 * KiB, NULL), EINVAL,
	       "REGISTER past the dma-buf's end");
	expect(reg_dmabuf(ctl, buf, 0xfffffffffffff000ULL, 8192, NULL),
	       EINVAL, "REGISTER with offset + len wrapping around");
	expect(reg_dmabuf(ctl, memfd, 0, 4096, NULL), EBADF,
	       "REGISTER a memfd as a dma-buf");
	close(buf);
	expect_pinned(ctl, FXBLK_PEER_PROV_DMABUF, 512 * KiB,
		      "the handle holds the dma-buf after its fd is closed");
	expect(dereg(ctl, r.handle), 0, "DEREGISTER");
	expect_pinned(ctl, FXBLK_PEER_PROV_DMABUF, 0, "deregistered");
	return 0;
}

/*
 * 64 async 1 MiB writes, then the host revoke test hook. Returns the I/Os
 * QUERY still saw in flight right after the revoke (0: they all completed
 * before it, and the attempt proved nothing about in-flight revocation).
 */
static unsigned int revoke_io_once(int ctl, int dev, unsigned char *buf,
				   int n)
{
	struct fxblk_peer_register r;
	struct fxblk_peer_query q;
	struct fxblk_peer_reap rp;
	int i, got = 0, moved = 0;
	unsigned int inflight;

	expect(reg(ctl, 0, 0, (uintptr_t)buf, n * MiB, &r), 0,
	       "REGISTER 64 MiB of host memory");
	for (i = 0; i < n; i++) {
		struct fxblk_peer_rw a = rw_args(r.handle, FXBLK_PEER_OP_WRITE,
						 dev, i * MiB, i * MiB, MiB);

		a.flags = FXBLK_PEER_RW_ASYNC;
		a.user_data = i;
		if (ioctl(ctl, FXBLK_PEER_IOC_RW, &a))
			fail("async RW %d: %s", i, strerror(errno));
	}
	trigger_revoke("fxblk");
	expect(query(ctl, r.handle, &q), 0, "QUERY right after the revoke");
	if (q.state != FXBLK_PEER_STATE_REVOKED)
		fail("state %u after revoke", q.state);
	inflight = q.inflight;
	expect(rw(ctl, r.handle, FXBLK_PEER_OP_WRITE, dev, 0, 0, 4096), ENXIO,
	       "RW on the revoked handle");
	while (got < n) {
		memset(&rp, 0, sizeof(rp));
		rp.abi = FXBLK_PEER_ABI;
		rp.max = FXBLK_PEER_REAP_MAX;
		rp.flags = FXBLK_PEER_REAP_WAIT;
		if (ioctl(ctl, FXBLK_PEER_IOC_REAP, &rp))
			fail("REAP: %s", strerror(errno));
		for (i = 0; i < (int)rp.count; i++)
			moved += rp.c[i].result == (int64_t)MiB;
		got += rp.count;
	}
	good("all %d I/Os completed (%d moved their 1 MiB); %u were in flight after the revoke",
	     n, moved, inflight);
	expect_pinned(ctl, FXBLK_PEER_PROV_HOST, 0, "after the revoke work");
	expect(query(ctl, r.handle, &q), 0, "QUERY after the I/O drained");
	if (q.inflight || q.pinned_bytes)
		fail("inflight %u pinned %" PRIu64, q.inflight,
		     (uint64_t)q.pinned_bytes);
	expect(dereg(ctl, r.handle), 0, "DEREGISTER the revoked handle");
	return inflight;
}

/* Until one attempt revoked a handle with I/O still in flight. */
static int cmd_revoke_io(const char *path)
{
	const int n = 64, attempts = 20;
	int ctl = open_ctl(), dev = open(path, O_RDWR | O_CLOEXEC), i;
	unsigned char *buf = alloc_buf(n * MiB);

	if (dev < 0)
		fail("open %s: %s", path, strerror(errno));
	fill(buf, n * MiB, 7);
	for (i = 1; i <= attempts; i++) {
		unsigned int inflight = revoke_io_once(ctl, dev, buf, n);

		if (inflight) {
			good("attempt %d: revoked with %u I/Os in flight; they drained, then the pages went",
			     i, inflight);
			return 0;
		}
		printf("attempt %d: every I/O completed before the revoke; again\n",
		       i);
	}
	fail("in %d attempts no I/O was in flight when the revoke hook ran",
	     attempts);
	return 1;
}

/*
 * PROVIDERS' count is an output. A caller's non-zero count is refused;
 * a kernel that used it as the first index (C1 of the 2026-12-02 review)
 * answers success with count = in + providers, having written entries
 * from p[in] on: past the array for in + providers > MAX_PROVIDERS.
 * Smallest first, so that an affected kernel is caught before the
 * out-of-bounds ones.
 */
struct peerq_rw_thread {
	pthread_t t;
	int ctl, dev, id;
	uint64_t h;
	const volatile int *stop;
	int done, enxio, err;
};

/* 16 MiB peer reads in a loop until stopped or an error (ENXIO: revoked). */
static void *peerq_rw_loop(void *p)
{
	struct peerq_rw_thread *a = p;
	uint64_t off = (uint64_t)a->id * 16 * MiB;

	while (!*a->stop) {
		if (!rw(a->ctl, a->h, FXBLK_PEER_OP_READ, a->dev, off, off,
			16 * MiB)) {
			a->done++;
			continue;
		}
		if (errno == ENXIO)
			a->enxio = 1;
		else
			a->err = errno;
		break;
	}
	return NULL;
}

/*
 * One try: the inflight count QUERY saw right before the revoke (RWs in
 * service; each thread starts its next one at once). Right after it none
 * has a command left on the memory (the callback fences them), so the
 * count after it proves nothing.
 */
static unsigned int revoke_peerq_once(int ctl, int dev)
{
	enum { NT = 4 };
	struct peerq_rw_thread th[NT];
	unsigned char *buf = map_fake("fake_ascend", NT * 16 * MiB, 4096);
	volatile int stop = 0;
	struct fxblk_peer_register r;
	struct fxblk_peer_query q;
	unsigned int inflight;
	int i;

	expect(reg(ctl, FXBLK_PEER_PROV_ASCEND, 0, (uintptr_t)buf,
		   NT * 16 * MiB, &r), 0, "REGISTER 64 MiB of fake Ascend memory");
	for (i = 0; i < NT; i++) {
		th[i] = (struct peerq_rw_thread){ .ctl = ctl, .dev = dev,
			.id = i, .h = r.handle, .stop = &stop };
		if (pthread_create(&th[i].t, NULL, peerq_rw_loop, &th[i]))
			fail("pthread_create");
	}
	usleep(30000);
	expect(query(ctl, r.handle, &q), 0, "QUERY right before the revoke");
	inflight = q.inflight;
	trigger_revoke("fake_ascend");
	expect(query(ctl, r.handle, &q), 0, "QUERY right after the revoke");
	if (q.state != FXBLK_PEER_STATE_REVOKED)
		fail("state %u after the driver's free callback", q.state);
	stop = 1;
	for (i = 0; i < NT; i++) {
		pthread_join(th[i].t, NULL);
		if (th[i].err)
			fail("thread %d: RW failed with %s, not ENXIO", i,
			     strerror(th[i].err));
	}
	good("%u RWs in flight before the revoke; %d, %d, %d, %d RWs completed; later ones ENXIO",
	     inflight, th[0].done, th[1].done, th[2].done, th[3].done);
	expect_pinned(ctl, FXBLK_PEER_PROV_ASCEND, 0, "after the revoke work");
	expect_fake("fake_ascend", "pins", 0, "the driver's table put once");
	expect(dereg(ctl, r.handle), 0, "DEREGISTER the revoked handle");
	munmap(buf, NT * 16 * MiB);
	return inflight;
}

static int cmd_revoke_peerq(const char *path)
{
	int ctl = open_ctl(), dev = open(path, O_RDONLY | O_CLOEXEC), i;

	if (dev < 0)
		fail("open %s: %s", path, strerror(errno));
	for (i = 1; i <= 10; i++) {
		unsigned int inflight = revoke_peerq_once(ctl, dev);

		if (inflight) {
			good("attempt %d: revoked with %u peer RWs in flight: they finished or failed ENXIO, then the mapping and the pin went",
			     i, inflight);
			return 0;
		}
		printf("attempt %d: no RW in flight at the revoke; again\n", i);
	}
	fail("in 10 attempts no peer RW was in flight when the driver revoked");
	return 1;
}

/* Commands posted on the peer queues of the fxN of @path (debugfs). */
static unsigned long peerq_inflight(const char *path)
{
	const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	FILE *f = fopen("/sys/kernel/debug/fxblk/peerq", "r");
	size_t nl = strlen(name);
	unsigned long n = 0, v;
	char line[2048], *p;

	if (!f)
		fail("open /sys/kernel/debug/fxblk/peerq: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, name, nl) || line[nl] != ' ')
			continue;
		p = strstr(line, " inflight=");
		if (p && sscanf(p, " inflight=%lu", &v) == 1)
			n += v;
	}
	fclose(f);
	return n;
}

static void run_cmd(const char *what, const char *cmd)
{
	int st = system(cmd);

	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st))
		fail("%s: '%s' exited with status %d", what, cmd, st);
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

struct held_rw {
	pthread_t t;
	int ctl, dev;
	uint64_t h, len;
	int err;			/* errno of the RW, 0: it moved the data */
};

static void *held_rw_fn(void *arg)
{
	struct held_rw *a = arg;

	a->err = rw(a->ctl, a->h, FXBLK_PEER_OP_READ, a->dev, 0, 0, a->len) ?
		 errno : 0;
	return NULL;
}

struct held_release {
	pthread_t t;
	const char *cmd;
};

static void *held_release_fn(void *arg)
{
	struct held_release *a = arg;

	usleep(300000);
	run_cmd("RELEASE", a->cmd);
	return NULL;
}

/*
 * One 4 MiB peer READ into fake Ascend memory (64 KiB chunks: pieces on
 * every member), held by the target; the driver frees the memory while
 * its commands are posted. After all settled, no poisoned page was
 * written: the callback returned only once no DMA could reach the memory.
 */
static int cmd_revoke_held(const char *path, const char *mode,
			   const char *hold, const char *release)
{
	const size_t len = 4 * MiB;
	int ctl = open_ctl(), dev = open(path, O_RDONLY | O_CLOEXEC), i;
	unsigned char *buf = map_fake("fake_ascend", len, 4096);
	int wait_mode = !strcmp(mode, "wait");
	struct held_release rel = { .cmd = release };
	struct fxblk_peer_register r;
	struct held_rw th;
	unsigned long n, late, poisoned0 = fake_param("fake_ascend", "poisoned");
	double t0, t1;

	if (dev < 0)
		fail("open %s: %s", path, strerror(errno));
	if (!wait_mode && strcmp(mode, "fence"))
		fail("mode %s: wait or fence", mode);
	expect(reg(ctl, FXBLK_PEER_PROV_ASCEND, 0, (uintptr_t)buf, len, &r), 0,
	       "REGISTER 4 MiB of fake Ascend memory");
	run_cmd("HOLD", hold);
	th = (struct held_rw){ .ctl = ctl, .dev = dev, .h = r.handle,
			       .len = len };
	if (pthread_create(&th.t, NULL, held_rw_fn, &th))
		fail("pthread_create");
	/* until the RW's commands are posted and held by the target */
	for (i = 0; i < 1000 && (n = peerq_inflight(path)) < 4; i++)
		usleep(10000);
	if (n < 4)
		fail("the held RW has %lu commands on the peer queues, expected one per member at least", n);
	good("%lu peer-queue commands held by the target", n);
	if (wait_mode && pthread_create(&rel.t, NULL, held_release_fn, &rel))
		fail("pthread_create");
	t0 = now_ms();
	trigger_revoke("fake_ascend");
	t1 = now_ms();
	printf("the free callback returned after %.0f ms; %lu commands on the peer queues then\n",
	       t1 - t0, peerq_inflight(path));
	if (wait_mode)
		pthread_join(rel.t, NULL);
	else
		run_cmd("RELEASE", release);
	pthread_join(th.t, NULL);
	if (th.err && th.err != ENXIO)
		fail("the held RW failed with %s, not ENXIO", strerror(th.err));
	good("the held RW: %s", th.err ? strerror(th.err) : "moved its 4 MiB");
	/* the target's late data (if any) has landed once nothing is posted */
	for (i = 0; i < 1000 && peerq_inflight(path); i++)
		usleep(10000);
	sleep(2);
	n = fake_param("fake_ascend", "poisoned") - poisoned0;
	if (n != len / 4096)
		fail("the fake poisoned %lu pages at the callback, expected %zu", n,
		     len / 4096);
	late = fake_param("fake_ascend", "late_dma");
	if (late)
		fail("%lu of the %lu pages poisoned when the free callback returned were written afterwards: DMA into freed device memory",
		     late, n);
	good("none of the %lu pages poisoned when the free callback returned was written afterwards", n);
	expect_pinned(ctl, FXBLK_PEER_PROV_ASCEND, 0, "after the revoke work");
	expect(dereg(ctl, r.handle), 0, "DEREGISTER the revoked handle");
	munmap(buf, len);
	return 0;
}

static int cmd_badcount(void)
{
	static const uint32_t counts[] = { 1, 4, 5, 8, 64, 0xffffffffu };
	struct fxblk_peer_providers p;
	int ctl = open_ctl();
	unsigned int i;

	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		memset(&p, 0, sizeof(p));
		p.abi = FXBLK_PEER_ABI;
		p.count = counts[i];
		if (ioctl(ctl, FXBLK_PEER_IOC_PROVIDERS, &p) == 0)
			fail("PROVIDERS with count %u in: accepted, count %u out (the caller's count was used as an index)",
			     counts[i], p.count);
		if (errno != EINVAL)
			fail("PROVIDERS with count %u in: %s, expected EINVAL",
			     counts[i], strerror(errno));
		good("PROVIDERS with count %u in -> EINVAL", counts[i]);
	}
	get_providers(ctl, &p);
	if (p.count != FXBLK_PEER_PROV_MAX)
		fail("PROVIDERS with count 0: count %u out, expected %u",
		     p.count, FXBLK_PEER_PROV_MAX);
	good("PROVIDERS with count 0 in -> %u providers", p.count);
	return 0;
}

static int same(const void *a, const void *b, size_t n)
{
	return !memcmp(a, b, n);
}

/* Buffered pread of the whole range (the page cache of the disk). */
static void bread(int fd, void *p, size_t n, uint64_t off)
{
	if (pread(fd, p, n, off) != (ssize_t)n)
		fail("buffered pread: %s", strerror(errno));
}

static void bwrite(int fd, const void *p, size_t n, uint64_t off)
{
	if (pwrite(fd, p, n, off) != (ssize_t)n)
		fail("buffered pwrite: %s", strerror(errno));
}

static void dread(int fd, void *p, size_t n, uint64_t off)
{
	if (pread(fd, p, n, off) != (ssize_t)n)
		fail("O_DIRECT pread: %s", strerror(errno));
}

static void set_ro(int dev, int ro)
{
	if (ioctl(dev, BLKROSET, &ro))
		fail("BLKROSET %d: %s", ro, strerror(errno));
}

/*
 * IOC_RW and the disk's page cache, as O_DIRECT has it: 256 KiB at 8 MiB
 * + 60 KiB (crossing chunks and members). Every part is checked, a failed
 * one does not stop the others.
 */
static int cmd_cache(const char *path)
{
	const uint64_t off = 8 * MiB + 60 * KiB, len = 256 * KiB;
	int ctl = open_ctl(), dev = open(path, O_RDWR | O_CLOEXEC);
	int devd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	unsigned char *buf = alloc_buf(len), *want = alloc_buf(len);
	unsigned char *got = alloc_buf(len);
	struct fxblk_peer_register r;

	if (dev < 0 || devd < 0)
		fail("open %s: %s", path, strerror(errno));
	expect(reg(ctl, 0, 0, (uintptr_t)buf, len, &r), 0,
	       "REGISTER 256 KiB of host memory");

	/* 1: cached pages of the range go with an IOC_RW write */
	fill(got, len, 11);
	if (pwrite(devd, got, len, off) != (ssize_t)len)
		fail("O_DIRECT pwrite: %s", strerror(errno));
	bread(dev, want, len, off);	/* now cached */
	fill(buf, len, 12);
	expect(rw(ctl, r.handle, FXBLK_PEER_OP_WRITE, dev, 0, off, len), 0,
	       "RW write over cached blocks");
	bread(dev, got, len, off);
	if (same(got, buf, len))
		good("a buffered read after the RW write sees its data");
	else
		soft_fail("a buffered read after the RW write sees %s data",
			  same(got, want, len) ? "the old (cached)" : "other");

	/* 2: a dirty cached block does not overwrite an IOC_RW write later */
	fill(want, len, 13);
	bwrite(dev, want, len, off);	/* dirty, not written back */
	fill(buf, len, 14);
	expect(rw(ctl, r.handle, FXBLK_PEER_OP_WRITE, dev, 0, off, len), 0,
	       "RW write over dirty cached blocks");
	if (fsync(dev))
		fail("fsync: %s", strerror(errno));
	dread(devd, got, len, off);
	if (same(got, buf, len))
		good("after fsync the disk holds the RW write, not the older dirty cache");
	else
		soft_fail("after fsync the disk holds %s, not the RW write",
			  same(got, want, len) ? "the older dirty cached data" :
			  "other data");
	bread(dev, got, len, off);
	if (!same(got, buf, len))
		soft_fail("a buffered read after that does not see the RW write");

	/* 3: an IOC_RW read sees dirty cached data */
	fill(want, len, 15);
	bwrite(dev, want, len, off);
	memset(buf, 0, len);
	expect(rw(ctl, r.handle, FXBLK_PEER_OP_READ, dev, 0, off, len), 0,
	       "RW read of dirty cached blocks");
	if (same(buf, want, len))
		good("the RW read sees the data of the dirty cache (written back first)");
	else
		soft_fail("the RW read does not see the dirty cached data");
	if (fsync(dev))
		fail("fsync: %s", strerror(errno));

	/* 4: BLKROSET: writes refused as blkdev_write_iter() refuses them */
	set_ro(dev, 1);
	fill(buf, len, 16);
	if (pwrite(devd, buf, len, off) >= 0 || errno != EPERM)
		soft_fail("O_DIRECT pwrite on a read-only disk: %s",
			  strerror(errno));
	if (rw(ctl, r.handle, FXBLK_PEER_OP_WRITE, dev, 0, off, len) == 0)
		soft_fail("RW write on a read-only disk (BLKROSET) succeeded");
	else if (errno != EPERM)
		soft_fail("RW write on a read-only disk: %s, expected EPERM",
			  strerror(errno));
	else
		good("RW write on a read-only disk (BLKROSET) -> EPERM, as O_DIRECT");
	set_ro(dev, 0);
	dread(devd, got, len, off);
	if (same(got, want, len))
		good("the read-only disk kept its data");
	else if (same(got, buf, len))
		soft_fail("the read-only disk was written");
	else
		soft_fail("the read-only disk holds other data");
	set_ro(dev, 1);
	expect(rw(ctl, r.handle, FXBLK_PEER_OP_READ, dev, 0, off, len), 0,
	       "RW read on a read-only disk");
	set_ro(dev, 0);
	expect(rw(ctl, r.handle, FXBLK_PEER_OP_WRITE, dev, 0, off, len), 0,
	       "RW write after BLKROSET 0");
	expect(dereg(ctl, r.handle), 0, "DEREGISTER");
	free(got);
	free(want);
	free(buf);
	return soft_failed;
}

/* Without CAP_IPC_LOCK, pins count against RLIMIT_MEMLOCK (64 KiB here). */
static int cmd_memlock(void)
{
	struct rlimit rl = { 64 * KiB, 64 * KiB };
	unsigned char *buf = alloc_buf(MiB);
	struct fxblk_peer_register r;
	int ctl;

	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		fail("setrlimit: %s", strerror(errno));
	ctl = open_ctl();
	expect(reg(ctl, 0, 0, (uintptr_t)buf, MiB, NULL), ENOMEM,
	       "REGISTER 1 MiB over a 64 KiB RLIMIT_MEMLOCK");
	expect(reg(ctl, 0, 0, (uintptr_t)buf, 48 * KiB, &r), 0,
	       "REGISTER 48 KiB under it");
	expect(reg(ctl, 0, 0, (uintptr_t)buf + 64 * KiB, 32 * KiB, NULL),
	       ENOMEM, "REGISTER 32 KiB more (80 KiB in all)");
	expect(dereg(ctl, r.handle), 0, "DEREGISTER the 48 KiB");
	expect(reg(ctl, 0, 0, (uintptr_t)buf + 64 * KiB, 32 * KiB, NULL), 0,
	       "REGISTER 32 KiB after that (the charge was returned)");
	return 0;
}

/*
 * P2PDMA pages (a CMB published as p2pmem stands in for VRAM exposed that
 * way) register as host memory where the kernel has FOLL_PCI_P2PDMA, and
 * RW moves them: to DEV (whose members take them) and back, verified
 * through host memory; RDMADEV (an nvme-rdma member) refuses them.
 */
static int cmd_p2pmem(const char *alloc, const char *path, const char *rdma)
{
	const size_t len = MiB;
	const uint64_t off = 60 * KiB;	/* crosses chunks and members */
	int ctl = open_ctl(), afd = open(alloc, O_RDWR | O_CLOEXEC);
	int dev = open(path, O_RDWR | O_CLOEXEC);
	int devd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	unsigned char *host = alloc_buf(len), *chk = alloc_buf(len);
	struct fxblk_peer_register r;
	unsigned char *p2p;

	if (afd < 0 || dev < 0 || devd < 0)
		fail("open %s / %s: %s", alloc, path, strerror(errno));
	p2p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, afd, 0);
	if (p2p == MAP_FAILED)
		fail("mmap %s: %s", alloc, strerror(errno));
	fill(host, len, 21);
	memcpy(p2p, host, len);
	expect(reg(ctl, 0, 0, (uintptr_t)p2p, len, &r), 0,
	       "REGISTER 1 MiB of P2PDMA memory (AUTO)");
	if (r.provider != FXBLK_PEER_PROV_HOST ||
	    !(r.out_flags & FXBLK_PEER_F_DIRECT) ||
	    !(r.out_flags & FXBLK_PEER_F_STRUCT_PAGE))
		fail("P2PDMA registration: provider %u flags 0x%x reason '%s'",
		     r.provider, r.out_flags, r.reason);
	good("P2PDMA memory: host provider, struct pages, direct");
	expect(rw(ctl, r.handle, FXBLK_PEER_OP_WRITE, dev, 0, off, len), 0,
	       "RW write from P2PDMA memory");
	if (pread(devd, chk, len, off) != (ssize_t)len)
		fail("O_DIRECT pread: %s", strerror(errno));
	cmp(chk, host, len, "P2PDMA -> disk, O_DIRECT read back");
	fill(chk, len, 22);
	if (pwrite(devd, chk, len, off) != (ssize_t)len)
		fail("O_DIRECT pwrite: %s", strerror(errno));
	memset(p2p, 0, len);
	expect(rw(ctl, r.handle, FXBLK_PEER_OP_READ, dev, 0, off, len), 0,
	       "RW read into P2PDMA memory");
	memcpy(host, p2p, len);
	cmp(host, chk, len, "disk -> P2PDMA, read by the CPU");
	if (rdma) {
		int rd = open(rdma, O_RDWR | O_CLOEXEC);

		if (rd < 0)
			fail("open %s: %s", rdma, strerror(errno));
		expect(rw(ctl, r.handle, FXBLK_PEER_OP_WRITE, rd, 0, 0, len),
		       EREMOTEIO, "RW write from P2PDMA memory to an nvme-rdma volume");
		expect(rw(ctl, r.handle, FXBLK_PEER_OP_READ, rd, 0, 0, len),
		       EREMOTEIO, "RW read into P2PDMA memory from an nvme-rdma volume");
		close(rd);
	}
	expect(dereg(ctl, r.handle), 0, "DEREGISTER");
	expect_pinned(ctl, FXBLK_PEER_PROV_HOST, 0, "deregistered");
	munmap(p2p, len);
	return 0;
}

static void file_io(const char *path, void *p, size_t n, int out)
{
	int fd = open(path, out ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY,
		      0600);
	ssize_t got;

	if (fd < 0)
		fail("open %s: %s", path, strerror(errno));
	got = out ? write(fd, p, n) : read(fd, p, n);
	if (got != (ssize_t)n)
		fail("%s %s: %zd of %zu bytes", out ? "write" : "read", path,
		     got, n);
	close(fd);
}

static int rwfile(const char *op, const char *path, uint64_t buf_off,
		  uint64_t dev_off, uint64_t len, const char *file,
		  const char *mem, uint32_t rw_flags, int do_fsync)
{
	int write_op = !strcmp(op, "write");
	uint64_t size = (buf_off + len + 8191) & ~4095ULL, i;
	int ctl = open_ctl();
	int dev = open(path, (write_op ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	int rocm = !strncmp(mem, "rocm", 4), ascend = !strncmp(mem, "ascend", 6);
	int dmabuf = !strcmp(mem, "dmabuf"), dfd = -1;
	const char *sfx = strchr(mem, '-');
	int refused = sfx && !strcmp(sfx, "-refused");
	uint32_t opc = write_op ? FXBLK_PEER_OP_WRITE : FXBLK_PEER_OP_READ;
	uint32_t prov = rocm ? FXBLK_PEER_PROV_ROCM :
			ascend ? FXBLK_PEER_PROV_ASCEND :
			dmabuf ? FXBLK_PEER_PROV_DMABUF : FXBLK_PEER_PROV_HOST;
	size_t page = ascend ? fake_param("fake_ascend", "page_size") : 4096;
	unsigned char *buf;
	struct fxblk_peer_register r;

	if (!write_op && strcmp(op, "read"))
		fail("rwfile: op '%s' is neither read nor write", op);
	if (strcmp(mem, "host") && !dmabuf &&
	    ((!rocm && !ascend) || (sfx && !refused)))
		fail("rwfile: memory '%s' is not host, dmabuf, rocm[-refused] or ascend[-refused]",
		     mem);
	if (dev < 0)
		fail("open %s: %s", path, strerror(errno));
	size = (size + page - 1) / page * page;
	if (dmabuf) {
		/*
		 * a udmabuf, seen by the CPU through its mmap; registered from
		 * 64 KiB on, so the mapping for the NIC is cut at an offset
		 */
		dfd = make_udmabuf(size + 64 * KiB);
		buf = mmap(NULL, size + 64 * KiB, PROT_READ | PROT_WRITE,
			   MAP_SHARED, dfd, 0);
		if (buf == MAP_FAILED)
			fail("mmap of the udmabuf: %s", strerror(errno));
		memset(buf, 0x5a, 64 * KiB);
		buf += 64 * KiB;
	} else {
		buf = rocm ? map_fake("fake_amdkfd", size, page) :
		      ascend ? map_fake("fake_ascend", size, page) :
		      alloc_buf(size);
	}
	memset(buf, 0xa5, size);
	if (write_op)
		file_io(file, buf + buf_off, len, 0);
	if (dmabuf)
		expect(reg_dmabuf(ctl, dfd, 64 * KiB, size, &r), 0,
		       "REGISTER a udmabuf from 64 KiB on");
	else
		expect(reg(ctl, prov, 0, (uintptr_t)buf, size, &r), 0,
		       rocm ? "REGISTER fake ROCm memory" :
		       ascend ? "REGISTER fake Ascend memory" :
		       "REGISTER host memory");
	if (rocm || ascend || dmabuf) {
		expect_dma_only(&r, prov, 1);
		struct fxblk_peer_rw a = rw_args(r.handle, opc, dev, buf_off,
						 dev_off, len);

		a.flags = FXBLK_PEER_RW_ASYNC;
		expect(ioctl(ctl, FXBLK_PEER_IOC_RW, &a), EREMOTEIO,
		       "asynchronous RW of DMA-only memory");
	}
	if (rw_flags & FXBLK_PEER_RW_FUA) {
		struct fxblk_peer_rw a = rw_args(r.handle, FXBLK_PEER_OP_READ,
						 dev, buf_off, dev_off, len);

		if (!write_op)
			fail("rwfile: +fua is for writes");
		a.flags = FXBLK_PEER_RW_FUA;
		expect(ioctl(ctl, FXBLK_PEER_IOC_RW, &a), EINVAL,
		       "a read with FXBLK_PEER_RW_FUA");
	}
	if (refused) {
		expect(rw_flagged(ctl, r.handle, opc, dev, buf_off, dev_off,
				  len, rw_flags),
		       EREMOTEIO, "RW of DMA-only memory here");
	} else if (rw_flagged(ctl, r.handle, opc, dev, buf_off, dev_off, len,
			      rw_flags)) {
		fail("RW %s of %" PRIu64 " bytes at %" PRIu64 " (buffer +%"
		     PRIu64 "): %s", op, len, dev_off, buf_off,
		     strerror(errno));
	} else {
		good("RW %s%s of %" PRIu64 " bytes at %" PRIu64
		     " (buffer +%" PRIu64 ")", op,
		     rw_flags & FXBLK_PEER_RW_FUA ? " (FUA)" : "", len,
		     dev_off, buf_off);
	}
	if (do_fsync) {
		if (fsync(dev))
			fail("fsync %s after the RW: %s", path, strerror(errno));
		good("fsync %s", path);
	}
	for (i = 0; i < size; i++)
		if ((i < buf_off || i >= buf_off + len) && buf[i] != 0xa5)
			fail("byte %" PRIu64 " of the buffer, outside the RW range, changed to 0x%02x",
			     i, buf[i]);
	good("the %" PRIu64 " bytes around the range untouched",
	     size - len);
	if (refused)
		for (i = 0; i < size; i++)
			if (buf[i] != 0xa5)
				fail("byte %" PRIu64 " of the buffer changed by a refused RW",
				     i);
	if (dmabuf)
		for (i = 0; i < 64 * KiB; i++)
			if (buf[(ssize_t)i - (ssize_t)(64 * KiB)] != 0x5a)
				fail("byte %" PRIu64 " of the udmabuf, before the registration, changed",
				     i);
	if (!write_op && !refused)
		file_io(file, buf + buf_off, len, 1);
	expect(dereg(ctl, r.handle), 0, "DEREGISTER");
	return 0;
}

static int cmd_rwfile(const char *op, const char *path, uint64_t buf_off,
		      uint64_t dev_off, uint64_t len, const char *file,
		      const char *mem_arg)
{
	char mem[64], *plus;
	uint32_t rw_flags = 0;
	int do_fsync = 0;

	snprintf(mem, sizeof(mem), "%s", mem_arg);
	while ((plus = strrchr(mem, '+'))) {
		if (!strcmp(plus, "+fua"))
			rw_flags |= FXBLK_PEER_RW_FUA;
		else if (!strcmp(plus, "+fsync"))
			do_fsync = 1;
		else
			fail("rwfile: '%s' in '%s' is neither +fua nor +fsync",
			     plus, mem_arg);
		*plus = '\0';
	}
	return rwfile(op, path, buf_off, dev_off, len, file, mem, rw_flags,
		      do_fsync);
}

int main(int argc, char **argv)
{
	self = "/proc/self/exe";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "providers"))
		return cmd_providers();
	if (argc == 3 && !strcmp(argv[1], "host"))
		return cmd_host(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "gpu"))
		return cmd_gpu(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "dmabuf"))
		return cmd_dmabuf(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "revoke-io"))
		return cmd_revoke_io(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "revoke-peerq"))
		return cmd_revoke_peerq(argv[2]);
	if (argc == 6 && !strcmp(argv[1], "revoke-held"))
		return cmd_revoke_held(argv[2], argv[3], argv[4], argv[5]);
	if (argc == 3 && !strcmp(argv[1], "cache"))
		return cmd_cache(argv[2]);
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "p2pmem"))
		return cmd_p2pmem(argv[2], argv[3], argc == 5 ? argv[4] : NULL);
	if (argc == 2 && !strcmp(argv[1], "badcount"))
		return cmd_badcount();
	if (argc == 2 && !strcmp(argv[1], "memlock"))
		return cmd_memlock();
	if ((argc == 8 || argc == 9) && !strcmp(argv[1], "rwfile"))
		return cmd_rwfile(argv[2], argv[3], strtoull(argv[4], NULL, 0),
				  strtoull(argv[5], NULL, 0),
				  strtoull(argv[6], NULL, 0), argv[7],
				  argc == 9 ? argv[8] : "host");
	if (argc == 4 && !strcmp(argv[1], "use-fd"))
		return cmd_use_fd(atoi(argv[2]), strtoull(argv[3], NULL, 0));
	fprintf(stderr, "usage: see the comment at the top of peer-test.c\n");
	return 2;
}
