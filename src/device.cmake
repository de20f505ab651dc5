# The CUDA device codecs and qccl-device-check (docs/gpu.md), built when
# cmake/cuda.cmake found CUDA.
# The CUDA runtime is linked statically (as nvcc does by default): the
# device check, the Python extension and libqccl_device.so then need only
# the driver (libcuda, loaded when a device is first used), not a libcudart
# of the toolkit's version on the machine that runs them. The objects are
# compiled once, position-independent (the Python extension is a shared
# module) with hidden symbols (only what the installed device headers
# declare is exported), and make two libraries, as the core's do:
# - qccl_device, a static archive for qccl's own targets;
# - libqccl_device.so (qccl::device), installed for other projects in the
#   full build.
add_library(qccl_device_objects OBJECT qccl/codecs/device/device_kernels.cu
            qccl/codecs/device/cuda_vector.cu)
target_link_libraries(qccl_device_objects PUBLIC qccl_core_objects CUDA::cudart_static)
set_target_properties(qccl_device_objects PROPERTIES POSITION_INDEPENDENT_CODE ON
                      CUDA_VISIBILITY_PRESET hidden)
qccl_cuda_options(qccl_device_objects)

add_library(qccl_device STATIC $<TARGET_OBJECTS:qccl_device_objects>)
target_link_libraries(qccl_device PUBLIC qccl_core CUDA::cudart_static)
set_target_properties(qccl_device PROPERTIES POSITION_INDEPENDENT_CODE ON)

if(QCCL_PYTHON_PACKAGE_ONLY)
  return()  # pip's build: the library only
endif()
add_executable(qccl-device-check qccl/tools/device_check.cu qccl/tools/device_cases.cu
               qccl/tools/device_case_reference.cc qccl/tools/device_ranks_check.cc)
target_link_libraries(qccl-device-check PRIVATE qccl_device)
qccl_cuda_options(qccl-device-check)
set_target_properties(qccl-device-check PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})

if(QCCL_DEVICE_CHECK_ONLY)
  return()  # the GPU machine's build: no installed libraries
endif()

# libqccl_device.so: qccl::device, CudaVector and what its header needs.
# Its users compile against the CUDA runtime's headers (CUDA::toolkit: a
# CudaVector takes a cudaStream_t) and link a CUDA runtime of their own for
# the memory they hand it; the one inside the library stays private.
set(QCCL_DEVICE_PUBLIC_HEADERS
  qccl/codecs/device/cuda_vector.h
  qccl/codecs/device/cuda_check.h
  qccl/codecs/device/cuda_stream.h
  qccl/codecs/device/device_buffer.h
  qccl/codecs/device/device_status.h
)
add_library(qccl_device_shared SHARED $<TARGET_OBJECTS:qccl_device_objects>)
target_sources(qccl_device_shared PUBLIC FILE_SET HEADERS BASE_DIRS ${CMAKE_CURRENT_SOURCE_DIR}
               FILES ${QCCL_DEVICE_PUBLIC_HEADERS})
target_link_libraries(qccl_device_shared PUBLIC qccl_core_shared CUDA::toolkit
                      PRIVATE CUDA::cudart_static)
set_target_properties(qccl_device_shared PROPERTIES OUTPUT_NAME qccl_device EXPORT_NAME device
                      INSTALL_RPATH "$ORIGIN")
qccl_installed_library(qccl_device_shared)
# The static CUDA runtime's symbols are hidden as NVIDIA builds them, and
# the library's calls bind within it (-Bsymbolic-functions: the inline
# waits of cuda_check.h, exported as the headers declare them, are not
# replaced by a program's own copies, which would call the program's CUDA
# runtime); tests/install checks both.
target_link_options(qccl_device_shared PRIVATE LINKER:-Bsymbolic-functions)
add_library(qccl::device ALIAS qccl_device_shared)
qccl_check_public_headers(device ${QCCL_DEVICE_PUBLIC_HEADERS})
