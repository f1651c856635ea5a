// A generic netlink socket bound to family "fxblk", with extended acks on,
// shared by fxctl's client and the fxblk-nltest tool.
#pragma once

#include "codec.hpp"

#include <functional>
#include <memory>
#include <netlink/socket.h>
#include <string>

namespace fxctl {

struct nl_sock_deleter {
	void operator()(nl_sock *s) const noexcept { nl_socket_free(s); }
};
using sock_ptr = std::unique_ptr<nl_sock, nl_sock_deleter>;

class GenlSocket {
public:
	// Throws ModuleNotLoaded if the family is absent, Error otherwise.
	GenlSocket();

	int family() const noexcept { return family_; }

	struct Result {
		int err = 0;         // positive errno from the kernel, 0 = success
		std::string extack;  // NLMSGERR_ATTR_MSG, if the kernel set one
	};

	// Sends @msg (header completed by libnl, ack requested) and calls
	// @on_reply for every reply message until the ack or NLMSG_DONE.
	// Kernel errors are returned; transport errors are thrown.
	Result transact(nl_msg *msg, const std::function<void(nlmsghdr *)> &on_reply);

	// Joins multicast group @group of family "fxblk" and turns off sequence
	// checks (events carry seq 0). Throws Error if the group is unknown.
	void join(const char *group);

	// Waits up to @timeout_ms (-1: forever) for messages and calls
	// @on_msg for each one of a datagram. Returns false on timeout, true
	// after a datagram; sets @overflow if the kernel dropped messages
	// (ENOBUFS). Transport errors are thrown.
	bool receive(int timeout_ms, const std::function<void(nlmsghdr *)> &on_msg,
		     bool &overflow);

private:
	sock_ptr sock_;
	int family_ = -1;
};

}  // namespace fxctl

namespace fxctl {
// The extack message of an NLMSG_ERROR message (empty if none). Exposed for
// the unit tests.
std::string parse_extack(const nlmsghdr *nlh);
}  // namespace fxctl
