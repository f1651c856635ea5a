/* QUEUE_FLAG_PCI_P2PDMA and blk_queue_pci_p2pdma() (4.20 to 6.10) */
#include <linux/blkdev.h>
bool fxblk_probe(struct request_queue *q);
bool fxblk_probe(struct request_queue *q)
{
	blk_queue_flag_set(QUEUE_FLAG_PCI_P2PDMA, q);
	return blk_queue_pci_p2pdma(q);
}
