// Netlink message encoding and decoding for family "fxblk", kept apart from
// the socket so unit tests can round-trip messages in memory.
#pragma once

#include "model.hpp"

#include <memory>
#include <netlink/msg.h>

namespace fxctl {

struct nl_msg_deleter {
	void operator()(nl_msg *m) const noexcept { nlmsg_free(m); }
};
using msg_ptr = std::unique_ptr<nl_msg, nl_msg_deleter>;

// A generic netlink request header for @cmd; attributes go after it.
// @size 0 means libnl's default (a page), plenty for any request.
msg_ptr new_genl_msg(int family, std::uint8_t cmd, int flags = 0, std::size_t size = 0);

// Request side (what fxctl sends).
// NAME, INDEX or both (then the kernel checks they name the same volume).
void put_volume_ref(nl_msg *msg, const VolumeRef &ref);
// DESTROY: the reference plus FXBLK_ATTR_FORCE when @force.
void put_destroy(nl_msg *msg, const VolumeRef &ref, bool force);
void put_create(nl_msg *msg, const CreateRequest &req);

// Reply side (what the module sends). Throws Error on malformed input.
ModuleStatus decode_status(nlmsghdr *nlh);
Volume decode_volume(nlmsghdr *nlh);
Event decode_event(nlmsghdr *nlh);  // FXBLK_CMD_EVENT, "events" group

// The mirror images, as the module builds them: used by the unit tests to
// check that encoder and decoder agree.
void put_status(nl_msg *msg, const ModuleStatus &st);
void put_volume(nl_msg *msg, const Volume &vol);
void put_event(nl_msg *msg, const Event &ev);
CreateRequest decode_create(nlmsghdr *nlh);

}  // namespace fxctl
