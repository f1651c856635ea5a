/* FOLL_PCI_P2PDMA: GUP may return PCI P2PDMA pages (6.2+) */
#include <linux/mm.h>
unsigned int fxblk_probe(void);
unsigned int fxblk_probe(void)
{
	return FOLL_PCI_P2PDMA;
}
