#include "client.hpp"
#include "error.hpp"
#include "genl_socket.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/handlers.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>
#include <vector>

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

namespace fxctl {
namespace {

struct nl_cb_deleter {
	void operator()(nl_cb *cb) const noexcept { nl_cb_put(cb); }
};
using cb_ptr = std::unique_ptr<nl_cb, nl_cb_deleter>;

struct transact_state {
	const std::function<void(nlmsghdr *)> *on_reply;
	GenlSocket::Result result;
	bool done = false;
	std::exception_ptr failure;  // never unwind through libnl's C frames
};

int on_valid(nl_msg *msg, void *arg)
{
	auto *st = static_cast<transact_state *>(arg);
	try {
		(*st->on_reply)(nlmsg_hdr(msg));
	} catch (...) {
		st->failure = std::current_exception();
		st->done = true;
		return NL_STOP;
	}
	return NL_OK;
}

int on_ack(nl_msg *, void *arg)
{
	static_cast<transact_state *>(arg)->done = true;
	return NL_STOP;
}

int on_finish(nl_msg *msg, void *arg)
{
	auto *st = static_cast<transact_state *>(arg);
	// A dump that fails part-way reports the error in NLMSG_DONE's payload.
	nlmsghdr *nlh = nlmsg_hdr(msg);
	if (nlmsg_datalen(nlh) >= static_cast<int>(sizeof(int))) {
		int err;
		std::memcpy(&err, nlmsg_data(nlh), sizeof(err));
		if (err < 0)
			st->result.err = -err;
	}
	st->done = true;
	return NL_STOP;
}

int on_error(sockaddr_nl *, nlmsgerr *e, void *arg)
{
	auto *st = static_cast<transact_state *>(arg);
	// libnl hands us the payload; the header sits right before it.
	const auto *nlh = reinterpret_cast<const nlmsghdr *>(
		reinterpret_cast<const char *>(e) - NLMSG_HDRLEN);
	st->result.err = -e->error;
	st->result.extack = parse_extack(nlh);
	st->done = true;
	return NL_STOP;
}

}  // namespace

std::string parse_extack(const nlmsghdr *nlh)
{
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return {};
	const auto *e = static_cast<const nlmsgerr *>(NLMSG_DATA(nlh));
	std::size_t payload = nlh->nlmsg_len - NLMSG_HDRLEN;
	std::size_t off = sizeof(*e);
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;  // the echoed request
	if (payload < sizeof(*e) || off > payload)
		return {};
	nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	auto *head = reinterpret_cast<nlattr *>(
		const_cast<char *>(reinterpret_cast<const char *>(e) + off));
	if (nla_parse(tb, NLMSGERR_ATTR_MAX, head, static_cast<int>(payload - off), nullptr) < 0)
		return {};
	nlattr *m = tb[NLMSGERR_ATTR_MSG];
	if (!m || nla_len(m) <= 0)
		return {};
	const char *s = static_cast<const char *>(nla_data(m));
	return std::string(s, strnlen(s, static_cast<std::size_t>(nla_len(m))));
}

GenlSocket::GenlSocket() : sock_(nl_socket_alloc())
{
	if (!sock_)
		throw Error("out of memory allocating a netlink socket", nl_error(NLE_NOMEM));
	if (int rc = genl_connect(sock_.get()); rc < 0)
		throw Error(fmt::format("cannot open a generic netlink socket: {}; "
					"is this kernel built with CONFIG_NETLINK?",
					nl_geterror(rc)),
			    nl_error(rc));
	// Replies with large volumes exceed a page: let libnl size the buffer.
	nl_socket_enable_msg_peek(sock_.get());
	// Extended acks carry the kernel's explanation of an error. Capped acks
	// don't echo our request back. Both are best effort (old kernels).
	int one = 1;
	int fd = nl_socket_get_fd(sock_.get());
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));

	family_ = genl_ctrl_resolve(sock_.get(), FXBLK_GENL_NAME);
	if (family_ == -NLE_OBJ_NOTFOUND)
		throw ModuleNotLoaded();
	if (family_ < 0)
		throw Error(fmt::format("cannot look up netlink family '{}': {}",
					FXBLK_GENL_NAME, nl_geterror(family_)),
			    nl_error(family_));
}

