/* genl_family.resv_start_op (6.1+) */
#include <net/genetlink.h>
struct genl_family fxblk_probe_family = {
	.resv_start_op = 1,
};
