// SPDX-License-Identifier: GPL-2.0
/*
 * fxblk-p2p-dio: O_DIRECT between PCI P2PDMA memory and a block device, the
 * "direct" path with no CPU copy of the data moved (lab helper, issue 8).
 *
 *   fxblk-p2p-dio ALLOCATE DEV OFFSET LENGTH [expect=ERRNO] [seed=N]
 *
 * ALLOCATE is /sys/bus/pci/devices/<bdf>/p2pmem/allocate of a device that
 * published p2pmem (in the lab: the CMB of an emulated NVMe device); its
 * mmap gives user space P2PDMA pages, which stand in for GPU VRAM exposed as
 * P2PDMA pages. OFFSET and LENGTH are bytes, multiples of 4096.
 *
 * Without expect=: a pattern is made in host memory and copied into the
 * P2PDMA buffer (preparing the source, the only CPU copy); then
 *   1. pwrite(DEV, p2pmem, LENGTH, OFFSET) with O_DIRECT (device memory ->
 *      disk), and an O_DIRECT pread into host memory must return the pattern;
 *   2. the P2PDMA buffer is cleared, pread(DEV, p2pmem, ...) with O_DIRECT
 *      (disk -> device memory) must bring the pattern back; checked by
 *      reading the buffer with the CPU;
 *   3. the reverse pattern is written from host memory with O_DIRECT and
 *      read into p2pmem: a second read that must see new data.
 * Prints "RESULT p2p-dio dev=DEV bytes=N direct_write=N direct_read=N" with
 * the bytes moved to or from P2PDMA memory, exit 0.
 * With expect=ERRNO (e.g. expect=EREMOTEIO): both the O_DIRECT write from
 * and the read into the P2PDMA buffer must fail with that errno; exit 0 if
 * they did, 1 otherwise.
 * With bench=REPS [total=BYTES] (make bench's P2PDMA row): per repeat, TOTAL
 * bytes (default 64 MiB) from OFFSET are read with O_DIRECT in LENGTH pieces
 * into the P2PDMA buffer and into a host buffer, the order alternating; one
 * line per run: BENCHP2P {"rep":R,"mem":"p2pdma"|"host","bytes":N,
 * "seconds":S,"mibs":M}. Exit 2: usage or set-up errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int fail(const char *what)
{
	fprintf(stderr, "fxblk-p2p-dio: %s: %s\n", what, strerror(errno));
	return 2;
}

static int errno_by_name(const char *name)
{
	static const struct { const char *n; int e; } t[] = {
		{ "EREMOTEIO", EREMOTEIO }, { "EIO", EIO }, { "EINVAL", EINVAL },
		{ "EOPNOTSUPP", EOPNOTSUPP }, { "EFAULT", EFAULT },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(t[i].n, name))
			return t[i].e;
	return 0;
}

static void pattern(unsigned char *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (unsigned char)x;
	}
}

/* Full-length O_DIRECT transfer or -1 with errno; short counts are errors. */
static ssize_t xfer(int fd, void *buf, size_t len, off_t off, int write)
{
	ssize_t n = write ? pwrite(fd, buf, len, off) : pread(fd, buf, len, off);

	if (n >= 0 && (size_t)n != len) {
		fprintf(stderr, "fxblk-p2p-dio: short %s: %zd of %zu bytes\n",
			write ? "write" : "read", n, len);
		errno = EIO;
		return -1;
	}
	return n;
}

/* Index of the first differing byte, or -1. */
static long first_diff(const unsigned char *a, const unsigned char *b,
		       size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (a[i] != b[i])
			return (long)i;
	return -1;
}

