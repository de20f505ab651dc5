# The CUDA device codecs (docs/gpu.md). QCCL_CUDA=AUTO builds them where a
# CUDA compiler is found (nvcc on PATH, CUDACXX, or /usr/local/cuda), ON
# requires one, OFF leaves them out; a machine without CUDA builds and tests
# exactly as without this file. Sets QCCL_HAVE_CUDA.
set(QCCL_CUDA AUTO CACHE STRING "Build the CUDA device codecs: AUTO (where a CUDA compiler is found), ON or OFF")
set_property(CACHE QCCL_CUDA PROPERTY STRINGS AUTO ON OFF)
# sm_80 (A100) and sm_90 (H100, H200): machine code for both, and PTX for
# sm_90 that newer GPUs compile at load time.
set(QCCL_CUDA_ARCHITECTURES "80-real;90" CACHE STRING "GPU architectures the device code is compiled for")

set(QCCL_HAVE_CUDA OFF)
if(NOT QCCL_CUDA STREQUAL "OFF")
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_ARCHITECTURES ${QCCL_CUDA_ARCHITECTURES})
    enable_language(CUDA)
    # CMake 3.25 knows nvcc's flags up to C++17; nvcc 12 and newer take C++20.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    find_package(CUDAToolkit REQUIRED)
    set(QCCL_HAVE_CUDA ON)
    message(STATUS "qccl: CUDA device codecs for ${QCCL_CUDA_ARCHITECTURES} with ${CMAKE_CUDA_COMPILER}")
  elseif(QCCL_CUDA STREQUAL "ON")
    message(FATAL_ERROR "QCCL_CUDA=ON but no CUDA compiler was found: install the CUDA toolkit "
                        "(nvcc), put it on PATH or set CUDACXX, or configure with -DQCCL_CUDA=AUTO")
  endif()
endif()

# Compile options of qccl's CUDA sources: C++20, device lambdas and constexpr calls,
# and IEEE arithmetic without fused multiply-adds so that device results
# equal the CPU's bit for bit (codecs/kernels/element_ops.h).
function(qccl_cuda_options target)
  set_target_properties(${target} PROPERTIES CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr --extended-lambda --fmad=false
      -prec-div=true -ftz=false -Xcompiler=-Wall,-Wextra>)
  if(QCCL_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings>)
  endif()
endfunction()
