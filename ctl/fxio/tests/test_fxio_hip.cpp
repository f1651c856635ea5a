// libfxio with a HIP runtime the process already has under its SONAME only
// (libamdhip64.so.6, a DT_NEEDED of this program, no unversioned
// libamdhip64.so anywhere): FXIO_BUF_AUTO must see it and copy through it.
// The runtime is tests/fake_amdhip64.c (ROCm 6's prototypes over host
// memory; see there).
#include <doctest/doctest.h>

#include "engine.hpp"
#include "fxio.h"
#include "temp_disk.hpp"

#include <cstring>
#include <dlfcn.h>
#include <string>
#include <vector>

extern "C" {
int hipMalloc(void **ptr, size_t size);
int hipFree(void *ptr);
int fakehip_copies(void);
}

TEST_CASE("HIP loaded as libamdhip64.so.6 (its SONAME): the runtime libfxio finds")
{
	// the premise: the unversioned name is not how the process has it
	void *h = dlopen("libamdhip64.so", RTLD_NOW | RTLD_NOLOAD);
	CHECK(h == nullptr);
	if (h)
		dlclose(h);
	CHECK(fxio::runtime_in_process(FXIO_BUF_HIP));
	CHECK_FALSE(fxio::runtime_in_process(FXIO_BUF_ACL));
	std::string why;
	auto e = fxio::load_hip_engine(why);
	CHECK(e);
	CHECK(why.empty());
}

TEST_CASE("C API: FXIO_BUF_AUTO on memory of a HIP runtime loaded by its SONAME is staged through it")
{
	TempDisk d;
	if (!d.h) {
		MESSAGE("SKIP: the file system of the build tree has no O_DIRECT");
		return;
	}
	std::vector<unsigned char> want(65536);
	for (std::size_t i = 0; i < want.size(); i++)
		want[i] = static_cast<unsigned char>(i * 7 + 3);
	int fd = open(d.path.c_str(), O_WRONLY | O_CLOEXEC);
	REQUIRE(fd >= 0);
	CHECK(pwrite(fd, want.data(), want.size(), 4096) == static_cast<ssize_t>(want.size()));
	close(fd);
	void *dev = nullptr;
	REQUIRE(hipMalloc(&dev, want.size()) == 0);
	int before = fakehip_copies();
	REQUIRE(fxio_buf_register(dev, want.size(), FXIO_BUF_AUTO) == 0);
	CHECK(fxio_read(d.h, dev, want.size(), 4096, 0) == static_cast<ssize_t>(want.size()));
	CHECK(std::string(fxio_last_path(d.h)) == "staged");
	CHECK(fakehip_copies() > before);
	CHECK(std::memcmp(dev, want.data(), want.size()) == 0);
	CHECK(fxio_buf_deregister(dev) == 0);
	CHECK(hipFree(dev) == 0);
}
