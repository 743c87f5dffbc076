/* SPDX-License-Identifier: Apache-2.0
 * Control interface of libet_fake_cudart.so, a TEST DOUBLE of the CUDA runtime (no GPU, no CUDA
 * code): it exports the runtime symbols edgetensor uses, backs "device" memory with host memory,
 * records every call with its arguments and can fail any chosen call. Tests load it through
 * EDGETENSOR_CUDART and reach these functions with dlopen(path, RTLD_NOLOAD) + dlsym.
 *
 * Environment read at each call: ET_FAKE_CUDART_RUNTIME_VERSION (default: CUDART_VERSION of the
 * headers it was built with), ET_FAKE_CUDART_DRIVER_VERSION (default 13000; 0 = "no driver":
 * device calls answer cudaErrorInsufficientDriver), ET_FAKE_CUDART_DEVICES (default 1),
 * ET_FAKE_CUDART_DMABUF=1 (the driver accepts CU_EXTERNAL_MEMORY_HANDLE_TYPE_DMABUF_FD).
 * cudaGetDriverEntryPointByVersion is as strict as the real one: a version above the driver version
 * is cudaErrorInvalidValue, one below a symbol's first version finds nothing, and cuDeviceTotalMem /
 * cuMemFree below 3.2 hand out their CUDA 2.0 ABIs (32-bit sizes and pointers). */
#ifndef ET_FAKE_CUDART_CONTROL_H
#define ET_FAKE_CUDART_CONTROL_H

#ifdef __cplusplus
extern "C" {
#endif

/* One recorded call. args[] hold pointers, sizes, flags, fds and kinds as integers, in the order of
 * the C signature (out-parameters are recorded by the value written). desc[] holds the bytes of a
 * descriptor argument (external memory), desc_size of them, as read at the size the runtime major
 * being emulated defines. fd_open is 1 when an fd argument was open at the time of the call. */
struct EtFakeCall {
  char name[64];
  unsigned long long args[6];
  unsigned char desc[128];
  unsigned desc_size;
  int fd_open;
  int result;
  int pid;
  /* The calling thread (gettid), and the GL state at the call when libEGL is loaded in the process:
   * gl_current = 1 when the thread has a current EGL context; gl_buffer_alive = glIsBuffer(name) for
   * calls that take a GL buffer (register: the argument; map/unmap/unregister: the registered buffer),
   * -1 for other calls or without a current context. */
  int tid;
  int gl_current;
  int gl_buffer_alive;
};

/* Forgets the record, the failure plan and the leak counters' baseline (live objects are kept). */
void et_fake_cudart_reset(void);
int et_fake_cudart_call_count(void);
/* The i-th call (0-based) since the last reset; NULL when out of range. */
const struct EtFakeCall* et_fake_cudart_call(int i);
/* How many calls to `name` since the last reset. */
int et_fake_cudart_count(const char* name);
/* Makes the nth (1-based, counted from now) call to `name` return `error` without effect; nth = 0:
 * every call. Several plans may be active. */
void et_fake_cudart_fail(const char* name, int nth, int error);
/* Live objects: "alloc", "host_register", "ext_mem", "ext_buffer", "stream", "event", "owned_fd",
 * "gl_resource" (registered GL buffers), "gl_mapped" (mapped GL resources). */
int et_fake_cudart_live(const char* what);
/* Teardown-order violations seen (cudaDestroyExternalMemory with a mapped buffer not freed; a
 * double free or double destroy; unregistering an unknown range; a GL-interop call without a current
 * GL context or on a deleted GL buffer; mapping a mapped resource, unmapping an unmapped one,
 * unregistering a mapped or unknown one). */
int et_fake_cudart_violations(void);
/* Models queued device work: while `hold` is 1, each cudaEventRecord leaves its event pending, so
 * cudaEventQuery answers cudaErrorNotReady until et_fake_cudart_complete_events() (or a
 * cudaEventSynchronize of that event, which models waiting for it). 0 (the default): work completes at
 * once. et_fake_cudart_pending_events() counts the pending ones. */
void et_fake_cudart_hold_events(int hold);
/* As hold_events(1), but each recorded event completes by itself `ms` milliseconds after its
 * cudaEventRecord (queued work that takes that long); hold_events(0 or 1) ends it. */
void et_fake_cudart_hold_events_for(int ms);
/* How often memory the device can reach was freed (cudaHostUnregister, cudaDestroyExternalMemory,
 * cuDestroyExternalMemory) while a recorded event was still pending, since the last reset: on a real
 * GPU the queued work could still write it. */
int et_fake_cudart_freed_while_pending(void);
void et_fake_cudart_complete_events(void);
int et_fake_cudart_pending_events(void);
/* The fds the fake owns (imported, not yet closed), up to `max`; returns how many. */
int et_fake_cudart_owned_fds(int* out, int max);

#ifdef __cplusplus
}
#endif
#endif
