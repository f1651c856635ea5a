#include "pool.hpp"

#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace fxio {
namespace {

constexpr int mpol_preferred = 1;  // MPOL_PREFERRED (numaif.h, without libnuma)

// The NUMA node of the calling CPU, or -1.
int current_node()
{
	unsigned cpu = 0, node = 0;
	if (syscall(SYS_getcpu, &cpu, &node, nullptr) != 0)
		return -1;
	return static_cast<int>(node);
}

}  // namespace

BouncePool::BouncePool(std::size_t slots, std::size_t slot_bytes)
	: nslots_(slots), slot_bytes_(slot_bytes)
{
	std::size_t len = slots * slot_bytes;
	void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	base_ = static_cast<char *>(p);
	node_ = current_node();
	if (node_ >= 0 && node_ < 64) {
		unsigned long mask = 1UL << node_;
		// Best effort: a single-node host or a kernel without NUMA refuses.
		if (syscall(SYS_mbind, base_, len, mpol_preferred, &mask, 64UL, 0U) != 0)
			node_ = -1;
	}
	// Pinned, so O_DIRECT never waits on a page fault; refused above
	// RLIMIT_MEMLOCK without CAP_IPC_LOCK, then the pool still works.
	locked_ = mlock(base_, len) == 0;
	if (!locked_)
		madvise(base_, len, MADV_WILLNEED);
	for (std::size_t i = slots; i-- > 0;)
		free_.push_back(static_cast<int>(i));
}

BouncePool::~BouncePool()
{
	if (base_)
		munmap(base_, nslots_ * slot_bytes_);
}

int BouncePool::try_acquire()
{
	std::lock_guard lk(mu_);
	if (free_.empty())
		return -1;
	int s = free_.back();
	free_.pop_back();
	return s;
}

int BouncePool::acquire()
{
	std::unique_lock lk(mu_);
	cv_.wait(lk, [&] { return !free_.empty(); });
	int s = free_.back();
	free_.pop_back();
	return s;
}

void BouncePool::release(int slot)
{
	{
		std::lock_guard lk(mu_);
		free_.push_back(slot);
	}
	cv_.notify_one();
}

std::size_t BouncePool::free_slots()
{
	std::lock_guard lk(mu_);
	return free_.size();
}

}  // namespace fxio
