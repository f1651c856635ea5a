// Accelerator copy engines, each resolved with dlopen/dlsym at run time:
//   hip: libamdhip64.so   hipMemcpyAsync + hipEventRecord/Query per copy
//   acl: libascendcl.so   aclrtMemcpyAsync + aclrtRecordEvent/QueryEventStatus
// The prototypes are declared here (opaque handles as void *, error codes
// as int), so neither the build nor the library needs ROCm or CANN.
// A stream records an event after every copy; reap() polls the events, so
// copies complete independently of the O_DIRECT I/O that overlaps them.
#include "engine.hpp"
#include "fxio.h"

#include <cerrno>
#include <deque>
#include <dlfcn.h>
#include <initializer_list>
#include <link.h>
#include <string>
#include <string_view>

namespace fxio {
namespace {

struct Dl {
	void *h = nullptr;
	explicit Dl(const char *name) : h(dlopen(name, RTLD_NOW | RTLD_LOCAL)) {}
	~Dl()
	{
		if (h)
			dlclose(h);
	}
	Dl(const Dl &) = delete;
	Dl &operator=(const Dl &) = delete;
	template <class F> bool sym(F &f, const char *name, std::string &missing)
	{
		f = reinterpret_cast<F>(dlsym(h, name));
		if (!f)
			missing += missing.empty() ? name : std::string(", ") + name;
		return f != nullptr;
	}
};

// What one vendor runtime offers, as plain function pointers.
struct VendorOps {
	const char *name;
	int (*stream_create)(void **s);
	int (*stream_destroy)(void *s);
	int (*copy)(void *dst, const void *src, std::size_t n, CopyDir dir, void *s);
	int (*event_create)(void **e);
	int (*event_record)(void *e, void *s);
	int (*event_done)(void *e);  // 1 done, 0 not yet, <0 error
	int (*event_sync)(void *e);
	int (*event_destroy)(void *e);
	// FXIO_BUF_AUTO: 1 device memory, 0 not (host, registered or not, or
	// unknown to the runtime), -errno when the runtime cannot be asked.
	int (*is_device)(const void *p);
};

class VendorStream final : public CopyStream {
public:
	VendorStream(const VendorOps &ops, void *s) : ops_(ops), s_(s) {}
	~VendorStream() override
	{
		std::vector<CopyDone> ignore;
		while (!pending_.empty())
			reap(ignore, true);
		for (void *e : free_events_)
			ops_.event_destroy(e);
		ops_.stream_destroy(s_);
	}

	int submit(std::uint64_t tag, void *dst, const void *src, std::size_t n,
		   CopyDir dir) override
	{
		void *e = nullptr;
		if (!free_events_.empty()) {
			e = free_events_.back();
			free_events_.pop_back();
		} else if (ops_.event_create(&e)) {
			return -ENOMEM;
		}
		if (ops_.copy(dst, src, n, dir, s_) || ops_.event_record(e, s_)) {
			free_events_.push_back(e);
			return -EIO;
		}
		pending_.push_back({tag, e});
		return 0;
	}

