// fxctl: administer fxblk striped volumes.
#include "cli.hpp"
#include "error.hpp"

#include <chrono>
#include <iostream>
#include <thread>

int main(int argc, char **argv)
{
	fxctl::SystemBlockDevices blockdevs;
	fxctl::Env env(std::cout, std::cerr);
	env.blockdevs = [&]() -> fxctl::BlockDevices & { return blockdevs; };
	fxctl::SystemMemberIO members;
	env.members = [&]() -> fxctl::MemberIO & { return members; };
	env.nvme = fxctl::make_libnvme_lookup;
	env.sleep = [](double s) {
		std::this_thread::sleep_for(std::chrono::duration<double>(s));
	};
	int rc = fxctl::run(std::vector<std::string>(argv + 1, argv + argc), env);
	std::cout.flush();
	if (!std::cout)
		return rc ? rc : fxctl::exit_runtime;  // e.g. EPIPE or a full disk
	return rc;
}
