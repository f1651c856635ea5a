// SPDX-License-Identifier: GPL-2.0
/*
 * peer-fuzz: hostile use of every ioctl of /dev/fxblk-peer, run inside the
 * lab VM as root (tests/lab/tests/45-peer-fuzz.sh, tests/lab/debug/).
 *
 *   peer-fuzz DEV [--seed N] [--seconds S] [--threads T] [--kill-children]
 *
 * DEV is a scratch /dev/fxN (its first 4 MiB are checked, the rest is
 * written). What runs at once, until S seconds are up:
 *  - a root process and an unprivileged one (uid/gid 65534, no
 *    capabilities, no new privileges: the 0666 node is open to anyone),
 *    T threads each, sharing one context per process: PROVIDERS, REGISTER
 *    (host memory, read-only, munmap'ed after registering, PROT_NONE,
 *    read-only mappings, holes, kernel addresses, huge lengths, dma-bufs),
 *    DEREGISTER, RW (sync and async, with eventfds), REAP, QUERY, on live,
 *    revoked and foreign handles, with structured arguments (valid ones and
 *    each field made bad in turn), mutated ones (valid, then fields set to
 *    boundary values) and random bytes (random command numbers too);
 *  - in the root process, the host revoke hook (fxblk.peer_revoke_host),
 *    at random times: every host handle turns revoked under the others;
 *  - children (root and unprivileged) that register memory, start async and
 *    sync I/O and registrations, and are SIGKILLed while it is in flight;
 *    and forked children that try the parent's context (EPERM).
 * Before all that, structured checks whose answer is known exactly: for
 * example PROVIDERS with a non-zero (output) count must fail with EINVAL.
 *
 * Oracle: every ioctl answers success or an errno its ioctl documents
 * (kmod/include/uapi/linux/fxblk_peer.h); a call the uapi says is invalid
 * never succeeds; replies are sane (counts within bounds, handles known);
 * each thread's own range of DEV reads back, through RW and O_DIRECT, what
 * its last RW write put there; afterwards every provider has 0 pinned bytes
 * and 0 registrations, DEV's first 4 MiB are intact, and a last RW round
 * trip is coherent with O_DIRECT and with the page cache. The lab adds: a
 * clean kernel log (KASAN on the debug kernel) and fxblk unloads.
 *
 * The seed is printed first; --seed N replays each thread's sequence of
 * calls (their interleaving is the scheduler's).
 * Exit: 0 all held, 1 a check failed, 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/fxblk_peer.h>

#include "udmabuf-util.h"

#define KiB 1024ULL
#define MiB (1024ULL * KiB)

#define KEEP_LEN	(4 * MiB)	/* DEV's first bytes: never written */
#define SLOT_LEN	(256 * KiB)	/* per thread, own data checks */
#define MAX_THREADS	16
#define POOL_LEN	(2 * MiB)	/* per thread, host memory to register */
#define NHANDLES	64		/* handles remembered per process */
#define REVOKE_HOOK	"/sys/module/fxblk/parameters/peer_revoke_host"

static uint64_t seed;
static int seconds = 20, nthreads = 3;
static bool kill_children = true;
static const char *dev_path;
static uint64_t dev_size, chaos_off, chaos_len;
static struct timespec t_end;

/* ---- output ------------------------------------------------------------ */

static const char *role = "main";

static void die(const char *fmt, ...)
{
	va_list ap;
	char msg[512];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("FAIL: %s: %s (replay: peer-fuzz %s --seed %" PRIu64 ")\n",
	       role, msg, dev_path, seed);
	fflush(stdout);
	_exit(1);
}

/* ---- random ------------------------------------------------------------ */

struct rng { uint64_t s; };

