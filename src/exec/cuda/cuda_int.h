/* Private to src/exec/cuda/: the operator timer (CUPTI activity records, or CUDA events where
 * CUPTI cannot be used) and the driver's sensors (NVML, loaded at run time). */
#ifndef SS_CUDA_CUDA_INT_H
#define SS_CUDA_CUDA_INT_H

#include "exec/exec.h"

typedef struct cu_timer cu_timer;

/* Start timing on stream. With want_cupti, CUPTI's activity API is tried first; if it cannot
 * be enabled (no permission, another profiler attached) CUDA events are used and *note says
 * why. kind_out gets "cupti" or "events". 0, SS_ENOMEM or SS_EIO (eb set). */
int cu_timer_open(cu_timer **t_out, void *stream, int want_cupti, char kind_out[16],
                  char note[160], ss_errbuf *eb);
/* Everything enqueued on the stream between begin and end belongs to the operator tag. */
int cu_timer_begin(cu_timer *t, uint64_t tag, ss_errbuf *eb);
int cu_timer_end(cu_timer *t, ss_errbuf *eb);
/* Call after the device has finished the work: the samples of every operator timed since the
 * last collect, in begin order (owned by the timer, valid until the next begin or collect). */
int cu_timer_collect(cu_timer *t, const exec_sample **out, size_t *n_out, ss_errbuf *eb);
void cu_timer_close(cu_timer **t);

/* NVML, opened with dlopen so that nothing is needed at link time. */
typedef struct cu_nvml cu_nvml;
/* NULL when NVML is unavailable. pci_bus_id is cudaDeviceGetPCIBusId's string. */
cu_nvml *cu_nvml_open(const char *pci_bus_id);
void cu_nvml_read(cu_nvml *n, exec_sensors *out);
/* Driver version and UUID strings ("" when unknown). */
void cu_nvml_ids(cu_nvml *n, char *driver, size_t driver_len, char *uuid, size_t uuid_len);
void cu_nvml_close(cu_nvml **n);

#endif
