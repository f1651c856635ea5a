/* BLK_FEAT_PCI_P2PDMA in queue_limits.features (6.11+) */
#include <linux/blkdev.h>
void fxblk_probe(struct queue_limits *lim);
void fxblk_probe(struct queue_limits *lim)
{
	lim->features |= BLK_FEAT_PCI_P2PDMA;
}
