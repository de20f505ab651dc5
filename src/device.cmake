# The CUDA device codecs and qccl-device-check (docs/gpu.md), built when
# cmake/cuda.cmake found CUDA.
# The CUDA runtime is linked statically (as nvcc does by default): the
# device check and the Python extension then need only the driver
# (libcuda, loaded when a device is first used), not a libcudart of the
# toolkit's version on the machine that runs them. Position-independent,
# as the Python extension is a shared module.
add_library(qccl_device STATIC qccl/codecs/device/device_kernels.cu qccl/codecs/device/cuda_vector.cu)
target_link_libraries(qccl_device PUBLIC qccl_core CUDA::cudart_static)
set_target_properties(qccl_device PROPERTIES POSITION_INDEPENDENT_CODE ON)
qccl_cuda_options(qccl_device)

if(QCCL_PYTHON_PACKAGE_ONLY)
  return()  # pip's build: the library only
endif()
add_executable(qccl-device-check qccl/tools/device_check.cu qccl/tools/device_cases.cu
               qccl/tools/device_case_reference.cc qccl/tools/device_ranks_check.cc)
target_link_libraries(qccl-device-check PRIVATE qccl_device)
qccl_cuda_options(qccl-device-check)
set_target_properties(qccl-device-check PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