GenlSocket::Result GenlSocket::transact(nl_msg *msg,
					const std::function<void(nlmsghdr *)> &on_reply)
{
	cb_ptr cb(nl_cb_alloc(NL_CB_DEFAULT));
	if (!cb)
		throw Error("out of memory allocating netlink callbacks", nl_error(NLE_NOMEM));
	transact_state st{&on_reply, {}, false, nullptr};
	nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, on_valid, &st);
	nl_cb_set(cb.get(), NL_CB_ACK, NL_CB_CUSTOM, on_ack, &st);
	nl_cb_set(cb.get(), NL_CB_FINISH, NL_CB_CUSTOM, on_finish, &st);
	nl_cb_err(cb.get(), NL_CB_CUSTOM, on_error, &st);

	if (int rc = nl_send_auto(sock_.get(), msg); rc < 0)
		throw Error(fmt::format("cannot send to the fxblk module: {}", nl_geterror(rc)),
			    nl_error(rc));
	while (!st.done) {
		int rc = nl_recvmsgs(sock_.get(), cb.get());
		if (st.failure)
			std::rethrow_exception(st.failure);
		if (st.done)
			break;
		if (rc < 0)
			throw Error(fmt::format("cannot receive from the fxblk module: {}",
						nl_geterror(rc)),
				    nl_error(rc));
	}
	return st.result;
}

namespace {

struct receive_state {
	const std::function<void(nlmsghdr *)> *on_msg;
	std::exception_ptr failure;
};

int on_event(nl_msg *msg, void *arg)
{
	auto *st = static_cast<receive_state *>(arg);
	try {
		(*st->on_msg)(nlmsg_hdr(msg));
	} catch (...) {
		st->failure = std::current_exception();
		return NL_STOP;
	}
	return NL_OK;
}

int no_seq_check(nl_msg *, void *)
{
	return NL_OK;
}

}  // namespace

void GenlSocket::join(const char *group)
{
	int grp = genl_ctrl_resolve_grp(sock_.get(), FXBLK_GENL_NAME, group);
	if (grp == -NLE_OBJ_NOTFOUND)
		throw Error(fmt::format("the loaded fxblk module has no '{}' multicast group; "
					"update fxblk.ko (see 'fxctl version')",
					group),
			    errno_error(EOPNOTSUPP));
	if (grp < 0)
		throw Error(fmt::format("cannot look up multicast group '{}' of '{}': {}", group,
					FXBLK_GENL_NAME, nl_geterror(grp)),
			    nl_error(grp));
	// nlctrl announces the family's removal (module unloaded) here.
	int ctrl = genl_ctrl_resolve_grp(sock_.get(), "nlctrl", "notify");
	nl_socket_disable_seq_check(sock_.get());
	// Bursts (many members failing at once) must not overflow the queue.
	nl_socket_set_buffer_size(sock_.get(), 1 << 20, 0);
	if (int rc = nl_socket_add_membership(sock_.get(), grp); rc < 0)
		throw Error(fmt::format("cannot join the fxblk '{}' multicast group: {}", group,
					nl_geterror(rc)),
			    nl_error(rc));
	if (ctrl >= 0)
		nl_socket_add_membership(sock_.get(), ctrl);  // best effort
	if (int rc = nl_socket_set_nonblocking(sock_.get()); rc < 0)
		throw Error(fmt::format("cannot make the netlink socket non-blocking: {}",
					nl_geterror(rc)),
			    nl_error(rc));
}

