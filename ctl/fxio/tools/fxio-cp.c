/*
 * fxio-cp: move one byte range between a disk and a file through libfxio,
 * for the lab's data checks (tests/lab/tests/41-fxio.sh):
 *
 *   fxio-cp read|write unreg|host|emulated|rocm|ascend|dmabuf DEVICE DEV_OFF LEN FILE [BUF_OFF]
 *
 * read: DEVICE[DEV_OFF, +LEN) -> FILE; write: FILE (LEN bytes) ->
 * DEVICE[DEV_OFF, +LEN). The user buffer is page aligned + BUF_OFF; unreg
 * leaves it unregistered (compat mode), host registers it as host memory,
 * emulated as device memory copied by the host engine (the staged path),
 * rocm maps it from the lab's fake kfd (/dev/fake_amdkfd, tests/peer) and
 * registers it as HIP memory, with no HIP runtime in the process
 * (44-peer-queue.sh), ascend maps the fake Ascend driver's memory
 * (/dev/fake_ascend, aligned to its device page) as ACL memory, with no
 * AscendCL runtime, dmabuf makes a udmabuf, maps it and registers the
 * dma-buf (fxio_buf_register_dmabuf) under the mapping's address. A write ends with fxio_sync (durable on return, as
 * dd conv=fdatasync), unless FXIO_CP_NOSYNC=1 (a lab control, 55). FXIO_CP_BATCH=N
 * moves the range as up to N entries of one fxio batch instead of one
 * fxio_read/fxio_write, split at 4 KiB boundaries of the disk (entries
 * writing parts of one block would race in its read-modify-write); every
 * entry must end done on the same path. Prints "path=P reason=R overlapped=N"
 * on stdout.
 */
#define _GNU_SOURCE
#include <fxio.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "udmabuf-util.h"

static int die(const char *what, long err)
{
	fprintf(stderr, "fxio-cp: %s: %s\n", what, strerror((int)-err));
	return 1;
}

