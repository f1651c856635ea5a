// Finding fxblk members among the block devices present: enumerates disks
// with libudev, reads each one's label (label::read_member) and identity
// (label::identity_of). The policy of what to do with them is in
// assembly_plan.hpp.
#pragma once

#include "assembly_plan.hpp"

#include <iosfwd>
#include <string>
#include <vector>

namespace fxctl {

// Kernel names ("nvme0n1") of the whole disks present, fxblk volumes (fxN)
// and disks of size 0 left out, in udev's order.
std::vector<std::string> present_disks();

// The label and identity of one device. A device that cannot be read
// yields a Candidate without a label; why is written to @log (verbose
// callers pass their error stream, others a null stream).
Candidate read_candidate(const std::string &devname, std::ostream &log);

// read_candidate for every present disk; only members (with a label).
std::vector<Candidate> scan_members(std::ostream &log);

}  // namespace fxctl
