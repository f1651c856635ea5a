// SPDX-License-Identifier: GPL-2.0
/*
 * A stand-in for ROCm's HIP runtime library, for test_fxio_hip only: the
 * file and its DT_SONAME are libamdhip64.so.6, as ROCm 6 installs it
 * (ROCm/clr hipamd/CMakeLists.txt: SOVERSION is HIP's major version; the
 * unversioned libamdhip64.so is the development package's symlink, absent
 * here), and the test program has it as DT_NEEDED, the way an application
 * built with hipcc or PyTorch's libtorch_hip.so has it.
 *
 * Each function has the prototype of ROCm's include/hip/hip_runtime_api.h
 * (github.com/ROCm/HIP, ROCm/clr from 6.x), with hipError_t an int enum
 * (hipSuccess 0, hipErrorInvalidValue 1, hipErrorNotReady 600), handles as
 * pointers and hipMemcpyKind an int (HostToDevice 1, DeviceToHost 2). It
 * has no GPU: "device memory" is host memory from hipMalloc, which
 * hipPointerGetAttributes reports as hipMemoryTypeDevice (2, ROCm 6's
 * enum; any other pointer is hipMemoryTypeUnregistered, 0, with
 * hipSuccess, as ROCm 6 answers for unregistered host memory), copies are
 * memcpy and complete at once (hipEventQuery: hipSuccess). hipRuntimeGetVersion
 * says 60400000 (HIP_VERSION of ROCm 6.4). fakehip_copies() counts copies,
 * so a test sees that libfxio copied through this library.
 */
#include <stdlib.h>
#include <string.h>

enum { hip_success = 0, hip_invalid_value = 1, hip_memory_allocation = 2 };

/* hipPointerAttribute_t (ROCm 6): type, device, devicePointer, hostPointer,
 * isManaged, allocationFlags */
struct hip_pointer_attribute {
	int type;
	int device;
	void *device_pointer;
	void *host_pointer;
	int is_managed;
	unsigned int allocation_flags;
};

#define MAX_ALLOCS 64
static struct {
	char *p;
	size_t n;
} allocs[MAX_ALLOCS];
static int copies;
static int stream_token, event_token;

int hipGetDeviceCount(int *count)
{
	if (!count)
		return hip_invalid_value;
	*count = 1;
	return hip_success;
}

int hipRuntimeGetVersion(int *version)
{
	if (!version)
		return hip_invalid_value;
	*version = 60400000;
	return hip_success;
}

int hipMalloc(void **ptr, size_t size)
{
	int i;

	if (!ptr)
		return hip_invalid_value;
	for (i = 0; i < MAX_ALLOCS; i++) {
		if (allocs[i].p)
			continue;
		allocs[i].p = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
		if (!allocs[i].p)
			return hip_memory_allocation;
		allocs[i].n = size;
		*ptr = allocs[i].p;
		return hip_success;
	}
	return hip_memory_allocation;
}

int hipFree(void *ptr)
{
	int i;

	if (!ptr)
		return hip_success;
	for (i = 0; i < MAX_ALLOCS; i++) {
		if (allocs[i].p == ptr) {
			free(ptr);
			allocs[i].p = NULL;
			return hip_success;
		}
	}
	return hip_invalid_value;
}

int hipPointerGetAttributes(struct hip_pointer_attribute *attr, const void *ptr)
{
	const char *c = ptr;
	int i;

	if (!attr || !ptr)
		return hip_invalid_value;
	memset(attr, 0, sizeof(*attr));
	attr->device = -1;
	for (i = 0; i < MAX_ALLOCS; i++) {
		if (allocs[i].p && c >= allocs[i].p && c < allocs[i].p + allocs[i].n) {
			attr->type = 2;	/* hipMemoryTypeDevice */
			attr->device = 0;
			attr->device_pointer = (void *)ptr;
			return hip_success;
		}
	}
	return hip_success;	/* hipMemoryTypeUnregistered */
}

int hipStreamCreate(void **stream)
{
	if (!stream)
		return hip_invalid_value;
	*stream = &stream_token;
	return hip_success;
}

int hipStreamDestroy(void *stream)
{
	return stream == &stream_token ? hip_success : hip_invalid_value;
}

int hipMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *stream)
{
	if (kind < 0 || kind > 4 || (stream && stream != &stream_token))
		return hip_invalid_value;
	memcpy(dst, src, n);
	__atomic_add_fetch(&copies, 1, __ATOMIC_RELAXED);
	return hip_success;
}

int hipEventCreateWithFlags(void **event, unsigned int flags)
{
	(void)flags;
	if (!event)
		return hip_invalid_value;
	*event = &event_token;
	return hip_success;
}

int hipEventRecord(void *event, void *stream)
{
	(void)stream;
	return event == &event_token ? hip_success : hip_invalid_value;
}

int hipEventQuery(void *event)
{
	return event == &event_token ? hip_success : hip_invalid_value;
}

int hipEventSynchronize(void *event)
{
	return hipEventQuery(event);
}

int hipEventDestroy(void *event)
{
	return hipEventQuery(event);
}

int fakehip_copies(void)
{
	return __atomic_load_n(&copies, __ATOMIC_RELAXED);
}
