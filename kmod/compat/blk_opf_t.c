/* blk_opf_t (6.0+) */
#include <linux/blk_types.h>
blk_opf_t fxblk_probe(blk_opf_t opf);
blk_opf_t fxblk_probe(blk_opf_t opf)
{
	return opf | REQ_FUA;
}
