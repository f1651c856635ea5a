// Volumes from their labels: `assemble` (by name, UUID or all), `stop` and
// `incremental` (one device at a time, for udev). The commands' entries in
// the table are in cli.cpp; the policy is assembly_plan.hpp.
#pragma once

#include "command.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace fxctl {

struct Candidate;
struct Plan;
namespace label {
struct Label;
}

// Where `incremental` records the members it has seen: RUN_DIR/<uuid>/<disk>,
// serialised per volume by flock on RUN_DIR/<uuid>.lock (so a member that
// stalls the assembly of its volume delays no other volume).
// FXBLK_RUN_DIR overrides (tests).
inline constexpr const char *default_run_dir = "/run/fxblk";
std::filesystem::path run_dir();

// An exclusive flock on @path, held for the object's lifetime. Throws Error
// naming the file. waited(): another process held it first (what was read
// before taking it may be stale).
class RunLock {
public:
	explicit RunLock(const std::filesystem::path &path);
	~RunLock();
	RunLock(const RunLock &) = delete;
	RunLock &operator=(const RunLock &) = delete;
	bool waited() const { return waited_; }

private:
	int fd_ = -1;
	bool waited_ = false;
};

// The volume's lock (RUN_DIR/<uuid>.lock), held by incremental, assemble
// and create. Create holds it from before the labels are written until the
// volume exists, so that an incremental run for an event the label writes
// cause finds the volume running instead of creating it first.
// volume_lock throws Error naming the file; try_volume_lock is best effort
// (none when RUN_DIR is not writable).
std::unique_ptr<RunLock> volume_lock(const std::array<std::uint8_t, 16> &uuid);
std::unique_ptr<RunLock> try_volume_lock(const std::array<std::uint8_t, 16> &uuid);
// The lock of running volume @v, held by stop and remove from before its
// DESTROY: found by the UUID the kernel reports (FXBLK_FEAT_UUID), so no
// member is read (a stalled one would hold up the removal). None when the
// module reports no UUID (an older module, a volume created without one)
// or RUN_DIR is not writable.
std::unique_ptr<RunLock> running_volume_lock(const Volume &v);
// After a volume's labels are gone (remove, a create that failed): its lock
// file and records under RUN_DIR are removed, under its lock, so that
// /run does not keep a file per volume ever created. Best effort.
void forget_volume(const std::array<std::uint8_t, 16> &uuid);

// Where scans report unreadable devices: stderr with -v, else nowhere.
std::ostream &scan_log(const Ctx &ctx);
// "\"kv\" (<uuid>)": a volume in messages.
std::string volume_object(const label::Label &l);
// "nvme2n1 nvme0n1": the devices' names, space-separated.
std::string devnames(const std::vector<Candidate> &cands);

// Writes @next to every member of complete plan @p (p.ordered, stripe
// order; member_index set per member) at the generation after the
// reference's (review M3: every rewrite of the set bumps it, so a member
// that missed it is refused as stale), refreshes incremental's records of
// them, and makes @next the plan's reference. Call with the volume's lock
// held and the volume not running. A failed write throws Error naming the
// member, what the others carry now, and then @fix.
void rewrite_members(Ctx &ctx, Plan &p, label::Label next, const std::string &fix);

void assemble_options(boost::program_options::options_description &,
		      boost::program_options::options_description &hidden,
		      boost::program_options::positional_options_description &);
void stop_options(boost::program_options::options_description &,
		  boost::program_options::options_description &hidden,
		  boost::program_options::positional_options_description &);
void incremental_options(boost::program_options::options_description &,
			 boost::program_options::options_description &hidden,
			 boost::program_options::positional_options_description &);

int cmd_assemble(Ctx &ctx);
int cmd_stop(Ctx &ctx);
int cmd_incremental(Ctx &ctx);

}  // namespace fxctl