static uint64_t rnd(struct rng *r)
{
	uint64_t x = r->s;	/* xorshift64* */

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static uint64_t below(struct rng *r, uint64_t n)
{
	return n ? rnd(r) % n : 0;
}

static bool chance(struct rng *r, unsigned int pct)
{
	return below(r, 100) < pct;
}

static void rng_init(struct rng *r, uint64_t stream)
{
	r->s = (seed ^ (stream * 0x9E3779B97F4A7C15ULL)) | 1;
	rnd(r);
}

static const uint64_t interesting[] = {
	0, 1, 2, 7, 511, 512, 513, 4095, 4096, 4097, 8192, 65536, MiB,
	FXBLK_PEER_MAX_RW - 512, FXBLK_PEER_MAX_RW, FXBLK_PEER_MAX_RW + 512,
	0x7fffffffULL, 0x80000000ULL, 0xffffffffULL, 0x100000000ULL,
	0x7ffffffff000ULL, 0x800000000000ULL, 0xffff888000000000ULL,
	0x7fffffffffffffffULL, 0x8000000000000000ULL, 0xfffffffffffff000ULL,
	0xfffffffffffffe00ULL, 0xffffffffffffffffULL,
};

static uint64_t pick_u64(struct rng *r)
{
	if (chance(r, 70))
		return interesting[below(r, sizeof(interesting) /
					   sizeof(interesting[0]))];
	return chance(r, 50) ? rnd(r) : rnd(r) & 0xfffff000ULL;
}

/* ---- per process state --------------------------------------------------- */

struct proc {
	int ctl;		/* this process's context, shared by its threads */
	int dev, devro;		/* DEV read-write and read-only */
	int null, efd;
	int dmabuf;		/* a 1 MiB udmabuf, or -1 */
	int devd;		/* DEV, O_DIRECT, read-only */
	bool root;
	pthread_mutex_t lock;	/* @handles */
	uint64_t handles[NHANDLES];
	atomic_ulong calls, ok;
	atomic_ulong revoked;	/* RWs refused with ENXIO: a revoked handle */
};

struct worker {
	struct proc *p;
	struct rng r;
	int id;
	unsigned char *pool;	/* POOL_LEN of host memory */
	/* own data checks: a context of its own, so others' random handles
	 * never reach its registrations */
	int ctl;
	unsigned char *wbuf, *rbuf, *chk;
	uint64_t wh, rh;	/* handles of wbuf/rbuf in @ctl, 0 if none */
	uint64_t slot;		/* its range of DEV */
	bool slot_known;	/* slot holds @chk's pattern */
	unsigned int gen, checks;
	uint64_t nr_async;
};

static void remember(struct proc *p, struct rng *r, uint64_t h)
{
	pthread_mutex_lock(&p->lock);
	p->handles[below(r, NHANDLES)] = h;
	pthread_mutex_unlock(&p->lock);
}

static uint64_t some_handle(struct proc *p, struct rng *r)
{
	uint64_t h;

	if (chance(r, 15))
		return chance(r, 50) ? below(r, 80) : pick_u64(r);
	pthread_mutex_lock(&p->lock);
	h = p->handles[below(r, NHANDLES)];
	pthread_mutex_unlock(&p->lock);
	return h;
}

static int some_fd(struct proc *p, struct rng *r)
{
	static const int odd[] = { -2, -1, 0, 1, 2, 999, 0x7fffffff };

	switch (below(r, 8)) {
	case 0: return p->devro;
	case 1: return p->null;
	case 2: return p->efd;
	case 3: return p->ctl;
	case 4: return p->dmabuf;
	case 5: return odd[below(r, sizeof(odd) / sizeof(odd[0]))];
	default: return p->dev;
	}
}

/* ---- the oracle ------------------------------------------------------------ */

/* Errnos each ioctl may answer (uapi + what the calls it makes return). */
static bool errno_ok(unsigned long cmd, int e)
{
	switch (e) {
	case EPROTO: case EINVAL: case EFAULT: case EPERM:
		return true;	/* common to all */
	}
	switch (cmd) {
	case FXBLK_PEER_IOC_PROVIDERS:
		return e == ENOMEM;
	case FXBLK_PEER_IOC_REGISTER:
		return e == ENODEV || e == ENOMEM || e == EBADF ||
		       e == ENOSPC || e == EAGAIN || e == EOPNOTSUPP ||
		       e == EINTR;
	case FXBLK_PEER_IOC_DEREGISTER:
	case FXBLK_PEER_IOC_QUERY:
		return e == ENOENT;
	case FXBLK_PEER_IOC_RW:
		return e == ENOENT || e == EREMOTEIO || e == ENXIO ||
		       e == ENOTBLK || e == EBADF || e == ENOSPC ||
		       e == EROFS || e == EAGAIN || e == ENOMEM ||
		       e == EBUSY || e == ETXTBSY || e == EINTR;
	case FXBLK_PEER_IOC_REAP:
		return e == ENOMEM || e == EINTR;
	}
	return e == ENOTTY;
}

static const char *cmd_name(unsigned long cmd)
{
	switch (cmd) {
	case FXBLK_PEER_IOC_PROVIDERS: return "PROVIDERS";
	case FXBLK_PEER_IOC_REGISTER: return "REGISTER";
	case FXBLK_PEER_IOC_DEREGISTER: return "DEREGISTER";
	case FXBLK_PEER_IOC_RW: return "RW";
	case FXBLK_PEER_IOC_REAP: return "REAP";
	case FXBLK_PEER_IOC_QUERY: return "QUERY";
	}
	return "unknown";
}

/* One ioctl, its errno checked. Returns 0 or the errno. */
static int call(struct proc *p, int fd, unsigned long cmd, void *arg)
{
	int ret = ioctl(fd, cmd, arg), e = ret < 0 ? errno : 0;

	atomic_fetch_add(&p->calls, 1);
	if (!ret) {
		atomic_fetch_add(&p->ok, 1);
		return 0;
	}
	if (!errno_ok(cmd, e))
		die("%s (cmd 0x%lx) answered %s (%d), which it does not document",
		    cmd_name(cmd), cmd, strerror(e), e);
	return e;
}

static bool zero64(const __u64 *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i])
			return false;
	return true;
}

/* What the uapi says of a REGISTER's input, short of the memory itself. */
static bool register_valid(const struct fxblk_peer_register *a)
{
	bool dmabuf = a->flags & FXBLK_PEER_REG_DMABUF;
	uint64_t start = dmabuf ? a->offset : a->addr;

	if (a->abi != FXBLK_PEER_ABI || a->reserved0 ||
	    !zero64(a->reserved, 4) || a->handle || a->page_size ||
	    a->out_flags || (a->flags & ~FXBLK_PEER_REG_ALL) ||
	    a->provider > FXBLK_PEER_PROV_MAX)
		return false;
	if (dmabuf ? a->addr || a->dmabuf_fd < 0 : a->offset || a->dmabuf_fd)
		return false;
	if ((a->provider == FXBLK_PEER_PROV_DMABUF) != dmabuf &&
	    a->provider != FXBLK_PEER_PROV_AUTO)
		return false;
	return a->len && !(a->len % FXBLK_PEER_ALIGN) &&
	       !(start % FXBLK_PEER_ALIGN) && start + a->len > start;
}

static bool rw_valid(const struct fxblk_peer_rw *a)
{
	bool async = a->flags & FXBLK_PEER_RW_ASYNC;

	if (a->abi != FXBLK_PEER_ABI || a->reserved0 || !zero64(a->reserved, 2) ||
	    (a->flags & ~FXBLK_PEER_RW_ALL) || a->op > FXBLK_PEER_OP_WRITE)
		return false;
	if (!async && (a->eventfd != -1 || a->user_data))
		return false;
	if (a->eventfd < -1 || !a->len || a->len > FXBLK_PEER_MAX_RW)
		return false;
	return !((a->buf_off | a->dev_off | a->len) % 512) &&
	       a->dev_off + a->len > a->dev_off &&
	       a->dev_off + a->len <= dev_size;
}

/*
 * No write of the fuzz lands in DEV's checked first bytes or in another
 * thread's slot: whatever a write would hit there is moved into the chaos
 * range (or, for @own, may stay in the caller's own slot).
 */
static void guard_write(struct fxblk_peer_rw *a, uint64_t own)
{
	uint64_t end;

	if (a->op != FXBLK_PEER_OP_WRITE)
		return;
	end = a->dev_off + a->len;
	if (end < a->dev_off || a->dev_off >= chaos_off)
		return;
	if (own && a->dev_off >= own && end <= own + SLOT_LEN)
		return;
	a->dev_off = chaos_off + (a->dev_off % (chaos_len / 2)) / 512 * 512;
}

