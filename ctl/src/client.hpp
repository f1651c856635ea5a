// The module's netlink API as fxctl sees it. The real implementation talks
// libnl-genl; unit tests substitute a fake. Kernel errors are thrown as
// KernelError (errno + extack), transport failures as Error.
#pragma once

#include "model.hpp"

#include <memory>
#include <optional>
#include <vector>

namespace fxctl {

// A subscription to the module's "events" multicast group.
class EventSource {
public:
	virtual ~EventSource() = default;
	// The next event, waiting at most @timeout seconds (forever if absent);
	// none when the time ran out.
	// Throws ModuleNotLoaded when the module goes away.
	virtual std::optional<Event> next(std::optional<double> timeout) = 0;
	// Whether events were dropped (receive buffer overflow) since the last
	// call; resets.
	virtual bool lost() = 0;
};

class Client {
public:
	virtual ~Client() = default;
	virtual ModuleStatus status() = 0;
	virtual Volume create(const CreateRequest &req) = 0;
	// @force: FXBLK_ATTR_FORCE, remove even while open (FXBLK_FEAT_HEALTH).
	virtual void destroy(const VolumeRef &ref, bool force) = 0;
	virtual Volume get(const VolumeRef &ref) = 0;
	virtual std::vector<Volume> list() = 0;
	virtual Volume stats(const VolumeRef &ref) = 0;
	// Joins the "events" group; needs no privilege. Throws Error if the
	// module has no such group (older module).
	virtual std::unique_ptr<EventSource> subscribe() = 0;
};

// Sets @req's UUID (the labels' volume UUID) if the module takes one
// (FXBLK_FEAT_UUID); an older module, which would refuse the attribute,
// gets none and its volume simply has no UUID.
void take_uuid(Client &c, CreateRequest &req, const std::array<std::uint8_t, FXBLK_UUID_LEN> &uuid);

// Connects to family "fxblk"; throws ModuleNotLoaded if it is not registered.
std::unique_ptr<Client> make_genl_client();

}  // namespace fxctl
