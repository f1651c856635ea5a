/* Control: compiles against every kernel; if it fails, no probe result counts. */
#include <linux/blkdev.h>
#include <linux/bio.h>
#include <net/genetlink.h>
unsigned int fxblk_probe(struct bio *bio);
unsigned int fxblk_probe(struct bio *bio)
{
	return bio_sectors(bio);
}