	int reap(std::vector<CopyDone> &out, bool block) override
	{
		// In order on one stream: the oldest finishes first.
		bool waited = false;
		while (!pending_.empty()) {
			auto [tag, e] = pending_.front();
			int r = ops_.event_done(e);
			if (r == 0 && block && !waited) {
				r = ops_.event_sync(e) ? -EIO : 1;
				waited = true;
			}
			if (r == 0)
				break;
			out.push_back({tag, r < 0 ? -EIO : 0});
			free_events_.push_back(e);
			pending_.pop_front();
		}
		return 0;
	}

private:
	const VendorOps &ops_;
	void *s_;
	std::deque<std::pair<std::uint64_t, void *>> pending_;
	std::vector<void *> free_events_;
};

class VendorEngine final : public CopyEngine {
public:
	VendorEngine(std::unique_ptr<Dl> dl, VendorOps ops) : dl_(std::move(dl)), ops_(ops) {}
	const char *name() const override { return ops_.name; }
	std::unique_ptr<CopyStream> stream() override
	{
		void *s = nullptr;
		if (ops_.stream_create(&s))
			return nullptr;
		return std::make_unique<VendorStream>(ops_, s);
	}
	int device_memory(const void *p) override { return ops_.is_device(p); }

private:
	std::unique_ptr<Dl> dl_;
	VendorOps ops_;
};

// ---- HIP (hip_runtime_api.h): hipError_t is an int enum, 0 = hipSuccess.
namespace hip {
constexpr int not_ready = 600;  // hipErrorNotReady
constexpr int host_to_device = 1, device_to_host = 2;
constexpr unsigned disable_timing = 0x2;  // hipEventDisableTiming
int (*GetDeviceCount)(int *);
int (*StreamCreate)(void **);
int (*StreamDestroy)(void *);
int (*MemcpyAsync)(void *, const void *, std::size_t, int, void *);
int (*EventCreateWithFlags)(void **, unsigned);
int (*EventRecord)(void *, void *);
int (*EventQuery)(void *);
int (*EventSynchronize)(void *);
int (*EventDestroy)(void *);
// Optional (FXIO_BUF_AUTO only): hipPointerGetAttributes(hipPointerAttribute_t
// *attributes, const void *ptr) and hipRuntimeGetVersion(int *), as in ROCm's
// include/hip/hip_runtime_api.h (github.com/ROCm/HIP; ROCm/clr from 6.x).
int (*PointerGetAttributes)(void *, const void *);
int (*RuntimeGetVersion)(int *);
// hipPointerAttribute_t, the same layout in every ROCm: the first field is
// `enum hipMemoryType type` (named memoryType before ROCm 6), then int device,
// void *devicePointer, void *hostPointer, int isManaged, unsigned
// allocationFlags. The enum's values changed in ROCm 6 (HIP_VERSION
// 60000000): Unregistered 0, Host 1, Device 2, Managed 3, Array 10,
// Unified 11; before: Host 0, Device 1, Array 2, Unified 3, and unregistered
// host memory was an error (hipErrorInvalidValue) instead of type 0.
struct PointerAttribute {
	int type;
	int device;
	void *device_pointer;
	void *host_pointer;
	int is_managed;
	unsigned allocation_flags;
};
constexpr int rocm6 = 60000000;
int is_device(const void *p)
{
	if (!PointerGetAttributes)
		return -ENOSYS;
	int v = rocm6;
	if (RuntimeGetVersion && RuntimeGetVersion(&v))
		v = rocm6;
	PointerAttribute a{};
	if (PointerGetAttributes(&a, p))
		return 0;  // not the runtime's (ROCm 5: unregistered host memory)
	// Managed memory is host-addressable: memcpy and O_DIRECT reach it.
	if (v >= rocm6)
		return a.type == 2 || a.type == 10 ? 1 : 0;  // Device, Array
	return a.type == 1 || a.type == 2 ? 1 : 0;  // Device, Array (ROCm 5)
}

const VendorOps ops = {
	"hip",
	[](void **s) { return StreamCreate(s); },
	[](void *s) { return StreamDestroy(s); },
	[](void *d, const void *src, std::size_t n, CopyDir dir, void *s) {
		return MemcpyAsync(d, src, n,
				   dir == CopyDir::to_buffer ? host_to_device : device_to_host, s);
	},
	[](void **e) { return EventCreateWithFlags(e, disable_timing); },
	[](void *e, void *s) { return EventRecord(e, s); },
	[](void *e) {
		int r = EventQuery(e);
		return r == 0 ? 1 : r == not_ready ? 0 : -1;
	},
	[](void *e) { return EventSynchronize(e); },
	[](void *e) { return EventDestroy(e); },
	is_device,
};
}  // namespace hip

// ---- AscendCL (acl/acl_rt.h): aclError is an int, 0 = ACL_SUCCESS.
namespace acl {
constexpr int host_to_device = 1, device_to_host = 2;  // aclrtMemcpyKind
constexpr int repeat_initialize = 100002;               // ACL_ERROR_REPEAT_INITIALIZE
int (*Init)(const char *);
int (*GetDeviceCount)(std::uint32_t *);
int (*CreateStream)(void **);
int (*DestroyStream)(void *);
int (*MemcpyAsync)(void *, std::size_t, const void *, std::size_t, int, void *);
int (*CreateEvent)(void **);
int (*RecordEvent)(void *, void *);
int (*QueryEventStatus)(void *, int *);  // 1 = ACL_EVENT_RECORDED_STATUS_COMPLETE
int (*SynchronizeEvent)(void *);
int (*DestroyEvent)(void *);
// Optional (FXIO_BUF_AUTO only): aclError aclrtPointerGetAttributes(const void
// *ptr, aclrtPtrAttributes *attributes), CANN's include/acl/acl_rt.h (CANN
// 8.x), with aclrtPtrAttributes { aclrtMemLocation location { uint32_t id;
// aclrtMemLocationType type; }; uint32_t pageSize; uint32_t rsv[4]; } and
// aclrtMemLocationType HOST 0 (aclrtMallocHost), DEVICE 1 (aclrtMalloc),
// UNREGISTERED 2 (not allocated through ACL), MANAGED 3, HOST_NUMA 4.
int (*PointerGetAttributes)(const void *, void *);
struct PtrAttributes {
	std::uint32_t location_id;
	int location_type;
	std::uint32_t page_size;
	std::uint32_t rsv[4];
};
int is_device(const void *p)
{
	if (!PointerGetAttributes)
		return -ENOSYS;
	PtrAttributes a{};
	if (PointerGetAttributes(p, &a))
		return 0;
	return a.location_type == 1 ? 1 : 0;  // ACL_MEM_LOCATION_TYPE_DEVICE
}

const VendorOps ops = {
	"acl",
	[](void **s) { return CreateStream(s); },
	[](void *s) { return DestroyStream(s); },
	[](void *d, const void *src, std::size_t n, CopyDir dir, void *s) {
		return MemcpyAsync(d, n, src, n,
				   dir == CopyDir::to_buffer ? host_to_device : device_to_host, s);
	},
	[](void **e) { return CreateEvent(e); },
	[](void *e, void *s) { return RecordEvent(e, s); },
	[](void *e) {
		int st = 0;
		if (QueryEventStatus(e, &st))
			return -1;
		return st == 1 ? 1 : 0;
	},
	[](void *e) { return SynchronizeEvent(e); },
	[](void *e) { return DestroyEvent(e); },
	is_device,
};
}  // namespace acl

// The path of a runtime library already mapped in this process: its file
// name is @lib or @lib followed by a version (libamdhip64.so.6.4.60400).
// dlopen(lib, RTLD_NOLOAD) would not find it: glibc matches a bare name
// against the names objects were loaded by and their DT_SONAME, and a
// process that has HIP through DT_NEEDED (libtorch_hip.so, an application
// linked with hipcc) loaded it as libamdhip64.so.6, its SONAME (ROCm/clr:
// SOVERSION is the major version), while the unversioned name is only the
// development symlink.
std::string mapped_runtime(const char *lib)
{
	struct Want {
		std::string_view lib;
		std::string path;
	} w{lib, {}};
	dl_iterate_phdr(
		[](dl_phdr_info *info, std::size_t, void *data) {
			auto *w = static_cast<Want *>(data);
			std::string_view path = info->dlpi_name ? info->dlpi_name : "";
			std::string_view base = path.substr(path.rfind('/') + 1);
			if (base.substr(0, w->lib.size()) != w->lib)
				return 0;
			std::string_view ver = base.substr(w->lib.size());
			if (!ver.empty() && (ver.size() < 2 || ver[0] != '.' ||
					     ver.find_first_not_of("0123456789.") != std::string_view::npos))
				return 0;
			w->path = path;
			return 1;
		},
		&w);
	return w.path;
}

// The runtime the process already has (by its own path), else the first of
// @lib and its versioned names (@versions: ".7", ".6", ...) that loads:
// without ROCm's development package only the versioned file exists.
std::unique_ptr<Dl> open_runtime(const char *lib, std::initializer_list<const char *> versions,
				 std::string &why)
{
	std::string mapped = mapped_runtime(lib);
	if (!mapped.empty()) {
		auto dl = std::make_unique<Dl>(mapped.c_str());
		if (dl->h)
			return dl;
	}
	std::string first;
	auto attempt = [&](const std::string &name) -> std::unique_ptr<Dl> {
		auto dl = std::make_unique<Dl>(name.c_str());
		if (dl->h)
			return dl;
		if (first.empty()) {
			const char *e = dlerror();
			first = e ? e : "unknown error";
		}
		return nullptr;
	};
	if (auto dl = attempt(lib))
		return dl;
	for (const char *v : versions)
		if (auto dl = attempt(std::string(lib) + v))
			return dl;
	why = std::string(lib) + " not loadable: " + first;
	return nullptr;
}

}  // namespace

std::unique_ptr<CopyEngine> load_hip_engine(std::string &why)
{
	auto dl = open_runtime("libamdhip64.so", {".7", ".6", ".5"}, why);
	if (!dl)
		return nullptr;
	std::string missing;
	dl->sym(hip::GetDeviceCount, "hipGetDeviceCount", missing);
	dl->sym(hip::StreamCreate, "hipStreamCreate", missing);
	dl->sym(hip::StreamDestroy, "hipStreamDestroy", missing);
	dl->sym(hip::MemcpyAsync, "hipMemcpyAsync", missing);
	dl->sym(hip::EventCreateWithFlags, "hipEventCreateWithFlags", missing);
	dl->sym(hip::EventRecord, "hipEventRecord", missing);
	dl->sym(hip::EventQuery, "hipEventQuery", missing);
	dl->sym(hip::EventSynchronize, "hipEventSynchronize", missing);
	dl->sym(hip::EventDestroy, "hipEventDestroy", missing);
	if (!missing.empty()) {
		why = "libamdhip64.so lacks " + missing;
		return nullptr;
	}
	std::string optional;  // FXIO_BUF_AUTO only: without them, auto is host
	dl->sym(hip::PointerGetAttributes, "hipPointerGetAttributes", optional);
	dl->sym(hip::RuntimeGetVersion, "hipRuntimeGetVersion", optional);
	int n = 0;
	if (hip::GetDeviceCount(&n) || n <= 0) {
		why = "HIP runtime found but no GPU is visible (hipGetDeviceCount)";
		return nullptr;
	}
	return std::make_unique<VendorEngine>(std::move(dl), hip::ops);
}

std::unique_ptr<CopyEngine> load_acl_engine(std::string &why)
{
	auto dl = open_runtime("libascendcl.so", {}, why);
	if (!dl)
		return nullptr;
	std::string missing;
	dl->sym(acl::Init, "aclInit", missing);
	dl->sym(acl::GetDeviceCount, "aclrtGetDeviceCount", missing);
	dl->sym(acl::CreateStream, "aclrtCreateStream", missing);
	dl->sym(acl::DestroyStream, "aclrtDestroyStream", missing);
	dl->sym(acl::MemcpyAsync, "aclrtMemcpyAsync", missing);
	dl->sym(acl::CreateEvent, "aclrtCreateEvent", missing);
	dl->sym(acl::RecordEvent, "aclrtRecordEvent", missing);
	dl->sym(acl::QueryEventStatus, "aclrtQueryEventStatus", missing);
	dl->sym(acl::SynchronizeEvent, "aclrtSynchronizeEvent", missing);
	dl->sym(acl::DestroyEvent, "aclrtDestroyEvent", missing);
	if (!missing.empty()) {
		why = "libascendcl.so lacks " + missing;
		return nullptr;
	}
	std::string optional;  // FXIO_BUF_AUTO only (CANN 8): without it, auto is host
	dl->sym(acl::PointerGetAttributes, "aclrtPointerGetAttributes", optional);
	// The application normally initialised ACL already (repeat is fine).
	int r = acl::Init(nullptr);
	if (r && r != acl::repeat_initialize) {
		why = "aclInit failed (" + std::to_string(r) + ")";
		return nullptr;
	}
	std::uint32_t n = 0;
	if (acl::GetDeviceCount(&n) || n == 0) {
		why = "AscendCL found but no NPU is visible (aclrtGetDeviceCount)";
		return nullptr;
	}
	return std::make_unique<VendorEngine>(std::move(dl), acl::ops);
}

bool runtime_in_process(unsigned kind)
{
	const char *lib = kind == FXIO_BUF_HIP ? "libamdhip64.so" :
			  kind == FXIO_BUF_ACL ? "libascendcl.so" : nullptr;
	return lib && !mapped_runtime(lib).empty();
}

std::vector<EngineInfo> probe_engines()
{
	std::vector<EngineInfo> v;
	v.push_back({"host", "", true, -1, ""});
	EngineInfo h{"hip", "libamdhip64.so", false, -1, ""};
	h.present = load_hip_engine(h.reason) != nullptr;
	v.push_back(h);
	EngineInfo a{"acl", "libascendcl.so", false, -1, ""};
	a.present = load_acl_engine(a.reason) != nullptr;
	v.push_back(a);
	return v;
}

}  // namespace fxio
