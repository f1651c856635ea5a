// The host copy engine: memcpy on a worker thread per stream, so the
// staged pipeline overlaps O_DIRECT with copies for CPU buffers too.
#include "engine.hpp"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

namespace fxio {
namespace {

class HostStream final : public CopyStream {
public:
	HostStream() : worker_([this] { run(); }) {}
	~HostStream() override
	{
		{
			std::lock_guard lk(mu_);
			stop_ = true;
		}
		cv_.notify_all();
		worker_.join();
	}

	int submit(std::uint64_t tag, void *dst, const void *src, std::size_t n,
		   CopyDir) override
	{
		{
			std::lock_guard lk(mu_);
			queue_.push_back({tag, dst, src, n});
			++pending_;
		}
		cv_.notify_all();
		return 0;
	}

	int reap(std::vector<CopyDone> &out, bool block) override
	{
		std::unique_lock lk(mu_);
		if (block)
			cv_.wait(lk, [&] { return !done_.empty() || pending_ == 0; });
		for (auto &d : done_)
			out.push_back(d);
		done_.clear();
		return 0;
	}

private:
	struct Job {
		std::uint64_t tag;
		void *dst;
		const void *src;
		std::size_t n;
	};

	void run()
	{
		std::unique_lock lk(mu_);
		for (;;) {
			cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
			if (queue_.empty())
				return;
			Job j = queue_.front();
			queue_.pop_front();
			lk.unlock();
			std::memcpy(j.dst, j.src, j.n);
			lk.lock();
			done_.push_back({j.tag, 0});
			--pending_;
			cv_.notify_all();
		}
	}

	std::mutex mu_;
	std::condition_variable cv_;
	std::deque<Job> queue_;
	std::vector<CopyDone> done_;
	std::size_t pending_ = 0;
	bool stop_ = false;
	std::thread worker_;  // last: starts after the members above exist
};

class HostEngine final : public CopyEngine {
public:
	const char *name() const override { return "host"; }
	std::unique_ptr<CopyStream> stream() override { return std::make_unique<HostStream>(); }
};

}  // namespace

std::unique_ptr<CopyEngine> make_host_engine()
{
	return std::make_unique<HostEngine>();
}

}  // namespace fxio
