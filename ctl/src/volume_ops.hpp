// Commands that change volumes, and their policy: create (the checks of
// every member, the labels, CREATE, and undoing all of it when CREATE
// fails) and remove (DESTROY, then the members' labels), over the seams
// BlockDevices, MemberIO and Client. The layout is geometry.hpp; the
// commands' entries in the table are in cli.cpp.
#pragma once

#include "command.hpp"

namespace fxctl {

// The name rule of create and rename: the kernel's (FXBLK_NAME_CHARS) and
// not a disk name (fxN). Throws UsageError saying why.
void check_name(const std::string &name);

int cmd_create(Ctx &ctx);
int cmd_remove(Ctx &ctx);

// DESTROY @v by index and name (the kernel refuses if the name now belongs
// to another volume); EBUSY and ENOENT become messages with the fix.
void destroy_volume(Client &c, const Volume &v, bool force);

}  // namespace fxctl
