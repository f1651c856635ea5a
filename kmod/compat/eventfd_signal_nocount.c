/* eventfd_signal(ctx) without a count (6.8+) */
#include <linux/eventfd.h>
void fxblk_probe(struct eventfd_ctx *ctx);
void fxblk_probe(struct eventfd_ctx *ctx)
{
	eventfd_signal(ctx);
}