bool GenlSocket::receive(int timeout_ms, const std::function<void(nlmsghdr *)> &on_msg,
			 bool &overflow)
{
	pollfd p{nl_socket_get_fd(sock_.get()), POLLIN, 0};
	int n = poll(&p, 1, timeout_ms);
	if (n < 0 && errno == EINTR)
		return false;
	if (n < 0)
		throw Error(fmt::format("cannot wait for fxblk events: {}", std::strerror(errno)),
			    errno_error(errno));
	if (n == 0)
		return false;
	cb_ptr cb(nl_cb_alloc(NL_CB_DEFAULT));
	if (!cb)
		throw Error("out of memory allocating netlink callbacks", nl_error(NLE_NOMEM));
	receive_state st{&on_msg, nullptr};
	nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, on_event, &st);
	nl_cb_set(cb.get(), NL_CB_SEQ_CHECK, NL_CB_CUSTOM, no_seq_check, nullptr);
	int rc = nl_recvmsgs(sock_.get(), cb.get());
	if (st.failure)
		std::rethrow_exception(st.failure);
	// libnl maps ENOBUFS (the kernel dropped messages) to NLE_NOMEM.
	if (rc == -NLE_NOMEM) {
		overflow = true;
		return true;
	}
	if (rc == -NLE_AGAIN)
		return false;
	if (rc < 0)
		throw Error(fmt::format("cannot receive fxblk events: {}", nl_geterror(rc)),
			    nl_error(rc));
	return true;
}

namespace {

// Events as they arrive; other messages of the group (none today) are
// ignored, nlctrl's "family removed" ends the stream.
class GenlEventSource final : public EventSource {
public:
	GenlEventSource() { sock_.join(FXBLK_GENL_MCAST_EVENTS); }

	std::optional<Event> next(std::optional<double> timeout) override
	{
		using clock = std::chrono::steady_clock;
		auto deadline = clock::now() + std::chrono::duration_cast<clock::duration>(
							 std::chrono::duration<double>(timeout.value_or(0)));
		for (;;) {
			if (!queue_.empty()) {
				Event ev = std::move(queue_.front());
				queue_.erase(queue_.begin());
				return ev;
			}
			int ms = -1;
			if (timeout) {
				auto left = std::chrono::ceil<std::chrono::milliseconds>(
					deadline - clock::now());
				if (left.count() <= 0)
					return std::nullopt;
				ms = static_cast<int>(std::min<long long>(left.count(), 1 << 30));
			}
			// Timeouts, signals and overflows: the deadline decides.
			sock_.receive(ms, [this](nlmsghdr *nlh) { take(nlh); }, lost_);
		}
	}

	bool lost() override { return std::exchange(lost_, false); }

private:
	GenlSocket sock_;
	std::vector<Event> queue_;  // one datagram may hold several events
	bool lost_ = false;

	void take(nlmsghdr *nlh)
	{
		if (nlh->nlmsg_type == GENL_ID_CTRL) {
			const auto *g = static_cast<const genlmsghdr *>(nlmsg_data(nlh));
			nlattr *tb[CTRL_ATTR_MAX + 1];
			if (g->cmd == CTRL_CMD_DELFAMILY &&
			    genlmsg_parse(nlh, 0, tb, CTRL_ATTR_MAX, nullptr) == 0 &&
			    tb[CTRL_ATTR_FAMILY_ID] &&
			    nla_get_u16(tb[CTRL_ATTR_FAMILY_ID]) == sock_.family())
				throw ModuleNotLoaded("the fxblk module was unloaded; no more events");
			return;
		}
		if (nlh->nlmsg_type != sock_.family())
			return;
		const auto *g = static_cast<const genlmsghdr *>(nlmsg_data(nlh));
		if (g->cmd == FXBLK_CMD_EVENT)
			queue_.push_back(decode_event(nlh));
	}
};

class GenlClient final : public Client {
public:
	ModuleStatus status() override
	{
		ModuleStatus st;
		bool got = false;
		run(FXBLK_CMD_STATUS, 0, "query the fxblk module", nullptr,
		    [&](nlmsghdr *nlh) { st = decode_status(nlh); got = true; });
		if (!got)
			throw Error("the fxblk module sent no status reply; check dmesg");
		return st;
	}

	Volume create(const CreateRequest &req) override
	{
		std::optional<Volume> vol;
		run(FXBLK_CMD_CREATE, 0, fmt::format("create \"{}\"", req.name),
		    [&](nl_msg *m) { put_create(m, req); },
		    [&](nlmsghdr *nlh) { vol = decode_volume(nlh); });
		// The module replies with the new volume; ask if it only acked.
		Volume v = vol ? *vol : get(VolumeRef{std::nullopt, req.name});
		scan_partitions(v.disk);
		return v;
	}

