// Which symbols the shared libraries export. qccl compiles with hidden
// visibility; the declarations between QCCL_API_BEGIN and QCCL_API_END —
// those of the installed headers — are the only ones libqccl_core.so,
// libqccl_engines.so and (with CUDA) libqccl_device.so export, so other
// projects link against the public API and nothing else. Each public header brackets its namespace with them.
#pragma once

#if defined(__GNUC__)
#define QCCL_API_BEGIN _Pragma("GCC visibility push(default)")
#define QCCL_API_END _Pragma("GCC visibility pop")
#else
#define QCCL_API_BEGIN
#define QCCL_API_END
#endif