/* @len bytes of a lab fake's device memory (/dev/NAME), aligned to @align. */
static char *map_fake(const char *path, size_t len, size_t align)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	char *res, *p;
	uintptr_t a;

	if (fd < 0)
		return NULL;
	res = mmap(NULL, len + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	a = ((uintptr_t)res + align - 1) & ~(uintptr_t)(align - 1);
	p = mmap((void *)a, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	if (a > (uintptr_t)res)
		munmap(res, a - (uintptr_t)res);
	munmap(p + len, (uintptr_t)res + len + align - (uintptr_t)(p + len));
	return p;
}

static size_t fake_ascend_page(void)
{
	FILE *f = fopen("/sys/module/fake_ascend/parameters/page_size", "r");
	unsigned long v = 0;

	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v ? v : 4096;
}

/*
 * The range as @n entries of one batch; @len or -errno (the first failed
 * entry's, or -EXDEV when the entries took different paths). @path, @why:
 * the entries' path and reason.
 */
static ssize_t batch_io(fxio_handle_t h, int wr, char *buf, size_t len, off_t dev_off,
			off_t buf_off, unsigned n, const char **path, const char **why)
{
	size_t piece = (len + n - 1) / n, end;
	struct fxio_batch_io ios[64];
	struct fxio_batch_event ev[64];
	fxio_batch_t b;
	unsigned k = 0, got = 0;
	ssize_t res = (ssize_t)len;
	int r;

	for (size_t at = 0; at < len && k < 64; at = end, ++k) {
		end = (((size_t)dev_off + at + piece + 4095) / 4096 * 4096) - (size_t)dev_off;
		if (end > len)
			end = len;
		ios[k] = (struct fxio_batch_io){
			.op = wr ? FXIO_BATCH_WRITE : FXIO_BATCH_READ, .base = buf, .size = end - at,
			.dev_off = dev_off + (off_t)at, .buf_off = buf_off + (off_t)at, .cookie = k };
	}
	if ((r = fxio_batch_setup(h, k, &b)))
		return r;
	if ((r = fxio_batch_submit(b, ios, k, 0)) != (int)k) {
		fxio_batch_destroy(b);
		return r < 0 ? r : -EIO;
	}
	while (got < k) {
		r = fxio_batch_status(b, ev + got, k - got, k - got, -1);
		if (r <= 0) {
			res = r < 0 ? r : -EIO;
			break;
		}
		got += (unsigned)r;
	}
	for (unsigned i = 0; i < got && res >= 0; ++i) {
		if (ev[i].result != (int64_t)ios[ev[i].cookie].size)
			res = ev[i].result < 0 ? ev[i].result : -EIO;
		else if (i && ev[i].path != ev[0].path)
			res = -EXDEV;
	}
	*path = got ? fxio_path_str(ev[0].path) : "none";
	*why = got && ev[0].why ? ev[0].why : "";
	fxio_batch_destroy(b);
	return res;
}

int main(int argc, char **argv)
{
	if (argc < 7 || argc > 8) {
		fprintf(stderr, "usage: fxio-cp read|write unreg|host|emulated|rocm|ascend|dmabuf "
			"DEVICE DEV_OFF LEN FILE [BUF_OFF]\n");
		return 2;
	}
	int wr = !strcmp(argv[1], "write");
	if (!wr && strcmp(argv[1], "read"))
		return die(argv[1], -EINVAL);
	const char *mode = argv[2];
	off_t dev_off = (off_t)strtoll(argv[4], NULL, 0);
	size_t len = (size_t)strtoull(argv[5], NULL, 0);
	off_t buf_off = argc == 8 ? (off_t)strtoll(argv[7], NULL, 0) : 0;
	size_t cap = ((size_t)buf_off + len + 4095) / 4096 * 4096;
	int rocm = !strcmp(mode, "rocm"), dmabuf = !strcmp(mode, "dmabuf"), dfd = -1;
	int ascend = !strcmp(mode, "ascend");
	if (!cap)
		cap = 4096;
	char *buf = NULL;
	if (rocm) {
		int kfd = open("/dev/fake_amdkfd", O_RDWR | O_CLOEXEC);
		if (kfd < 0)
			return die("/dev/fake_amdkfd", -errno);
		buf = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, kfd, 0);
		close(kfd);
		if (buf == MAP_FAILED)
			return die("mmap /dev/fake_amdkfd", -errno);
	} else if (ascend) {
		size_t page = fake_ascend_page();
		cap = (cap + page - 1) / page * page;
		buf = map_fake("/dev/fake_ascend", cap, page);
		if (!buf)
			return die("map /dev/fake_ascend", -errno);
	} else if (dmabuf) {
		const char *what;
		dfd = peer_make_udmabuf(cap, &what);
		if (dfd < 0)
			return die(what, dfd);
		buf = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, dfd, 0);
		if (buf == MAP_FAILED)
			return die("mmap of the udmabuf", -errno);
	} else {
		buf = aligned_alloc(4096, cap);
	}
	if (!buf)
		return die("buffer", -ENOMEM);
	memset(buf, 0, cap);

	int f = open(argv[6], wr ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (f < 0)
		return die(argv[6], -errno);
	if (wr && read(f, buf + buf_off, len) != (ssize_t)len)
		return die("short input file", -EIO);

	fxio_handle_t h;
	int r = fxio_open(argv[3], wr ? O_RDWR : O_RDONLY, &h);
	if (r)
		return die(argv[3], r);
	if (dmabuf) {
		r = fxio_buf_register_dmabuf(dfd, 0, cap, buf, FXIO_BUF_HOST);
		if (r)
			return die("fxio_buf_register_dmabuf", r);
	} else if (strcmp(mode, "unreg")) {
		unsigned flags = !strcmp(mode, "host") ? FXIO_BUF_HOST :
				 !strcmp(mode, "emulated") ? FXIO_BUF_EMULATED :
				 rocm ? FXIO_BUF_HIP : ascend ? FXIO_BUF_ACL : 0xff;
		r = fxio_buf_register(buf, cap, flags);
		if (r)
			return die("fxio_buf_register", r);
	}
	const char *batch = getenv("FXIO_CP_BATCH"), *path = NULL, *why = NULL;
	unsigned entries = batch ? (unsigned)strtoul(batch, NULL, 0) : 0;
	if (entries > 64)
		return die("FXIO_CP_BATCH (at most 64)", -EINVAL);
	ssize_t n = entries ? batch_io(h, wr, buf, len, dev_off, buf_off, entries, &path, &why)
		  : wr ? fxio_write(h, buf, len, dev_off, buf_off)
		       : fxio_read(h, buf, len, dev_off, buf_off);
	if (n != (ssize_t)len)
		return die(entries ? "fxio batch" : wr ? "fxio_write" : "fxio_read", n < 0 ? n : -EIO);
	if (!entries) {
		path = fxio_last_path(h);
		why = fxio_last_reason(h);
	}
	if (!wr && write(f, buf + buf_off, len) != (ssize_t)len)
		return die(argv[6], -EIO);
	const char *nosync = getenv("FXIO_CP_NOSYNC");
	if (wr && !(nosync && !strcmp(nosync, "1")) && (r = fxio_sync(h)))
		return die("fxio_sync", r);
	struct fxio_stats st;
	fxio_get_stats(h, &st);
	printf("path=%s reason=\"%s\" overlapped=%" PRIu64 " chunks=%" PRIu64 "\n", path, why,
	       st.overlapped_slots, st.staged_chunks);
	if (strcmp(mode, "unreg"))
		fxio_buf_deregister(buf);
	fxio_close(h);
	close(f);
	if (rocm || ascend || dmabuf)
		munmap(buf, cap);
	else
		free(buf);
	if (dfd >= 0)
		close(dfd);
	return 0;
}