static void check_providers_reply(const struct fxblk_peer_providers *a)
{
	unsigned int i;

	if (a->count != FXBLK_PEER_PROV_MAX)
		die("PROVIDERS: count %u, expected %u", a->count,
		    FXBLK_PEER_PROV_MAX);
	for (i = 0; i < a->count; i++)
		if (a->p[i].id != i + 1 || !memchr(a->p[i].name, 0,
						   sizeof(a->p[i].name)) ||
		    !memchr(a->p[i].reason, 0, sizeof(a->p[i].reason)))
			die("PROVIDERS: entry %u malformed (id %u)", i,
			    a->p[i].id);
}

/* ---- structured calls ------------------------------------------------- */

static void op_providers(struct worker *w)
{
	struct fxblk_peer_providers a;
	uint32_t count = 0;

	memset(&a, 0, sizeof(a));
	a.abi = FXBLK_PEER_ABI;
	if (chance(&w->r, 20))
		count = chance(&w->r, 50) ? 1 + below(&w->r, 9) :
					    (uint32_t)pick_u64(&w->r);
	a.count = count;
	if (chance(&w->r, 10))
		a.reserved[below(&w->r, 2)] = pick_u64(&w->r);
	if (chance(&w->r, 5))
		a.abi = (uint32_t)pick_u64(&w->r);
	if (call(w->p, w->p->ctl, FXBLK_PEER_IOC_PROVIDERS, &a))
		return;
	if (count || a.abi != FXBLK_PEER_ABI || !zero64(a.reserved, 2))
		die("PROVIDERS with count %u, abi %u, reserved %#llx/%#llx: accepted (count %u out)",
		    count, a.abi, (unsigned long long)a.reserved[0],
		    (unsigned long long)a.reserved[1], a.count);
	check_providers_reply(&a);
}

