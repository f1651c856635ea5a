/*
 * tests/packages.sh: an application of libfxio as a user builds it against
 * the installed libfxio-dev, with `pkg-config --cflags --libs fxio` and
 * nothing from the source tree. Writes a pattern through libfxio into the
 * regular file argv[1] (1 MiB, made by the caller), reads it back into a
 * second registered buffer, compares, prints the path libfxio took.
 * Exit 0 only if every call succeeded and the data matches.
 */
#include <fxio.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SZ 65536

static int fail(const char *what, long r)
{
	fprintf(stderr, "fxio-pkgconfig: %s: %s\n", what, strerror((int)-r));
	return 1;
}

int main(int argc, char **argv)
{
	fxio_handle_t h;
	unsigned char *w, *r;
	long n;
	int i, e;

	if (argc != 2)
		return 2;
	w = aligned_alloc(4096, SZ);
	r = aligned_alloc(4096, SZ);
	if (!w || !r)
		return 1;
	for (i = 0; i < SZ; i++)
		w[i] = (unsigned char)(i * 7 + 3);
	memset(r, 0, SZ);
	e = fxio_open(argv[1], O_RDWR, &h);
	if (e)
		return fail("fxio_open", e);
	e = fxio_buf_register(w, SZ, FXIO_BUF_HOST);
	if (e)
		return fail("fxio_buf_register", e);
	e = fxio_buf_register(r, SZ, FXIO_BUF_HOST);
	if (e)
		return fail("fxio_buf_register", e);
	n = fxio_write(h, w, SZ, 4096, 0);
	if (n != SZ)
		return fail("fxio_write", n < 0 ? n : -5);
	n = fxio_read(h, r, SZ, 4096, 0);
	if (n != SZ)
		return fail("fxio_read", n < 0 ? n : -5);
	if (memcmp(w, r, SZ)) {
		fprintf(stderr, "fxio-pkgconfig: read back differs from what was written\n");
		return 1;
	}
	printf("libfxio %d.%d: wrote and read back %d bytes (path %s)\n",
	       FXIO_VERSION_MAJOR, FXIO_VERSION_MINOR, SZ, fxio_last_path(h));
	fxio_buf_deregister(w);
	fxio_buf_deregister(r);
	return fxio_close(h) ? 1 : 0;
}
