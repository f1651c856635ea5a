// Every ioctl of /dev/fxblk-peer that libfxio issues lives in this file
// (uapi: kmod/include/uapi/linux/fxblk_peer.h).
#include "peer_kernel.hpp"

#include <linux/fxblk_peer.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/ioctl.h>
#include <unistd.h>

namespace fxio {
namespace {

std::string cstr(const char *s, std::size_t n)
{
	return std::string(s, strnlen(s, n));
}

class ControlNode final : public PeerKernel {
public:
	explicit ControlNode(int fd) : fd_(fd) {}
	~ControlNode() override { ::close(fd_); }  // releases every handle
	ControlNode(const ControlNode &) = delete;
	ControlNode &operator=(const ControlNode &) = delete;

	int abi() const override { return FXBLK_PEER_ABI; }

	int providers(std::vector<KernelProvider> &out) override
	{
		fxblk_peer_providers p{};
		p.abi = FXBLK_PEER_ABI;
		if (ioctl(fd_, FXBLK_PEER_IOC_PROVIDERS, &p) < 0)
			return -errno;
		for (std::uint32_t i = 0; i < std::min<std::uint32_t>(p.count, FXBLK_PEER_MAX_PROVIDERS);
		     ++i) {
			const fxblk_peer_provider &k = p.p[i];
			out.push_back({cstr(k.name, sizeof(k.name)), (k.flags & FXBLK_PEER_F_PRESENT) != 0,
				       (k.flags & FXBLK_PEER_F_DIRECT) != 0,
				       cstr(k.reason, sizeof(k.reason)), k.pinned_bytes,
				       k.registrations, (k.flags & FXBLK_PEER_F_PEERQ) != 0});
		}
		return 0;
	}

	// The kernel pins whole 4 KiB pages: register the pages holding
	// [@start, @start + @len) (an address, or a dma-buf offset) and remember
	// where they start.
	int register_buffer(const void *addr, std::uint64_t len, bool, KernelRegistration &out,
			    std::string &why) override
	{
		fxblk_peer_register r{};
		return register_pages(r, reinterpret_cast<std::uint64_t>(addr), len, out, why);
	}

	int register_dmabuf(int dmabuf_fd, std::uint64_t offset, std::uint64_t len,
			    KernelRegistration &out, std::string &why) override
	{
		fxblk_peer_register r{};
		r.flags = FXBLK_PEER_REG_DMABUF;
		r.dmabuf_fd = dmabuf_fd;
		return register_pages(r, offset, len, out, why);
	}

	int deregister(std::uint64_t handle) override
	{
		fxblk_peer_deregister d{};
		d.abi = FXBLK_PEER_ABI;
		d.handle = handle;
		return ioctl(fd_, FXBLK_PEER_IOC_DEREGISTER, &d) < 0 ? -errno : 0;
	}

	int rw(std::uint64_t handle, bool write, int fd, std::uint64_t buf_off,
	       std::uint64_t dev_off, std::uint64_t len) override
	{
		while (len) {
			std::uint64_t n = std::min<std::uint64_t>(len, FXBLK_PEER_MAX_RW);
			fxblk_peer_rw io{};
			io.abi = FXBLK_PEER_ABI;
			io.op = write ? FXBLK_PEER_OP_WRITE : FXBLK_PEER_OP_READ;
			io.fd = fd;
			io.handle = handle;
			io.buf_off = buf_off;
			io.dev_off = dev_off;
			io.len = n;
			io.eventfd = -1;
			if (ioctl(fd_, FXBLK_PEER_IOC_RW, &io) < 0)
				return -errno;
			len -= n;
			buf_off += n;
			dev_off += n;
		}
		return 0;
	}

private:
	int register_pages(fxblk_peer_register &r, std::uint64_t start, std::uint64_t len,
			   KernelRegistration &out, std::string &why)
	{
		std::uint64_t lo = start / FXBLK_PEER_ALIGN * FXBLK_PEER_ALIGN;
		std::uint64_t hi =
			(start + len + FXBLK_PEER_ALIGN - 1) / FXBLK_PEER_ALIGN * FXBLK_PEER_ALIGN;
		r.abi = FXBLK_PEER_ABI;
		r.provider = FXBLK_PEER_PROV_AUTO;
		(r.flags & FXBLK_PEER_REG_DMABUF ? r.offset : r.addr) = lo;
		r.len = hi - lo;
		if (ioctl(fd_, FXBLK_PEER_IOC_REGISTER, &r) < 0) {
			int e = errno;
			why = cstr(r.reason, sizeof(r.reason));
			return -e;
		}
		fill(r, lo, out);
		return 0;
	}

	// What REGISTER answered, for a registration starting at @base.
	static void fill(const fxblk_peer_register &r, std::uint64_t base, KernelRegistration &out)
	{
		out.handle = r.handle;
		out.base = base;
		out.provider = provider_name(r.provider);
		out.struct_page = (r.out_flags & FXBLK_PEER_F_STRUCT_PAGE) != 0;
		out.direct = (r.out_flags & FXBLK_PEER_F_DIRECT) != 0;
		out.peerq = (r.out_flags & FXBLK_PEER_F_PEERQ) != 0;
		out.revocable = (r.out_flags & FXBLK_PEER_F_REVOCABLE) != 0;
		out.page_size = r.page_size;
		out.reason = cstr(r.reason, sizeof(r.reason));
	}

	static std::string provider_name(std::uint32_t id)
	{
		switch (id) {
		case FXBLK_PEER_PROV_HOST:
			return "host";
		case FXBLK_PEER_PROV_ROCM:
			return "rocm";
		case FXBLK_PEER_PROV_ASCEND:
			return "ascend";
		case FXBLK_PEER_PROV_DMABUF:
			return "dmabuf";
		}
		return "provider" + std::to_string(id);
	}

	int fd_;
};

}  // namespace

std::uint64_t PeerKernel::max_rw() const
{
	return FXBLK_PEER_MAX_RW;
}

std::unique_ptr<PeerKernel> open_peer_kernel(std::string &why)
{
	int fd = ::open(FXBLK_PEER_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT)
			why = std::string(FXBLK_PEER_DEVICE) +
			      " absent (fxblk not loaded, or built without peer memory)";
		else
			why = std::string("cannot open ") + FXBLK_PEER_DEVICE + ": " + std::strerror(e);
		return nullptr;
	}
	auto k = std::make_unique<ControlNode>(fd);
	// A module speaking another ABI answers EPROTO: say so once here.
	std::vector<KernelProvider> p;
	if (int e = k->providers(p); e) {
		why = e == -EPROTO ? std::string(FXBLK_PEER_DEVICE) + " speaks another ABI than " +
					     std::to_string(FXBLK_PEER_ABI)
				   : std::string(FXBLK_PEER_DEVICE) + ": " + std::strerror(-e);
		return nullptr;
	}
	return k;
}

}  // namespace fxio
