// fxio._fxio: the C API of libfxio (fxio.h) for Python, one function per C
// call, raw addresses in and out. fxio/__init__.py turns numpy arrays, torch
// tensors and buffer-protocol objects into (address, size) and keeps them
// alive while the I/O runs. The GIL is released around every call that can
// block (I/O, poll, open, registration).
#include "fxio.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <string>
#include <tuple>
#include <vector>

namespace py = pybind11;

namespace {

// A negative errno as Python's OSError (FileNotFoundError, ...).
[[noreturn]] void raise_errno(long long e, const std::string &what)
{
	errno = static_cast<int>(-e);
	PyErr_SetFromErrnoWithFilename(PyExc_OSError, what.c_str());
	throw py::error_already_set();
}

// One batch entry for Handle::batch: (write, address, bytes, dev_off).
using BatchOp = std::tuple<bool, std::uintptr_t, std::size_t, long long>;
// An entry's end: (bytes or -errno, path, reason text).
using BatchResult = std::tuple<long long, std::string, std::string>;

// Runs @ops through one fxio batch of at most @window entries in flight,
// refilled as entries end; no Python object is touched (called without
// the GIL). 0 and every entry's result in @out, or -errno of the batch
// itself (setup, submit).
int run_batch(fxio_handle_t h, const std::vector<fxio_batch_io> &ios, unsigned window,
	      std::vector<BatchResult> &out)
{
	fxio_batch_t b;
	if (int r = fxio_batch_setup(h, window, &b))
		return r;
	std::vector<fxio_batch_event> ev(window);
	std::size_t next = 0, ended = 0;
	int err = 0;
	while (ended < ios.size()) {
		unsigned room = window - static_cast<unsigned>(next - ended);
		unsigned n = static_cast<unsigned>(std::min<std::size_t>(room, ios.size() - next));
		if (n) {
			int r = fxio_batch_submit(b, ios.data() + next, n, 0);
			if (r < 0) {
				err = r;
				break;
			}
			next += n;
		}
		int got = fxio_batch_status(b, ev.data(), 1, window, -1);
		if (got < 0) {
			err = got;
			break;
		}
		for (int i = 0; i < got; ++i)
			out[ev[i].cookie] = {ev[i].result, fxio_path_str(ev[i].path),
					     ev[i].why ? ev[i].why : ""};
		ended += static_cast<std::size_t>(got);
	}
	fxio_batch_destroy(b);  // after an error: waits for what still runs
	return err;
}

class Handle {
public:
	Handle(const std::string &path, int flags) : path_(path)
	{
		int r;
		{
			py::gil_scoped_release nogil;
			r = fxio_open(path.c_str(), flags, &h_);
		}
		if (r)
			raise_errno(r, path);
	}
	// fxio_open_fd: the caller's @fd, closed by close() only when @own.
	Handle(int fd, bool own) : path_("<fd " + std::to_string(fd) + ">")
	{
		int r;
		{
			py::gil_scoped_release nogil;
			r = fxio_open_fd(fd, own ? FXIO_OPEN_FD_OWN : 0, &h_);
		}
		if (r)
			raise_errno(r, path_);
	}
	~Handle() { close(); }
	Handle(const Handle &) = delete;
	Handle &operator=(const Handle &) = delete;

	void close()
	{
		if (!h_)
			return;
		fxio_handle_t h = h_;
		h_ = nullptr;
		py::gil_scoped_release nogil;
		fxio_close(h);
	}
	bool closed() const { return !h_; }

