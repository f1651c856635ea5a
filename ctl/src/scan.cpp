#include "scan.hpp"

#include "error.hpp"
#include "member_io.hpp"

#include <cerrno>
#include <fmt/format.h>
#include <libudev.h>
#include <memory>
#include <ostream>

namespace fxctl {
namespace {

struct UdevFree {
	void operator()(udev *u) const noexcept { udev_unref(u); }
	void operator()(udev_enumerate *e) const noexcept { udev_enumerate_unref(e); }
	void operator()(udev_device *d) const noexcept { udev_device_unref(d); }
};
template <typename T> using UdevPtr = std::unique_ptr<T, UdevFree>;

std::string value_or_empty(const char *s)
{
	return s ? s : "";
}

}  // namespace

std::vector<std::string> present_disks()
{
	UdevPtr<udev> u(udev_new());
	if (!u)
		throw Error("cannot initialise libudev", errno_error(errno ? errno : ENOMEM));
	UdevPtr<udev_enumerate> en(udev_enumerate_new(u.get()));
	if (!en || udev_enumerate_add_match_subsystem(en.get(), "block") < 0 ||
	    udev_enumerate_add_match_property(en.get(), "DEVTYPE", "disk") < 0 ||
	    udev_enumerate_scan_devices(en.get()) < 0)
		throw Error("cannot enumerate block devices through libudev; is sysfs mounted "
			    "on /sys?", errno_error(EIO));
	std::vector<std::string> names;
	for (udev_list_entry *e = udev_enumerate_get_list_entry(en.get()); e;
	     e = udev_list_entry_get_next(e)) {
		UdevPtr<udev_device> d(
			udev_device_new_from_syspath(u.get(), udev_list_entry_get_name(e)));
		if (!d)
			continue;  // gone meanwhile
		std::string name = value_or_empty(udev_device_get_sysname(d.get()));
		std::string size = value_or_empty(udev_device_get_sysattr_value(d.get(), "size"));
		if (name.empty() || name.starts_with("fx") || size.empty() || size == "0" ||
		    !udev_device_get_devnode(d.get()))
			continue;
		names.push_back(name);
	}
	return names;
}

Candidate read_candidate(const std::string &devname, std::ostream &log)
{
	Candidate c;
	c.devname = devname;
	c.devnode = "/dev/" + devname;
	try {
		c.ml = label::read_member(c.devnode);
	} catch (const std::exception &e) {
		log << fmt::format("fxctl: skipping {}: {}\n", c.devnode, e.what());
		return c;
	}
	if (!c.ml.label)
		return c;
	try {
		SystemMemberIO io;
		for (const auto &s : io.signatures(c.devnode))
			c.signatures.push_back(describe(s));
	} catch (const std::exception &e) {
		log << fmt::format("fxctl: {}: cannot probe it for other signatures: {}\n",
				   c.devnode, e.what());
	}
	try {
		c.identity = label::identity_of(devname);
	} catch (const std::exception &e) {
		log << fmt::format("fxctl: {}: cannot read its identity: {}\n", c.devnode,
				   e.what());
	}
	return c;
}

std::vector<Candidate> scan_members(std::ostream &log)
{
	std::vector<Candidate> out;
	for (const auto &name : present_disks()) {
		Candidate c = read_candidate(name, log);
		if (c.ml.label)
			out.push_back(std::move(c));
	}
	return out;
}

}  // namespace fxctl
