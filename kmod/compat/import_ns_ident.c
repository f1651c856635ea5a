/* MODULE_IMPORT_NS(NS) takes an identifier (until 6.12), not "NS" (6.13+) */
#include <linux/module.h>
MODULE_IMPORT_NS(DMA_BUF);