	// bytes moved (short at the end of the disk), or OSError
	long long read(std::uintptr_t addr, std::size_t size, long long dev_off)
	{
		ssize_t r;
		fxio_handle_t h = live();
		{
			py::gil_scoped_release nogil;
			r = fxio_read(h, reinterpret_cast<void *>(addr), size, dev_off, 0);
		}
		if (r < 0)
			raise_errno(r, path_);
		return r;
	}
	long long write(std::uintptr_t addr, std::size_t size, long long dev_off)
	{
		ssize_t r;
		fxio_handle_t h = live();
		{
			py::gil_scoped_release nogil;
			r = fxio_write(h, reinterpret_cast<const void *>(addr), size, dev_off, 0);
		}
		if (r < 0)
			raise_errno(r, path_);
		return r;
	}
	long long submit(bool write, std::uintptr_t addr, std::size_t size, long long dev_off,
			 std::uint64_t user_data)
	{
		fxio_handle_t h = live();
		int64_t id = write ? fxio_submit_write(h, reinterpret_cast<const void *>(addr), size,
						       dev_off, 0, user_data)
				   : fxio_submit_read(h, reinterpret_cast<void *>(addr), size, dev_off,
						      0, user_data);
		if (id < 0)
			raise_errno(id, path_);
		return id;
	}
	// [(id, user_data, result, path, reason_text)], [] on timeout
	std::vector<std::tuple<long long, std::uint64_t, long long, std::string, std::string>>
	poll(int max, int timeout_ms)
	{
		fxio_handle_t h = live();
		std::vector<fxio_completion> c(static_cast<std::size_t>(max > 0 ? max : 1));
		int n;
		{
			py::gil_scoped_release nogil;
			n = fxio_poll_completions(h, c.data(), static_cast<int>(c.size()), timeout_ms);
		}
		if (n < 0)
			raise_errno(n, path_);
		std::vector<std::tuple<long long, std::uint64_t, long long, std::string, std::string>> out;
		for (int i = 0; i < n; ++i)
			out.emplace_back(c[i].id, c[i].user_data, c[i].result, fxio_path_str(c[i].path),
					 c[i].why ? c[i].why : "");
		return out;
	}
	// Every op in flight at once (up to 1024), results in order; the GIL
	// is released until the last one ended.
	std::vector<BatchResult> batch(const std::vector<BatchOp> &ops)
	{
		fxio_handle_t h = live();
		std::vector<fxio_batch_io> ios;
		for (const auto &[write, addr, size, dev_off] : ops)
			ios.push_back({write ? FXIO_BATCH_WRITE : FXIO_BATCH_READ, 0,
				       reinterpret_cast<void *>(addr), size, dev_off, 0, ios.size()});
		std::vector<BatchResult> out(ios.size());
		if (ios.empty())
			return out;
		int r;
		{
			py::gil_scoped_release nogil;
			r = run_batch(h, ios, static_cast<unsigned>(std::min<std::size_t>(ios.size(), 1024)),
				      out);
		}
		if (r < 0)
			raise_errno(r, path_);
		return out;
	}
	void sync()
	{
		int r;
		fxio_handle_t h = live();
		{
			py::gil_scoped_release nogil;
			r = fxio_sync(h);
		}
		if (r < 0)
			raise_errno(r, path_);
	}
	std::string last_path() { return fxio_last_path(live()); }
	std::string last_reason() { return fxio_last_reason(live()); }
	std::string disk_queue() { return fxio_disk_queue(live()); }
	py::dict stats()
	{
		fxio_stats st{};
		if (int r = fxio_get_stats(live(), &st))
			raise_errno(r, path_);
		py::dict d, ios, bytes, fallbacks;
		for (int p = FXIO_PATH_DIRECT; p <= FXIO_PATH_POSIX; ++p) {
			ios[fxio_path_str(p)] = st.ios[p];
			bytes[fxio_path_str(p)] = st.bytes[p];
		}
		for (int r = FXIO_REASON_NONE + 1; r < FXIO_REASON_MAX; ++r)
			if (st.fallbacks[r])
				fallbacks[fxio_reason_str(r)] = st.fallbacks[r];
		d["ios"] = ios;
		d["bytes"] = bytes;
		d["fallbacks"] = fallbacks;
		d["overlapped_slots"] = st.overlapped_slots;
		d["staged_chunks"] = st.staged_chunks;
		d["errors"] = st.errors;
		d["pool_slots"] = st.pool_slots;
		d["pool_slot_bytes"] = st.pool_slot_bytes;
		d["pool_locked"] = st.pool_locked != 0;
		d["pool_numa_node"] = st.pool_numa_node;
		d["queue_depth"] = st.queue_depth;
		d["disk_queue"] = std::string(fxio_disk_queue(h_));
		return d;
	}

private:
	fxio_handle_t live()
	{
		if (!h_)
			throw py::value_error("I/O on a closed fxio file: " + path_);
		return h_;
	}
	std::string path_;
	fxio_handle_t h_ = nullptr;
};

// (address, bytes, readonly) of a C-contiguous buffer-protocol object
std::tuple<std::uintptr_t, std::size_t, bool> buffer_info(py::object obj)
{
	Py_buffer view;
	if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0)
		throw py::error_already_set();
	auto out = std::make_tuple(reinterpret_cast<std::uintptr_t>(view.buf),
				   static_cast<std::size_t>(view.len), view.readonly != 0);
	PyBuffer_Release(&view);
	return out;
}

