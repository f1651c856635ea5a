// Finding fxblk members among the block devices present: the disks
// BlockDevices::present_disks() lists (libudev), each one's label, other
// signatures and identity through MemberIO (both seams: unit tests drive
// assemble and incremental with fakes). The policy of what to do with them
// is in assembly_plan.hpp.
#pragma once

#include "assembly_plan.hpp"
#include "blockdev.hpp"
#include "member_io.hpp"

#include <iosfwd>
#include <string>
#include <vector>

namespace fxctl {

// The label and identity of one device. A device that cannot be read
// yields a Candidate without a label; why is written to @log (verbose
// callers pass their error stream, others a null stream).
Candidate read_candidate(MemberIO &io, const std::string &devname, std::ostream &log);

// read_candidate for every disk present; only members (with a label).
std::vector<Candidate> scan_members(BlockDevices &devs, MemberIO &io, std::ostream &log);

}  // namespace fxctl