/* An address range to register: mostly own memory, sometimes not. */
static void pick_range(struct worker *w, uint64_t *addr, uint64_t *len,
		       uint32_t *flags)
{
	struct rng *r = &w->r;
	void *m;

	*len = (1 + below(r, 64)) * 4096;
	*addr = (uintptr_t)w->pool + below(r, POOL_LEN / 4096 - 64) * 4096;
	switch (below(r, 12)) {
	case 0: {	/* registered, then unmapped: the pin holds the pages */
		m = mmap(NULL, *len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (m == MAP_FAILED)
			die("mmap: %s", strerror(errno));
		*addr = (uintptr_t)m;
		*flags |= 1U << 31;	/* munmap after the call */
		break;
	}
	case 1:		/* PROT_NONE */
	case 2:		/* read-only: writable pins fail, READONLY ones work */
		m = mmap(NULL, *len, below(r, 2) ? PROT_READ : PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			die("mmap: %s", strerror(errno));
		*addr = (uintptr_t)m;
		*flags |= 1U << 31;
		break;
	case 3:		/* something huge at a real address (root: no limit) */
		*len = 1ULL << (30 + below(r, 12));
		break;
	case 4:
		*addr = pick_u64(r);
		*len = pick_u64(r);
		break;
	}
}

static void op_register(struct worker *w)
{
	struct rng *r = &w->r;
	struct fxblk_peer_register a;
	uint64_t addr, len;
	uint32_t extra = 0;
	bool mutate = chance(r, 25);
	int e;

	memset(&a, 0, sizeof(a));
	a.abi = FXBLK_PEER_ABI;
	if (w->p->dmabuf >= 0 && chance(r, 15)) {
		a.flags = FXBLK_PEER_REG_DMABUF;
		a.dmabuf_fd = chance(r, 80) ? w->p->dmabuf : some_fd(w->p, r);
		a.offset = below(r, 300) * 4096;
		a.len = (1 + below(r, 256)) * 4096;
		a.provider = chance(r, 50) ? FXBLK_PEER_PROV_DMABUF : 0;
	} else {
		pick_range(w, &addr, &len, &extra);
		a.addr = addr;
		a.len = len;
		a.provider = chance(r, 70) ? 0 : below(r, 6);
		if (chance(r, 20))
			a.flags |= FXBLK_PEER_REG_READONLY;
	}
	if (mutate) {
		switch (below(r, 10)) {
		case 0: a.abi = (uint32_t)pick_u64(r); break;
		case 1: a.reserved0 = (uint32_t)pick_u64(r) | 1; break;
		case 2: a.reserved[below(r, 4)] = pick_u64(r) | 1; break;
		case 3: a.handle = pick_u64(r) | 1; break;	/* out field */
		case 4: a.page_size = pick_u64(r) | 1; break;	/* out field */
		case 5: a.out_flags = (uint32_t)pick_u64(r) | 1; break;
		case 6: a.flags = (uint32_t)pick_u64(r); break;
		case 7: a.provider = (uint32_t)pick_u64(r); break;
		case 8: a.dmabuf_fd = some_fd(w->p, r); break;
		default: a.offset = pick_u64(r); break;
		}
	}
	{
		struct fxblk_peer_register in = a;

		e = call(w->p, w->p->ctl, FXBLK_PEER_IOC_REGISTER, &a);
		if (!e && !register_valid(&in))
			die("REGISTER of invalid input accepted (abi %u flags %#x provider %u addr %#llx offset %#llx len %#llx handle-in %#llx)",
			    in.abi, in.flags, in.provider,
			    (unsigned long long)in.addr,
			    (unsigned long long)in.offset,
			    (unsigned long long)in.len,
			    (unsigned long long)in.handle);
	}
	if (!e) {
		if (!a.handle || a.handle > 65536 || !a.provider ||
		    a.provider > FXBLK_PEER_PROV_MAX || !a.page_size ||
		    !memchr(a.reason, 0, sizeof(a.reason)))
			die("REGISTER reply: handle %llu provider %u page_size %llu",
			    (unsigned long long)a.handle, a.provider,
			    (unsigned long long)a.page_size);
		remember(w->p, r, a.handle);
	}
	if (extra & (1U << 31))
		munmap((void *)(uintptr_t)addr, len);
}

static void op_deregister(struct worker *w)
{
	struct fxblk_peer_deregister a = { .abi = FXBLK_PEER_ABI };

	a.handle = some_handle(w->p, &w->r);
	if (chance(&w->r, 10))
		a.reserved[below(&w->r, 2)] = pick_u64(&w->r) | 1;
	if (chance(&w->r, 5))
		a.abi = (uint32_t)pick_u64(&w->r);
	if (!call(w->p, w->p->ctl, FXBLK_PEER_IOC_DEREGISTER, &a) &&
	    (a.abi != FXBLK_PEER_ABI || !zero64(a.reserved, 2)))
		die("DEREGISTER with a bad abi or reserved field accepted");
}

static void op_query(struct worker *w)
{
	struct fxblk_peer_query a;
	uint32_t res_in;

	memset(&a, 0, sizeof(a));
	a.abi = FXBLK_PEER_ABI;

	a.handle = some_handle(w->p, &w->r);
	if (chance(&w->r, 10))	/* out fields are not read: no error */
		a.state = a.inflight = (uint32_t)pick_u64(&w->r);
	if (chance(&w->r, 5))
		a.reserved0 = 1;
	res_in = a.reserved0;
	if (call(w->p, w->p->ctl, FXBLK_PEER_IOC_QUERY, &a))
		return;
	if (res_in)
		die("QUERY with reserved0 set accepted");
	if (a.reserved0 || a.state > FXBLK_PEER_STATE_REVOKED || !a.provider ||
	    a.provider > FXBLK_PEER_PROV_MAX || !memchr(a.reason, 0,
							sizeof(a.reason)) ||
	    (a.pinned_bytes && a.pinned_bytes != a.len))
		die("QUERY reply: state %u provider %u pinned %llu len %llu",
		    a.state, a.provider, (unsigned long long)a.pinned_bytes,
		    (unsigned long long)a.len);
}

static void op_reap(struct worker *w)
{
	struct fxblk_peer_reap a;
	uint32_t max;
	unsigned int i;

	memset(&a, 0, sizeof(a));
	a.abi = FXBLK_PEER_ABI;
	a.max = max = chance(&w->r, 90) ? 1 + below(&w->r, FXBLK_PEER_REAP_MAX) :
					(uint32_t)pick_u64(&w->r);
	if (chance(&w->r, 30))
		a.flags = FXBLK_PEER_REAP_WAIT;
	if (chance(&w->r, 10))
		a.count = (uint32_t)pick_u64(&w->r);
	if (chance(&w->r, 5))
		a.flags = (uint32_t)pick_u64(&w->r);
	{
		uint32_t cin = a.count, fin = a.flags;

		if (call(w->p, w->p->ctl, FXBLK_PEER_IOC_REAP, &a))
			return;
		if (cin || fin & ~FXBLK_PEER_REAP_ALL || !max ||
		    max > FXBLK_PEER_REAP_MAX)
			die("REAP with count %u flags %#x max %u accepted",
			    cin, fin, max);
	}
	if (a.count > max)
		die("REAP: %u completions for max %u", a.count, max);
	/* nothing here fails an I/O: the members are healthy, a revoke
	 * lets in-flight I/O finish */
	for (i = 0; i < a.count; i++) {
		int64_t res = a.c[i].result;

		if (res <= 0 || res > (int64_t)FXBLK_PEER_MAX_RW || res % 512)
			die("REAP: completion %#llx result %lld%s%s",
			    (unsigned long long)a.c[i].user_data,
			    (long long)res, res < 0 ? " " : "",
			    res < 0 ? strerror((int)-res) : "");
	}
}

static void op_rw(struct worker *w)
{
	struct rng *r = &w->r;
	struct fxblk_peer_rw a;
	int e;

	memset(&a, 0, sizeof(a));
	a.abi = FXBLK_PEER_ABI;
	a.op = below(r, 2);
	a.fd = chance(r, 85) ? w->p->dev : some_fd(w->p, r);
	a.handle = some_handle(w->p, r);
	a.len = (1 + below(r, 32)) * 4096;
	a.buf_off = below(r, 16) * 4096;
	a.dev_off = chaos_off + below(r, (chaos_len - MiB) / 4096) * 4096;
	a.eventfd = -1;
	if (chance(r, 40)) {
		a.flags = FXBLK_PEER_RW_ASYNC;
		a.eventfd = chance(r, 50) ? w->p->efd : -1;
		a.user_data = rnd(r);
	}
	if (chance(r, 30)) {
		switch (below(r, 12)) {
		case 0: a.abi = (uint32_t)pick_u64(r); break;
		case 1: a.op = (uint32_t)pick_u64(r); break;
		case 2: a.flags = (uint32_t)pick_u64(r); break;
		case 3: a.buf_off = pick_u64(r); break;
		case 4: a.dev_off = pick_u64(r); break;
		case 5: a.len = pick_u64(r); break;
		case 6: a.eventfd = some_fd(w->p, r); break;
		case 7: a.reserved0 = (uint32_t)pick_u64(r) | 1; break;
		case 8: a.reserved[below(r, 2)] = pick_u64(r) | 1; break;
		case 9: a.user_data = pick_u64(r) | 1; break;
		case 10: a.dev_off = dev_size - a.len + 512 * below(r, 3); break;
		default: a.fd = some_fd(w->p, r); break;
		}
	}
	guard_write(&a, 0);
	{
		struct fxblk_peer_rw in = a;

		e = call(w->p, w->p->ctl, FXBLK_PEER_IOC_RW, &a);
		if (e == ENXIO)
			atomic_fetch_add(&w->p->revoked, 1);
		if (!e && !rw_valid(&in) && in.fd == w->p->dev)
			die("RW of invalid input accepted (op %u flags %#x eventfd %d buf_off %#llx dev_off %#llx len %#llx)",
			    in.op, in.flags, in.eventfd,
			    (unsigned long long)in.buf_off,
			    (unsigned long long)in.dev_off,
			    (unsigned long long)in.len);
		if (!e && in.fd != w->p->dev && !(in.fd == w->p->devro &&
						  in.op == FXBLK_PEER_OP_READ))
			die("RW on fd %d (not DEV open for op %u) accepted",
			    in.fd, in.op);
	}
}

/* Random bytes to a random command of the family (or any other). */
static void op_random(struct worker *w)
{
	struct rng *r = &w->r;
	union {
		uint64_t q[512];
		uint32_t abi;
		struct fxblk_peer_rw rw;
	} buf;
	unsigned long cmd;
	unsigned int nr = below(r, 10), i;
	void *arg = &buf;

	for (i = 0; i < 512; i++)
		buf.q[i] = chance(r, 50) ? 0 : rnd(r);
	if (chance(r, 50))
		buf.abi = FXBLK_PEER_ABI;
	switch (below(r, 4)) {
	case 0:
		cmd = _IOC(below(r, 4), FXBLK_PEER_IOC_MAGIC, nr, below(r, 2048));
		break;
	case 1:
		cmd = (unsigned long)rnd(r) & 0xffffffffUL;
		break;
	default: {
		static const unsigned long cmds[] = {
			FXBLK_PEER_IOC_PROVIDERS, FXBLK_PEER_IOC_REGISTER,
			FXBLK_PEER_IOC_DEREGISTER, FXBLK_PEER_IOC_RW,
			FXBLK_PEER_IOC_REAP, FXBLK_PEER_IOC_QUERY,
		};

		cmd = cmds[below(r, 6)];
		break;
	}
	}
	if (chance(r, 10))
		arg = chance(r, 50) ? NULL : (void *)(uintptr_t)pick_u64(r);
	if (cmd == FXBLK_PEER_IOC_RW && arg == &buf)
		guard_write(&buf.rw, 0);
	/* what a valid random RW may hit is guarded; REGISTER pins own memory */
	call(w->p, w->p->ctl, cmd, arg);
}

/* ---- a thread's own data check ------------------------------------------ */

static void data_reg(struct worker *w, uint64_t *h, void *buf)
{
	struct fxblk_peer_register a = { .abi = FXBLK_PEER_ABI };

	a.addr = (uintptr_t)buf;
	a.len = SLOT_LEN;
	*h = 0;
	if (!call(w->p, w->ctl, FXBLK_PEER_IOC_REGISTER, &a))
		*h = a.handle;
}

static int data_rw(struct worker *w, uint64_t h, uint32_t op)
{
	struct fxblk_peer_rw a = {
		.abi = FXBLK_PEER_ABI, .op = op, .fd = w->p->dev, .handle = h,
		.dev_off = w->slot, .len = SLOT_LEN, .eventfd = -1,
	};

	return call(w->p, w->ctl, FXBLK_PEER_IOC_RW, &a);
}

static void data_drop(struct worker *w, uint64_t *h)
{
	struct fxblk_peer_deregister d = { .abi = FXBLK_PEER_ABI,
					   .handle = *h };

	if (*h && call(w->p, w->ctl, FXBLK_PEER_IOC_DEREGISTER, &d))
		die("DEREGISTER of an own handle: %s", strerror(errno));
	*h = 0;
}

static void fill(unsigned char *p, size_t n, uint64_t tag)
{
	size_t i;

	for (i = 0; i < n; i += 8)
		memcpy(p + i, &(uint64_t){ tag ^ (i * 0x100000001ULL) }, 8);
}

/*
 * Write a new pattern to the slot through RW, read it back through RW and
 * O_DIRECT. A revoked handle (ENXIO: the hook) is registered anew.
 */
static void op_data(struct worker *w, int devd)
{
	int e;

	if (!w->wh)
		data_reg(w, &w->wh, w->wbuf);
	if (!w->rh)
		data_reg(w, &w->rh, w->rbuf);
	if (!w->wh || !w->rh)
		return;	/* ENOMEM: the unprivileged one's RLIMIT_MEMLOCK */
	fill(w->wbuf, SLOT_LEN, ((uint64_t)w->id << 48) | ++w->gen);
	e = data_rw(w, w->wh, FXBLK_PEER_OP_WRITE);
	if (e == ENXIO) {
		data_drop(w, &w->wh);
		return;
	}
	if (e)
		die("RW write of the own slot: %s", strerror(e));
	memcpy(w->chk, w->wbuf, SLOT_LEN);
	w->slot_known = true;
	memset(w->rbuf, 0, SLOT_LEN);
	e = data_rw(w, w->rh, FXBLK_PEER_OP_READ);
	if (e == ENXIO) {
		data_drop(w, &w->rh);
	} else if (e) {
		die("RW read of the own slot: %s", strerror(e));
	} else if (memcmp(w->rbuf, w->chk, SLOT_LEN)) {
		die("RW read of the own slot (%#llx) differs from its last RW write",
		    (unsigned long long)w->slot);
	}
	if (pread(devd, w->rbuf, SLOT_LEN, w->slot) != (ssize_t)SLOT_LEN)
		die("O_DIRECT pread: %s", strerror(errno));
	if (memcmp(w->rbuf, w->chk, SLOT_LEN))
		die("O_DIRECT read of the own slot (%#llx) differs from its last RW write",
		    (unsigned long long)w->slot);
	w->checks++;
}

/* ---- workers ----------------------------------------------------------------- */

static bool time_left(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec < t_end.tv_sec ||
	       (now.tv_sec == t_end.tv_sec && now.tv_nsec < t_end.tv_nsec);
}

static void *alloc_pages(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		die("mmap %zu: %s", n, strerror(errno));
	return p;
}

/*
 * Memory at a low address (8 GiB + @slot * 64 MiB), so that huge lengths
 * after it are still user address space and reach the kernel's allocation
 * of the page array (at 0x7f... they end past TASK_SIZE: EFAULT first).
 */
static void *low_pages(size_t n, unsigned int slot)
{
	void *want = (void *)((8ULL << 30) + (uint64_t)slot * (64ULL << 20));
	void *p = mmap(want, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE |
		       MAP_FIXED_NOREPLACE, -1, 0);

	if (p == MAP_FAILED)
		die("mmap %zu at %p: %s", n, want, strerror(errno));
	return p;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	while (time_left()) {
		switch (below(&w->r, 20)) {
		case 0: op_providers(w); break;
		case 1: case 2: case 3: case 4: op_register(w); break;
		case 5: case 6: op_deregister(w); break;
		case 7: case 8: case 9: case 10: case 11: op_rw(w); break;
		case 12: case 13: op_reap(w); break;
		case 14: case 15: op_query(w); break;
		case 16: op_random(w); break;
		default: op_data(w, w->p->devd); break;
		}
	}
	return NULL;
}

/* A 1 MiB udmabuf, or -1 where the kernel has none (6.1: SKIP). */
static int make_udmabuf(size_t len)
{
	const char *what;
	int fd = peer_make_udmabuf(len, &what);

	if (fd == -ENOENT)
		return -1;
	if (fd < 0)
		die("udmabuf: %s: %s", what, strerror(-fd));
	return fd;
}

static void drop_privileges(void)
{
	gid_t g = 65534;

	if (setgroups(1, &g) || setresgid(g, g, g) || setresuid(65534, 65534,
								 65534) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		die("dropping to uid 65534: %s", strerror(errno));
	if (!geteuid() || open(REVOKE_HOOK, O_WRONLY) >= 0)
		die("still privileged after dropping to uid 65534");
}

static void open_proc_fds(struct proc *p)
{
	p->ctl = open(FXBLK_PEER_DEVICE, O_RDWR | O_CLOEXEC);
	p->null = open("/dev/null", O_RDWR | O_CLOEXEC);
	p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->ctl < 0 || p->null < 0 || p->efd < 0)
		die("open %s: %s", FXBLK_PEER_DEVICE, strerror(errno));
}

/* The revoke hook at random times (root process only). */
static void *revoker_main(void *unused)
{
	struct rng r;
	int n = 0;

	(void)unused;
	rng_init(&r, 0xdead);
	while (time_left()) {
		int fd = open(REVOKE_HOOK, O_WRONLY);

		if (fd < 0)
			die("open %s: %s", REVOKE_HOOK, strerror(errno));
		if (write(fd, "1\n", 2) != 2)
			die("write %s: %s", REVOKE_HOOK, strerror(errno));
		close(fd);
		n++;
		usleep(20000 + below(&r, 200000));
	}
	printf("%s: revoke hook fired %d times\n", role, n);
	return NULL;
}

/* A process of T threads on one context; @root: else unprivileged. */
static int run_proc(bool root, int base_id, int devrw, int devro,
		    int dmabuf)
{
	struct worker w[MAX_THREADS];
	pthread_t t[MAX_THREADS], rv;
	struct proc p = { .root = root, .dev = devrw, .devro = devro,
			  .dmabuf = dmabuf };
	int i;

	role = root ? "root" : "nobody";
	pthread_mutex_init(&p.lock, NULL);
	p.devd = open(dev_path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (p.devd < 0)
		die("open %s O_DIRECT: %s", dev_path, strerror(errno));
	if (!root)
		drop_privileges();
	open_proc_fds(&p);
	for (i = 0; i < nthreads; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].p = &p;
		w[i].id = base_id + i;
		rng_init(&w[i].r, w[i].id + 1);
		w[i].pool = low_pages(POOL_LEN, 1 + w[i].id);
		w[i].wbuf = alloc_pages(SLOT_LEN);
		w[i].rbuf = alloc_pages(SLOT_LEN);
		w[i].chk = alloc_pages(SLOT_LEN);
		w[i].slot = KEEP_LEN + (uint64_t)w[i].id * SLOT_LEN;
		w[i].ctl = open(FXBLK_PEER_DEVICE, O_RDWR | O_CLOEXEC);
		if (w[i].ctl < 0)
			die("open: %s", strerror(errno));
		if (pthread_create(&t[i], NULL, worker_main, &w[i]))
			die("pthread_create");
	}
	if (root && pthread_create(&rv, NULL, revoker_main, NULL))
		die("pthread_create");
	for (i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	if (root)
		pthread_join(rv, NULL);
	{
		unsigned int checks = 0;

		for (i = 0; i < nthreads; i++)
			checks += w[i].checks;
		printf("%s: %lu calls, %lu succeeded, %lu RWs on revoked handles, %u own-slot data checks\n",
		       role, (unsigned long)p.calls, (unsigned long)p.ok,
		       (unsigned long)p.revoked, checks);
	}
	/* exit with whatever is registered and in flight: release cleans up */
	return 0;
}

/* ---- children killed in the middle -------------------------------------- */

static int child_ctl;

/* Registers, starts I/O in two threads, says so, and waits for SIGKILL. */
static void *child_sync(void *arg)
{
	for (;;)
		ioctl(child_ctl, FXBLK_PEER_IOC_RW, arg);
	return NULL;
}

static void child_main(int n, int devrw, int ready)
{
	struct fxblk_peer_register reg = { .abi = FXBLK_PEER_ABI };
	struct fxblk_peer_rw a = { .abi = FXBLK_PEER_ABI, .fd = devrw,
				   .eventfd = -1 };
	struct fxblk_peer_rw s;
	unsigned char *buf;
	pthread_t t;
	int ctl, i;

	if (n % 2)
		drop_privileges();
	ctl = child_ctl = open(FXBLK_PEER_DEVICE, O_RDWR | O_CLOEXEC);
	buf = alloc_pages(4 * MiB);
	reg.addr = (uintptr_t)buf;
	reg.len = n % 2 ? MiB : 4 * MiB;	/* under nobody's MEMLOCK */
	if (ctl < 0 || ioctl(ctl, FXBLK_PEER_IOC_REGISTER, &reg))
		_exit(3);
	a.handle = reg.handle;
	a.flags = FXBLK_PEER_RW_ASYNC;
	for (i = 0; i < 32; i++) {
		a.op = i % 2;
		a.buf_off = (i % 8) * 64 * KiB;
		a.dev_off = chaos_off + chaos_len / 2 + (uint64_t)i * 64 * KiB;
		a.len = 64 * KiB;
		ioctl(ctl, FXBLK_PEER_IOC_RW, &a);
	}
	s = a;
	s.flags = 0;
	s.len = reg.len;
	s.buf_off = 0;
	s.op = FXBLK_PEER_OP_READ;
	pthread_create(&t, NULL, child_sync, &s);
	if (write(ready, "x", 1) != 1)
		_exit(4);
	for (;;) {	/* register and deregister until killed */
		struct fxblk_peer_register r2 = reg;
		struct fxblk_peer_deregister d = { .abi = FXBLK_PEER_ABI };

		r2.handle = 0;
		r2.page_size = 0;
		r2.out_flags = 0;
		r2.provider = 0;
		r2.len = 64 * KiB;
		if (!ioctl(ctl, FXBLK_PEER_IOC_REGISTER, &r2)) {
			d.handle = r2.handle;
			ioctl(ctl, FXBLK_PEER_IOC_DEREGISTER, &d);
		}
	}
}

/* A fork without exec using the parent's context: EPERM for everything. */
static void foreign_child(int ctl)
{
	struct fxblk_peer_providers p = { .abi = FXBLK_PEER_ABI };
	struct fxblk_peer_query q = { .abi = FXBLK_PEER_ABI, .handle = 1 };
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		if (!ioctl(ctl, FXBLK_PEER_IOC_PROVIDERS, &p) ||
		    errno != EPERM ||
		    !ioctl(ctl, FXBLK_PEER_IOC_QUERY, &q) || errno != EPERM)
			_exit(2);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		die("a forked child used its parent's context (status %#x)",
		    st);
}

static void kill_loop(int devrw, int ctl)
{
	struct rng r;
	int n = 0, killed_busy = 0, st;

	rng_init(&r, 0xc0ffee);
	while (time_left()) {
		int pp[2];
		pid_t pid;
		char c;

		if (pipe2(pp, O_CLOEXEC))
			die("pipe: %s", strerror(errno));
		pid = fork();
		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0) {
			close(pp[0]);
			child_main(n, devrw, pp[1]);
		}
		close(pp[1]);
		if (chance(&r, 80) && read(pp[0], &c, 1) == 1) {
			killed_busy++;
			usleep(below(&r, 30000));
		}
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		close(pp[0]);
		if (WIFEXITED(st))
			die("child %d ended on its own with status %d (its registration failed?)",
			    n, WEXITSTATUS(st));
		if (++n % 8 == 0)
			foreign_child(ctl);
		usleep(below(&r, 100000));
	}
	printf("main: %d children killed, %d of them with I/O in flight\n", n,
	       killed_busy);
}

/* ---- before and after --------------------------------------------------- */

static void providers_now(int ctl, struct fxblk_peer_providers *p)
{
	memset(p, 0, sizeof(*p));
	p->abi = FXBLK_PEER_ABI;
	if (ioctl(ctl, FXBLK_PEER_IOC_PROVIDERS, p))
		die("PROVIDERS: %s", strerror(errno));
	check_providers_reply(p);
}

/* Structured cases with one right answer, before the noise. */
static void preflight(int ctl)
{
	static const uint32_t counts[] = { 1, 4, 5, 8, 64, 0xffffffffu };
	struct fxblk_peer_providers p;
	struct fxblk_peer_reap rp;
	struct fxblk_peer_register rg;
	unsigned int i;

	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		memset(&p, 0, sizeof(p));
		p.abi = FXBLK_PEER_ABI;
		p.count = counts[i];
		if (!ioctl(ctl, FXBLK_PEER_IOC_PROVIDERS, &p))
			die("PROVIDERS with count %u in: accepted, count %u out (the caller's count indexed the array)",
			    counts[i], p.count);
		if (errno != EINVAL)
			die("PROVIDERS with count %u in: %s, expected EINVAL",
			    counts[i], strerror(errno));
	}
	memset(&rp, 0, sizeof(rp));
	rp.abi = FXBLK_PEER_ABI;
	rp.max = 1;
	rp.count = 5;
	if (!ioctl(ctl, FXBLK_PEER_IOC_REAP, &rp) || errno != EINVAL)
		die("REAP with count 5 in: not EINVAL");
	memset(&rg, 0, sizeof(rg));
	rg.abi = FXBLK_PEER_ABI;
	rg.addr = (uintptr_t)low_pages(8192, 0);
	rg.len = 8192;
	rg.handle = 7;
	if (!ioctl(ctl, FXBLK_PEER_IOC_REGISTER, &rg) || errno != EINVAL)
		die("REGISTER with an input handle: not EINVAL");
	/* as root: a length far beyond RAM at a real address */
	rg.handle = 0;
	rg.len = 1ULL << 40;
	if (!ioctl(ctl, FXBLK_PEER_IOC_REGISTER, &rg))
		die("REGISTER of 1 TiB accepted");
	if (errno != ENOMEM)
		die("REGISTER of 1 TiB at %#llx: %s, expected ENOMEM",
		    (unsigned long long)rg.addr, strerror(errno));
	printf("main: preflight: PROVIDERS/REAP/REGISTER out fields and a 1 TiB registration refused\n");
}

static void keep_pattern(unsigned char *p)
{
	fill(p, KEEP_LEN, 0x4b454550ULL);	/* "KEEP" */
}

static void final_checks(int ctl, int devrw)
{
	struct fxblk_peer_providers p;
	unsigned char *keep = alloc_pages(KEEP_LEN), *got = alloc_pages(KEEP_LEN);
	struct fxblk_peer_register rg = { .abi = FXBLK_PEER_ABI };
	struct fxblk_peer_rw a = { .abi = FXBLK_PEER_ABI, .fd = devrw,
				   .eventfd = -1, .len = MiB,
				   .op = FXBLK_PEER_OP_WRITE };
	struct fxblk_peer_deregister d = { .abi = FXBLK_PEER_ABI };
	int devd = open(dev_path, O_RDONLY | O_DIRECT | O_CLOEXEC), i, left;

	/* the revoke work and the children's release finish on their own */
	for (i = 0; i < 1000; i++) {
		providers_now(ctl, &p);
		for (left = 0; left < (int)p.count; left++)
			if (p.p[left].pinned_bytes || p.p[left].registrations)
				break;
		if (left == (int)p.count)
			break;
		usleep(10000);
	}
	for (i = 0; i < (int)p.count; i++)
		if (p.p[i].pinned_bytes || p.p[i].registrations)
			die("after the run: provider %s holds %llu bytes in %llu registrations",
			    p.p[i].name,
			    (unsigned long long)p.p[i].pinned_bytes,
			    (unsigned long long)p.p[i].registrations);
	printf("main: every provider back to 0 pinned bytes, 0 registrations\n");

	keep_pattern(keep);
	if (devd < 0 || pread(devd, got, KEEP_LEN, 0) != (ssize_t)KEEP_LEN)
		die("O_DIRECT read of the kept range: %s", strerror(errno));
	if (memcmp(keep, got, KEEP_LEN))
		die("DEV's first %llu bytes changed: a write went where none was sent",
		    (unsigned long long)KEEP_LEN);
	printf("main: the untouched first 4 MiB of DEV are intact\n");

	/* one more round trip: RW write, then O_DIRECT and buffered reads */
	fill(got, MiB, 0x46494e4cULL);
	rg.addr = (uintptr_t)got;
	rg.len = MiB;
	if (ioctl(ctl, FXBLK_PEER_IOC_REGISTER, &rg))
		die("REGISTER after the run: %s", strerror(errno));
	a.handle = rg.handle;
	a.dev_off = chaos_off;
	if (pread(devrw, keep, MiB, chaos_off) != (ssize_t)MiB)	/* cache it */
		die("buffered pread: %s", strerror(errno));
	if (ioctl(ctl, FXBLK_PEER_IOC_RW, &a))
		die("RW after the run: %s", strerror(errno));
	if (pread(devd, keep, MiB, chaos_off) != (ssize_t)MiB ||
	    memcmp(keep, got, MiB))
		die("RW write after the run: O_DIRECT reads other data");
	if (pread(devrw, keep, MiB, chaos_off) != (ssize_t)MiB ||
	    memcmp(keep, got, MiB))
		die("RW write after the run: a buffered read sees stale data");
	d.handle = rg.handle;
	if (ioctl(ctl, FXBLK_PEER_IOC_DEREGISTER, &d))
		die("DEREGISTER after the run: %s", strerror(errno));
	printf("main: a last RW write reads back through O_DIRECT and the page cache\n");
	close(devd);
}

static void usage(void)
{
	fprintf(stderr, "usage: peer-fuzz DEV [--seed N] [--seconds S] [--threads T] [--no-kill]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int i, devrw, devro, dmabuf, ctl, st, bad = 0;
	pid_t kids[2];
	bool have_seed = false;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			seed = strtoull(argv[++i], NULL, 0);
			have_seed = true;
		} else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			nthreads = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--no-kill")) {
			kill_children = false;
		} else if (argv[i][0] != '-' && !dev_path) {
			dev_path = argv[i];
		} else {
			usage();
		}
	}
	if (!dev_path || seconds < 1 || nthreads < 1 || nthreads > MAX_THREADS)
		usage();
	if (!have_seed) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_sec * 1000003ULL ^ (uint64_t)ts.tv_nsec ^
		       (uint64_t)getpid() << 32;
	}
	printf("peer-fuzz: seed %" PRIu64 " (replay: peer-fuzz %s --seed %" PRIu64
	       " --seconds %d --threads %d)\n", seed, dev_path, seed, seconds,
	       nthreads);
	if (geteuid())
		die("run me as root (I start an unprivileged process myself)");

	devrw = open(dev_path, O_RDWR | O_CLOEXEC);
	devro = open(dev_path, O_RDONLY | O_CLOEXEC);
	ctl = open(FXBLK_PEER_DEVICE, O_RDWR | O_CLOEXEC);
	if (devrw < 0 || devro < 0 || ctl < 0)
		die("open %s / %s: %s", dev_path, FXBLK_PEER_DEVICE,
		    strerror(errno));
	dev_size = lseek(devrw, 0, SEEK_END);
	chaos_off = KEEP_LEN + 2 * MAX_THREADS * SLOT_LEN;
	if (dev_size < chaos_off + 64 * MiB)
		die("%s is %llu bytes; needs at least %llu", dev_path,
		    (unsigned long long)dev_size,
		    (unsigned long long)(chaos_off + 64 * MiB));
	chaos_len = (dev_size - chaos_off) / MiB * MiB;
	{
		unsigned char *keep = alloc_pages(KEEP_LEN);
		int devd = open(dev_path, O_RDWR | O_DIRECT | O_CLOEXEC);

		keep_pattern(keep);
		if (devd < 0 || pwrite(devd, keep, KEEP_LEN, 0) != KEEP_LEN)
			die("O_DIRECT write of the kept range: %s",
			    strerror(errno));
		close(devd);
		munmap(keep, KEEP_LEN);
	}
	preflight(ctl);
	dmabuf = make_udmabuf(MiB);
	if (dmabuf < 0)
		printf("SKIP: dma-buf registrations: no /dev/udmabuf in this kernel\n");

	clock_gettime(CLOCK_MONOTONIC, &t_end);
	t_end.tv_sec += seconds;
	for (i = 0; i < 2; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			die("fork: %s", strerror(errno));
		if (kids[i] == 0)
			_exit(run_proc(i == 0, i * MAX_THREADS, devrw, devro,
				       dmabuf));
	}
	if (kill_children)
		kill_loop(devrw, ctl);
	for (i = 0; i < 2; i++) {
		if (waitpid(kids[i], &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st)) {
			printf("FAIL: the %s process ended with status %#x\n",
			       i ? "unprivileged" : "root", st);
			bad = 1;
		}
	}
	if (bad)
		die("a worker process failed (above)");
	if (dmabuf >= 0)
		close(dmabuf);
	final_checks(ctl, devrw);
	close(ctl);
	printf("peer-fuzz: all checks held (seed %" PRIu64 ")\n", seed);
	return 0;
}
