/*
 * An LMCache/vLLM-style KV-cache reader on libfxio: KV blocks of 512 KiB
 * live on /dev/fxN; a batch of them is read at random block offsets into one
 * device buffer with asynchronous submit/poll, then the reader reports the
 * path the reads took, why, and the throughput.
 *
 *   fxio-kvcache-reader [-n BLOCKS] [-q DEPTH] [-b BLOCK_KIB] [-m host|emulated|hip|acl]
 *                       [-w] [-s SEED] DEVICE
 *
 * -m picks the "device" memory: host (CPU memory), emulated (CPU memory
 * treated as device memory, copied by the host engine: the staged path
 * without a GPU), hip or acl (allocated by the application with
 * hipMalloc/aclrtMalloc in a real connector; here the example needs the
 * runtime to allocate, so it only takes host and emulated). -w first writes
 * a pattern to the blocks (destroys data on DEVICE!) and then verifies what
 * it reads; exit 1 on a mismatch.
 */
#define _GNU_SOURCE
#include <fxio.h>

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *s)	/* xorshift64 */
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The byte a block holds at @i: from its offset, so a misplaced block shows. */
static unsigned char pattern(uint64_t dev_off, size_t i)
{
	return (unsigned char)((dev_off >> 12) * 131 + i * 7 + (i >> 9));
}

static int die(const char *what, long err)
{
	fprintf(stderr, "kvcache_reader: %s: %s\n", what, strerror((int)-err));
	return 1;
}

int main(int argc, char **argv)
{
	unsigned blocks = 256, depth = 16, kib = 512, flags = FXIO_BUF_EMULATED;
	int write_first = 0, opt;
	uint64_t seed = 42;

	while ((opt = getopt(argc, argv, "n:q:b:m:ws:")) != -1) {
		switch (opt) {
		case 'n': blocks = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'q': depth = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'b': kib = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'w': write_first = 1; break;
		case 's': seed = strtoull(optarg, NULL, 0) | 1; break;
		case 'm':
			if (!strcmp(optarg, "host"))
				flags = FXIO_BUF_HOST;
			else if (!strcmp(optarg, "emulated"))
				flags = FXIO_BUF_EMULATED;
			else {
				fprintf(stderr, "kvcache_reader: -m %s: this example allocates "
					"host memory only (host, emulated)\n", optarg);
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: %s [-n BLOCKS] [-q DEPTH] [-b KIB] "
				"[-m host|emulated] [-w] [-s SEED] DEVICE\n", argv[0]);
			return 2;
		}
	}
	if (optind != argc - 1 || !blocks || !depth || !kib || depth > blocks || depth > 0xffff) {
		fprintf(stderr, "kvcache_reader: need DEVICE, 0 < DEPTH <= BLOCKS\n");
		return 2;
	}
	size_t bsz = (size_t)kib << 10;
	fxio_handle_t h;
	int r = fxio_open(argv[optind], write_first ? O_RDWR : O_RDONLY, &h);
	if (r)
		return die(argv[optind], r);

	/* The KV-cache area of the connector: one buffer, one slot per
	 * in-flight block, registered once (cuFileBufRegister-style). */
	unsigned char *buf = aligned_alloc(4096, bsz * depth);
	if (!buf)
		return die("buffer", -12);
	r = fxio_buf_register(buf, bsz * depth, flags);
	if (r)
		return die("fxio_buf_register", r);

	/* Block offsets: random distinct-ish blocks of the first 1 GiB. */
	off_t span = 1L << 30;
	uint64_t s = seed;
	off_t *offs = calloc(blocks, sizeof(*offs));
	for (unsigned i = 0; i < blocks; i++)
		offs[i] = (off_t)(rnd(&s) % (uint64_t)(span / (off_t)bsz)) * (off_t)bsz;

	if (write_first) {
		for (unsigned i = 0; i < blocks; i++) {
			for (size_t j = 0; j < bsz; j++)
				buf[j] = pattern((uint64_t)offs[i], j);
			ssize_t w = fxio_write(h, buf, bsz, offs[i], 0);
			if (w != (ssize_t)bsz)
				return die("fxio_write", w < 0 ? w : -5);
		}
		printf("wrote %u blocks (path %s%s%s)\n", blocks, fxio_last_path(h),
		       *fxio_last_reason(h) ? ": " : "", fxio_last_reason(h));
	}

	double t0 = now();
	unsigned next = 0, done = 0, bad = 0;
	struct fxio_event ev[16];
	/* Fill the queue, then submit one block per completion. */
	for (; next < depth; next++) {
		int64_t id = fxio_submit_read(h, buf, bsz, offs[next], (off_t)(next * bsz),
					      (uint64_t)next << 16 | next);
		if (id < 0)
			return die("fxio_submit_read", id);
	}
	while (done < blocks) {
		int n = fxio_poll(h, ev, 16, -1);
		if (n < 0)
			return die("fxio_poll", n);
		for (int i = 0; i < n; i++) {
			/* user_data: block << 16 | the buffer slot it was read into */
			unsigned blk = (unsigned)(ev[i].user_data >> 16);
			unsigned slot = (unsigned)(ev[i].user_data & 0xffff);
			if (ev[i].result != (int64_t)bsz)
				return die("read", ev[i].result < 0 ? ev[i].result : -5);
			if (write_first)
				for (size_t j = 0; j < bsz; j++)
					if (buf[slot * bsz + j] != pattern((uint64_t)offs[blk], j)) {
						bad++;
						break;
					}
			done++;
			if (next < blocks) {
				/* the slot just consumed takes the next block */
				int64_t id = fxio_submit_read(h, buf, bsz, offs[next],
							      (off_t)(slot * bsz),
							      (uint64_t)next << 16 | slot);
				if (id < 0)
					return die("fxio_submit_read", id);
				next++;
			}
		}
	}
	double secs = now() - t0;
	struct fxio_stats st;
	fxio_get_stats(h, &st);
	printf("read %u blocks of %u KiB at queue depth %u in %.3f s: %.1f MiB/s\n", blocks, kib,
	       depth, secs, (double)blocks * (double)kib / 1024.0 / secs);
	printf("path %s; direct %" PRIu64 " staged %" PRIu64 " posix %" PRIu64
	       " I/Os; overlapped slots %" PRIu64 "\n", fxio_last_path(h),
	       st.ios[FXIO_PATH_DIRECT], st.ios[FXIO_PATH_STAGED], st.ios[FXIO_PATH_POSIX],
	       st.overlapped_slots);
	if (*fxio_last_reason(h))
		printf("not direct because: %s\n", fxio_last_reason(h));
	if (write_first)
		printf("verify: %u of %u blocks differ\n", bad, blocks);
	fxio_buf_deregister(buf);
	fxio_close(h);
	free(offs);
	free(buf);
	return bad ? 1 : 0;
}