	void destroy(const VolumeRef &ref, bool force) override
	{
		// A module that acks before the teardown ends says when the
		// volume is gone with its DESTROYED event: listen before asking.
		std::unique_ptr<GenlEventSource> events;
		if (status().features & FXBLK_FEAT_ASYNC_DESTROY)
			events = std::make_unique<GenlEventSource>();
		run(FXBLK_CMD_DESTROY, 0, fmt::format("remove {}", ref.display()),
		    [&](nl_msg *m) { put_destroy(m, ref, force); }, [](nlmsghdr *) {});
		if (events)
			wait_destroyed(*events, ref);
	}

	Volume get(const VolumeRef &ref) override { return one(FXBLK_CMD_GET, ref); }
	Volume stats(const VolumeRef &ref) override { return one(FXBLK_CMD_STATS, ref); }

	std::unique_ptr<EventSource> subscribe() override
	{
		return std::make_unique<GenlEventSource>();
	}

	std::vector<Volume> list() override
	{
		std::vector<Volume> vols;
		run(FXBLK_CMD_GET, NLM_F_DUMP, "list volumes", nullptr,
		    [&](nlmsghdr *nlh) { vols.push_back(decode_volume(nlh)); });
		return vols;
	}

private:
	GenlSocket sock_;

	// The module leaves the partition scan of a new disk to its first
	// opener (CREATE must not wait for member I/O): be that opener, so
	// that /dev/fxNpM exist when create returns, as they did before. Best
	// effort: without a device node udev's open does it.
	static void scan_partitions(const std::string &disk)
	{
		if (disk.empty())
			return;
		int fd = ::open(("/dev/" + disk).c_str(), O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			::close(fd);
	}

	// Until the DESTROYED event of @ref: the members are closed and the
	// index is free, as when DESTROY used to return. The teardown waits
	// for I/O in flight (up to nvme's ctrl_loss_tmo); interrupting fxctl
	// leaves it running. If events were lost (receive buffer overflow),
	// the disk's disappearance from sysfs is the best sign left.
	static void wait_destroyed(GenlEventSource &events, const VolumeRef &ref)
	{
		bool lost = false;
		for (;;) {
			std::optional<Event> ev = events.next(1.0);
			if (ev && ev->type == FXBLK_EVENT_DESTROYED && ev->name == ref.name &&
			    (!ref.index || ev->index == ref.index))
				return;
			lost = events.lost() || lost;
			if (lost && ref.index &&
			    ::access(fmt::format("/sys/block/fx{}", *ref.index).c_str(), F_OK) != 0)
				return;
		}
	}

	Volume one(std::uint8_t cmd, const VolumeRef &ref)
	{
		std::optional<Volume> vol;
		run(cmd, 0, fmt::format("query {}", ref.display()),
		    [&](nl_msg *m) { put_volume_ref(m, ref); },
		    [&](nlmsghdr *nlh) { vol = decode_volume(nlh); });
		if (!vol)
			throw Error(fmt::format("the fxblk module sent no reply about {}; check dmesg",
						ref.display()));
		return *vol;
	}

	void run(std::uint8_t cmd, int flags, const std::string &what,
		 const std::function<void(nl_msg *)> &fill,
		 const std::function<void(nlmsghdr *)> &on_reply)
	{
		msg_ptr msg = new_genl_msg(sock_.family(), cmd, flags);
		if (fill)
			fill(msg.get());
		auto r = sock_.transact(msg.get(), on_reply);
		if (r.err)
			throw KernelError(r.err, r.extack,
					  fmt::format("cannot {}: {}{}", what, std::strerror(r.err),
						      r.extack.empty() ? "" : " (" + r.extack + ")"));
	}
};

}  // namespace

std::unique_ptr<Client> make_genl_client()
{
	return std::make_unique<GenlClient>();
}

void take_uuid(Client &c, CreateRequest &req, const std::array<std::uint8_t, FXBLK_UUID_LEN> &uuid)
{
	if (c.status().features & FXBLK_FEAT_UUID)
		req.uuid = uuid;
}

}  // namespace fxctl
