// The kernel's peer-memory control node (/dev/fxblk-peer) behind a small
// interface: peer_kernel.cpp is the only file that issues its ioctls, so
// everything else runs in unit tests against a fake.
#pragma once

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fxio {

inline constexpr const char *peer_node = "/dev/fxblk-peer";

struct KernelProvider {
	std::string name;  // host, rocm, ascend, dmabuf
	bool present = false;
	bool direct = false;  // can serve direct I/O on this host
	std::string reason;   // why not (present or direct)
	std::uint64_t pinned_bytes = 0;
	std::uint64_t registrations = 0;
	bool peerq = false;  // DMA-only memory its RW moves over fxblk's peer queues
};

struct KernelRegistration {
	std::uint64_t handle = 0;
	std::string provider;
	bool struct_page = false;  // memory has struct pages
	bool direct = false;       // the kernel's RW moves it: the direct path
	// DMA-only memory the kernel's synchronous RW moves over fxblk's peer
	// queues where the disk has them (else EREMOTEIO): direct there too
	bool peerq = false;
	bool revocable = false;
	std::uint64_t page_size = 0;
	std::uint64_t base = 0;    // the registered (page aligned) start
	std::string reason;  // why not direct
};

class PeerKernel {
public:
	virtual ~PeerKernel() = default;
	virtual int providers(std::vector<KernelProvider> &out) = 0;  // 0 or -errno
	// @device: the caller says the memory belongs to an accelerator
	// (provider AUTO either way). 0 or -errno, @why the kernel's reason.
	virtual int register_buffer(const void *addr, std::uint64_t len, bool device,
				    KernelRegistration &out, std::string &why) = 0;
	// The pages of a dma-buf holding [@offset, @offset + @len)
	// (FXBLK_PEER_REG_DMABUF, provider AUTO); out.base: the buffer offset
	// where the registration starts. 0 or -errno, @why the kernel's reason.
	virtual int register_dmabuf(int dmabuf_fd, std::uint64_t offset, std::uint64_t len,
				    KernelRegistration &out, std::string &why)
	{
		(void)dmabuf_fd, (void)offset, (void)len, (void)out;
		why = "this kernel interface has no dma-buf registration";
		return -EOPNOTSUPP;
	}
	virtual int deregister(std::uint64_t handle) = 0;
	// Synchronous FXBLK_PEER_IOC_RW: @len bytes between the registration
	// (at @buf_off from its base) and the fxblk disk open as @fd. 0 or
	// -errno (EREMOTEIO: stage it; ENOTBLK: not an fxblk disk).
	virtual int rw(std::uint64_t handle, bool write, int fd, std::uint64_t buf_off,
		       std::uint64_t dev_off, std::uint64_t len) = 0;
	virtual int abi() const = 0;
	// Most bytes one RW moves (FXBLK_PEER_MAX_RW): rw() splits longer ones.
	virtual std::uint64_t max_rw() const;
};

// Opens the control node; null with @why ("… absent", "permission denied",
// "ABI n, libfxio speaks m") when it cannot be used.
std::unique_ptr<PeerKernel> open_peer_kernel(std::string &why);

}  // namespace fxio
