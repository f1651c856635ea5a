// Copy engines for the staged path: host (memcpy on a worker thread, built
// in) and the accelerators' own engines, whose runtimes are loaded with
// dlopen at run time (engine_hip.cpp, engine_acl.cpp): never a link-time
// dependency. A stream copies asynchronously; completions come back in any
// order, each with the tag it was submitted with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fxio {

enum class CopyDir { to_buffer, from_buffer };  // to_buffer: bounce -> user buffer

struct CopyDone {
	std::uint64_t tag;
	int status;  // 0 or -errno
};

class CopyStream {
public:
	virtual ~CopyStream() = default;
	// Starts copying @n bytes; 0 or -errno (nothing was started then).
	virtual int submit(std::uint64_t tag, void *dst, const void *src, std::size_t n,
			   CopyDir dir) = 0;
	// Appends finished copies to @out. @block: wait until at least one
	// finishes (when any is pending). Returns 0 or -errno.
	virtual int reap(std::vector<CopyDone> &out, bool block) = 0;
};

class CopyEngine {
public:
	virtual ~CopyEngine() = default;
	virtual const char *name() const = 0;
	virtual std::unique_ptr<CopyStream> stream() = 0;  // null if it cannot
	// FXIO_BUF_AUTO: 1 when the runtime says @p is its device memory; 0
	// when it is host memory, registered or not, or the runtime does not
	// know it; -errno when it cannot be asked (the host engine: 0).
	virtual int device_memory(const void *) { return 0; }
};

// memcpy on one worker thread per stream, completions in order.
std::unique_ptr<CopyEngine> make_host_engine();

// The runtime library an engine dlopens, its availability and why not.
struct EngineInfo {
	std::string name;     // host, hip, acl
	std::string library;  // libamdhip64.so, libascendcl.so, "" (built in)
	bool present = false;
	int devices = -1;     // -1: unknown
	std::string reason;   // why not present
};

// Loads "hip" or "acl"; null with @why when its runtime is absent or broken.
std::unique_ptr<CopyEngine> load_hip_engine(std::string &why);
std::unique_ptr<CopyEngine> load_acl_engine(std::string &why);
std::vector<EngineInfo> probe_engines();
// Whether the runtime of @kind (FXIO_BUF_HIP, _ACL) is already mapped in the
// process, under its name or a versioned one (libamdhip64.so.6; found with
// dl_iterate_phdr): FXIO_BUF_AUTO asks only such a runtime, so a process
// that never used one does not start it.
bool runtime_in_process(unsigned kind);

}  // namespace fxio