static int expect_fail(int fd, void *p2p, size_t len, off_t off, int want)
{
	int ok = 1, w;

	for (w = 1; w >= 0; w--) {
		ssize_t n = xfer(fd, p2p, len, off, w);
		int err = n < 0 ? errno : 0;

		printf("%s from P2PDMA memory: %s\n", w ? "write" : "read",
		       n < 0 ? strerror(err) : "succeeded");
		if (err != want) {
			fprintf(stderr, "fxblk-p2p-dio: O_DIRECT %s: expected %s, got %s\n",
				w ? "pwrite" : "pread", strerror(want),
				n < 0 ? strerror(err) : "success");
			ok = 0;
		}
	}
	printf("RESULT p2p-dio expect=%s ok=%d\n", strerror(want), ok);
	return ok ? 0 : 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Timed sequential O_DIRECT reads of @total bytes into @buf, @len at a time. */
static int bench_one(int fd, void *buf, size_t len, off_t off,
		     unsigned long long total, int rep, const char *mem)
{
	unsigned long long done;
	double t0 = now(), s;

	for (done = 0; done < total; done += len)
		if (xfer(fd, buf, len, off + done, 0) < 0)
			return fail(mem);
	s = now() - t0;
	printf("BENCHP2P {\"rep\":%d,\"mem\":\"%s\",\"bytes\":%llu,\"seconds\":%.6f,\"mibs\":%.3f}\n",
	       rep, mem, total, s, s > 0 ? total / 1048576.0 / s : 0.0);
	return 0;
}

static int bench(int fd, void *p2p, size_t len, off_t off, int reps,
		 unsigned long long total)
{
	void *host;
	int r, rc = 0;

	if (posix_memalign(&host, 4096, len)) {
		errno = ENOMEM;
		return fail("host buffer");
	}
	for (r = 0; r < reps && !rc; r++) {
		void *first = r % 2 ? host : p2p, *second = r % 2 ? p2p : host;

		rc = bench_one(fd, first, len, off, total, r, first == p2p ? "p2pdma" : "host");
		if (!rc)
			rc = bench_one(fd, second, len, off, total, r,
				       second == p2p ? "p2pdma" : "host");
	}
	free(host);
	return rc;
}

int main(int argc, char **argv)
{
	unsigned char *p2p, *host, *want;
	unsigned long long off, len;
	unsigned long long total = 64ULL << 20;
	uint64_t seed = 1;
	int afd, fd, i, expect = 0, reps = 0;
	long d;

	if (argc < 5) {
		fprintf(stderr, "usage: %s ALLOCATE DEV OFFSET LENGTH [expect=ERRNO] [seed=N] [bench=REPS [total=BYTES]]\n",
			argv[0]);
		return 2;
	}
	off = strtoull(argv[3], NULL, 0);
	len = strtoull(argv[4], NULL, 0);
	for (i = 5; i < argc; i++) {
		if (!strncmp(argv[i], "expect=", 7)) {
			expect = errno_by_name(argv[i] + 7);
			if (!expect) {
				fprintf(stderr, "fxblk-p2p-dio: unknown errno name %s\n", argv[i] + 7);
				return 2;
			}
		} else if (!strncmp(argv[i], "seed=", 5)) {
			seed = strtoull(argv[i] + 5, NULL, 0);
		} else if (!strncmp(argv[i], "bench=", 6)) {
			reps = atoi(argv[i] + 6);
		} else if (!strncmp(argv[i], "total=", 6)) {
			total = strtoull(argv[i] + 6, NULL, 0);
		} else {
			fprintf(stderr, "fxblk-p2p-dio: unknown argument %s\n", argv[i]);
			return 2;
		}
	}
	if (!len || len % 4096 || off % 4096) {
		fprintf(stderr, "fxblk-p2p-dio: OFFSET and LENGTH must be multiples of 4096\n");
		return 2;
	}
	if (reps < 0 || reps > 1000 || (reps && (!total || total % len))) {
		fprintf(stderr, "fxblk-p2p-dio: bench= must be 1..1000, total= a multiple of LENGTH\n");
		return 2;
	}
	afd = open(argv[1], O_RDWR);
	if (afd < 0)
		return fail(argv[1]);
	p2p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, afd, 0);
	if (p2p == MAP_FAILED)
		return fail("mmap of p2pmem/allocate");
	fd = open(argv[2], O_RDWR | O_DIRECT);
	if (fd < 0)
		return fail(argv[2]);
	if (expect)
		return expect_fail(fd, p2p, len, off, expect);
	if (reps)
		return bench(fd, p2p, len, off, reps, total);

	if (posix_memalign((void **)&host, 4096, len) ||
	    posix_memalign((void **)&want, 4096, len)) {
		errno = ENOMEM;
		return fail("host buffers");
	}
	/* 1. device memory -> disk, checked through host memory */
	pattern(want, len, seed);
	memcpy(p2p, want, len);
	if (xfer(fd, p2p, len, off, 1) < 0)
		return fail("O_DIRECT pwrite from P2PDMA memory");
	memset(host, 0, len);
	if (xfer(fd, host, len, off, 0) < 0)
		return fail("O_DIRECT pread into host memory");
	d = first_diff(host, want, len);
	if (d >= 0) {
		fprintf(stderr, "fxblk-p2p-dio: written from P2PDMA memory, read back differs at byte %ld\n", d);
		return 1;
	}
	/* 2. disk -> device memory */
	memset(p2p, 0, len);
	if (xfer(fd, p2p, len, off, 0) < 0)
		return fail("O_DIRECT pread into P2PDMA memory");
	d = first_diff(p2p, want, len);
	if (d >= 0) {
		fprintf(stderr, "fxblk-p2p-dio: read into P2PDMA memory differs at byte %ld\n", d);
		return 1;
	}
	/* 3. new data from host memory, read into device memory */
	pattern(want, len, seed + 1);
	if (xfer(fd, want, len, off, 1) < 0)
		return fail("O_DIRECT pwrite from host memory");
	if (xfer(fd, p2p, len, off, 0) < 0)
		return fail("second O_DIRECT pread into P2PDMA memory");
	d = first_diff(p2p, want, len);
	if (d >= 0) {
		fprintf(stderr, "fxblk-p2p-dio: second read into P2PDMA memory differs at byte %ld\n", d);
		return 1;
	}
	printf("RESULT p2p-dio dev=%s offset=%llu bytes=%llu direct_write=%llu direct_read=%llu verified=1\n",
	       argv[2], off, len, len, 2 * len);
	free(host);
	free(want);
	munmap(p2p, len);
	close(fd);
	close(afd);
	return 0;
}
