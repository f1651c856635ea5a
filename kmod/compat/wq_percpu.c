/* WQ_PERCPU (6.17+): alloc_workqueue() warns unless WQ_PERCPU or WQ_UNBOUND */
#include <linux/workqueue.h>
unsigned int fxblk_probe(void);
unsigned int fxblk_probe(void)
{
	return WQ_PERCPU;
}
