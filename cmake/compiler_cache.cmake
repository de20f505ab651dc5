# A compiler cache (ccache) for every C, C++ and CUDA compilation, where one
# is installed. Nearly all of a full build's time is compilation, and much
# of it recompiles sources that have not changed: a fresh clone's build
# (CI's), a second build directory. ccache keys each object on the compiler,
# its flags, the source and every file it includes, so a cached object is
# the one the compiler would make. Two settings, passed in the launcher's
# environment:
# - CCACHE_BASEDIR is the source tree: ccache rewrites the absolute paths
#   under it (sources, -I of the tree, a build directory inside it) relative
#   to the compiler's directory, so clones in different directories share
#   entries. The compiler then sees those relative paths (in __FILE__ and
#   the dependency files, which CMake reads relative to the compiler's
#   directory: a changed header still rebuilds what includes it).
# - CCACHE_DEPEND: a miss is keyed on the dependency file the compiler
#   writes anyway (-MD) instead of a second preprocessor pass. A miss then
#   costs what compiling does, within this machine's noise: the core's 106
#   sources (target qccl_core_objects, -j2 on a 2-vCPU Xeon @ 2.50GHz, an
#   empty cache) took 152.6 and 178.3 s without ccache, 159.4 and 158.8 s
#   in depend mode, 166.6 and 181.2 s in ccache's default mode.
#
# Measured on that machine, in default mode: a fresh clone's scripts/build
# took 29 min 28 s filling the cache (the core, 106 of its 414 compilations,
# was in it already), and the next clone's 3 min 19 s (409 found; the 5
# others name the clone's own path). In depend mode, after those, a clean
# clone's CI run (.ci/run) spent 3 min 15 s before its tests began, and
# 67 s once the engine tests' unity sources were cached too
# (unity_sources.cmake; 408 of 415 found).
#
# QCCL_COMPILER_CACHE: AUTO (where ccache is found; the default), ON
# (required) or OFF. A launcher the caller sets (CMAKE_<LANG>_COMPILER_LAUNCHER)
# is kept. The cache is ccache's own (~/.cache/ccache, 5 GB by default;
# `ccache -s` shows its hits).
set(QCCL_COMPILER_CACHE AUTO CACHE STRING "Compile through ccache: AUTO (where found), ON or OFF")
set_property(CACHE QCCL_COMPILER_CACHE PROPERTY STRINGS AUTO ON OFF)

# ccache cannot compile where it cannot write its cache (a read-only home,
# an unwritable CCACHE_DIR): it fails instead of falling back to the
# compiler. So one small compilation through it, as the build would run it,
# decides: AUTO then builds without it and says why; ON stops.
function(qccl_compiler_cache_works launcher result)
  set(probe ${CMAKE_BINARY_DIR}/CMakeFiles/qccl_compiler_cache_probe)
  file(WRITE ${probe}.cc "int qccl_compiler_cache_probe() { return 0; }\n")
  execute_process(COMMAND ${launcher} ${CMAKE_CXX_COMPILER} -MD -MF ${probe}.d -c ${probe}.cc
                          -o ${probe}.o
                  RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(status EQUAL 0)
    set(${result} "" PARENT_SCOPE)
  else()
    string(STRIP "${output}" output)
    set(${result} "${output}" PARENT_SCOPE)
  endif()
endfunction()

if(NOT QCCL_COMPILER_CACHE STREQUAL "OFF")
  find_program(QCCL_CCACHE_PROGRAM ccache)
  set(qccl_cache_failure "ccache was not found")
  if(QCCL_CCACHE_PROGRAM)
    set(qccl_launcher ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}
                      CCACHE_DEPEND=true ${QCCL_CCACHE_PROGRAM})
    qccl_compiler_cache_works("${qccl_launcher}" qccl_cache_failure)
  endif()
  if(qccl_cache_failure STREQUAL "")
    get_property(qccl_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
    foreach(language IN ITEMS C CXX CUDA)
      if(language IN_LIST qccl_languages AND NOT CMAKE_${language}_COMPILER_LAUNCHER)
        set(CMAKE_${language}_COMPILER_LAUNCHER ${qccl_launcher})
      endif()
    endforeach()
    message(STATUS "qccl: compiling through ${QCCL_CCACHE_PROGRAM} (QCCL_COMPILER_CACHE=OFF to stop)")
  elseif(QCCL_COMPILER_CACHE STREQUAL "ON")
    message(FATAL_ERROR "QCCL_COMPILER_CACHE=ON but ccache cannot compile here "
                        "(${qccl_cache_failure}): install it (Debian: apt-get install ccache), "
                        "give it a writable cache (CCACHE_DIR), or configure with "
                        "-DQCCL_COMPILER_CACHE=AUTO")
  elseif(QCCL_CCACHE_PROGRAM)
    message(WARNING "qccl: building without ccache, which cannot compile here "
                    "(${qccl_cache_failure}); give it a writable cache (CCACHE_DIR) to use it")
  endif()
endif()
