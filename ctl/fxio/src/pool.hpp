// The staged path's bounce pool: slots of equal size in one mapping,
// aligned for O_DIRECT, mlock'ed (pinned) when RLIMIT_MEMLOCK allows and
// bound to the NUMA node of the CPU that created it. Slots are handed out
// one at a time; a pipeline waits for a slot when all are in use.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace fxio {

class BouncePool {
public:
	BouncePool(std::size_t slots, std::size_t slot_bytes);
	~BouncePool();
	BouncePool(const BouncePool &) = delete;
	BouncePool &operator=(const BouncePool &) = delete;

	bool ok() const { return base_ != nullptr; }
	std::size_t slots() const { return nslots_; }
	std::size_t slot_bytes() const { return slot_bytes_; }
	bool locked() const { return locked_; }
	int numa_node() const { return node_; }

	// A free slot index, or -1 when none (try_acquire) ; acquire waits.
	int try_acquire();
	int acquire();
	void release(int slot);
	std::size_t free_slots();
	char *slot(int i) const { return base_ + static_cast<std::size_t>(i) * slot_bytes_; }

private:
	std::size_t nslots_, slot_bytes_;
	char *base_ = nullptr;
	bool locked_ = false;
	int node_ = -1;
	std::mutex mu_;
	std::condition_variable cv_;
	std::vector<int> free_;
};

}  // namespace fxio