// fxio_get_properties as a dict (the names of struct fxio_properties).
py::dict properties()
{
	fxio_properties p{};
	int r;
	{
		py::gil_scoped_release nogil;  // may dlopen the HIP and ACL runtimes
		r = fxio_get_properties(&p, sizeof(p));
	}
	if (r)
		raise_errno(r, "fxio_get_properties");
	py::list providers;
	for (std::uint32_t i = 0; i < p.nproviders; ++i) {
		const fxio_provider_info &k = p.providers[i];
		py::dict d;
		d["name"] = k.name;
		d["present"] = (k.flags & FXIO_PROVIDER_PRESENT) != 0;
		d["direct"] = (k.flags & FXIO_PROVIDER_DIRECT) != 0;
		d["peer_queues"] = (k.flags & FXIO_PROVIDER_PEERQ) != 0;
		d["reason"] = k.reason;
		providers.append(d);
	}
	py::dict engines;
	for (const fxio_engine_info &e : p.engines) {
		py::dict d;
		d["present"] = e.present != 0;
		d["reason"] = e.reason;
		engines[e.name] = d;
	}
	py::dict d;
	d["version"] = py::make_tuple(p.version_major, p.version_minor);
	d["kernel_abi"] = p.kernel_abi;
	d["kernel_reason"] = p.kernel_reason;
	d["providers"] = providers;
	d["max_direct_io"] = p.max_direct_io;
	d["engines"] = engines;
	d["pool_slots"] = p.pool_slots;
	d["pool_slot_bytes"] = p.pool_slot_bytes;
	d["queue_depth"] = p.queue_depth;
	d["async_workers"] = p.async_workers;
	return d;
}

}  // namespace

PYBIND11_MODULE(_fxio, m)
{
	m.doc() = "libfxio's C API (fxio.h); use the fxio package, not this module";
	m.attr("O_RDONLY") = O_RDONLY;
	m.attr("O_WRONLY") = O_WRONLY;
	m.attr("O_RDWR") = O_RDWR;
	m.attr("BUF_HOST") = FXIO_BUF_HOST;
	m.attr("BUF_HIP") = FXIO_BUF_HIP;
	m.attr("BUF_ACL") = FXIO_BUF_ACL;
	m.attr("BUF_EMULATED") = FXIO_BUF_EMULATED;
	m.attr("BUF_AUTO") = FXIO_BUF_AUTO;
	m.attr("BUF_NO_KERNEL") = FXIO_BUF_NO_KERNEL;
	m.attr("VERSION") = py::make_tuple(FXIO_VERSION_MAJOR, FXIO_VERSION_MINOR);

	py::class_<Handle>(m, "Handle")
		.def(py::init<const std::string &, int>())
		.def_static("from_fd", [](int fd, bool own) { return std::make_unique<Handle>(fd, own); })
		.def("close", &Handle::close)
		.def_property_readonly("closed", &Handle::closed)
		.def("read", &Handle::read)
		.def("write", &Handle::write)
		.def("submit", &Handle::submit)
		.def("poll", &Handle::poll)
		.def("batch", &Handle::batch)
		.def("sync", &Handle::sync)
		.def("last_path", &Handle::last_path)
		.def("last_reason", &Handle::last_reason)
		.def("disk_queue", &Handle::disk_queue)
		.def("stats", &Handle::stats);

	m.def("buffer_info", &buffer_info);
	m.def("properties", &properties);
	m.def("register", [](std::uintptr_t addr, std::size_t len, unsigned flags) {
		int r;
		{
			py::gil_scoped_release nogil;
			r = fxio_buf_register(reinterpret_cast<const void *>(addr), len, flags);
		}
		if (r)
			raise_errno(r, "fxio_buf_register");
	});
	m.def("register_dmabuf", [](int fd, std::uint64_t offset, std::size_t len,
				    std::uintptr_t addr, unsigned flags) {
		int r;
		{
			py::gil_scoped_release nogil;
			r = fxio_buf_register_dmabuf(fd, offset, len,
						     reinterpret_cast<const void *>(addr), flags);
		}
		if (r)
			raise_errno(r, "fxio_buf_register_dmabuf");
	});
	m.def("deregister", [](std::uintptr_t addr) {
		int r;
		{
			py::gil_scoped_release nogil;
			r = fxio_buf_deregister(reinterpret_cast<const void *>(addr));
		}
		if (r)
			raise_errno(r, "fxio_buf_deregister");
	});
}
