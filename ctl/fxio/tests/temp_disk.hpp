// A 1 MiB file that libfxio opens (fxio_open), shared by the libfxio tests.
#pragma once
#include <doctest/doctest.h>

#include "fxio.h"

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <unistd.h>

// A 1 MiB file for the C API, or "" when the build tree's file system has
// no O_DIRECT (then the caller prints SKIP).
struct TempDisk {
	TempDisk()
	{
		char tmpl[] = "fxio-test-XXXXXX";
		int fd = mkstemp(tmpl);
		REQUIRE(fd >= 0);
		REQUIRE(ftruncate(fd, 1 << 20) == 0);
		close(fd);
		path = tmpl;
		int r = fxio_open(path.c_str(), O_RDWR, &h);
		if (r == -EINVAL)
			h = nullptr;
		else
			REQUIRE(r == 0);
	}
	~TempDisk()
	{
		if (h)
			fxio_close(h);
		unlink(path.c_str());
	}
	std::string path;
	fxio_handle_t h = nullptr;
};
