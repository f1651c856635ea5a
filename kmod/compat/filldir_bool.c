/* filldir_t returns bool, true to go on (6.1+; int, 0 to go on, before) */
#include <linux/fs.h>
static bool fxblk_probe_actor(struct dir_context *ctx, const char *name,
			      int len, loff_t off, u64 ino, unsigned int type)
{
	return true;
}
void fxblk_probe(struct dir_context *ctx);
void fxblk_probe(struct dir_context *ctx)
{
	ctx->actor = fxblk_probe_actor;
}
