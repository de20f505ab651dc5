# The CUDA device codecs and qccl-device-check (docs/gpu.md), built when
# cmake/cuda.cmake found CUDA.
add_library(qccl_device STATIC qccl/codecs/device/device_kernels.cu qccl/codecs/device/cuda_vector.cu)
target_link_libraries(qccl_device PUBLIC qccl_core CUDA::cudart)
qccl_cuda_options(qccl_device)

add_executable(qccl-device-check qccl/tools/device_check.cu qccl/tools/device_cases.cu
               qccl/tools/device_case_reference.cc qccl/tools/device_ranks_check.cc)
target_link_libraries(qccl-device-check PRIVATE qccl_device)
qccl_cuda_options(qccl-device-check)
set_target_properties(qccl-device-check PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
