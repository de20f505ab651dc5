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
# others define the clone's own path). In depend mode, after those, a clean
# clone's CI run (.ci/run) spent 3 min 15 s before its tests began.
#
# QCCL_COMPILER_CACHE: AUTO (where ccache is found; the default), ON
# (required) or OFF. A launcher the caller sets (CMAKE_<LANG>_COMPILER_LAUNCHER)
# is kept. The cache is ccache's own (~/.cache/ccache, 5 GB by default;
# `ccache -s` shows its hits).
set(QCCL_COMPILER_CACHE AUTO CACHE STRING "Compile through ccache: AUTO (where found), ON or OFF")
set_property(CACHE QCCL_COMPILER_CACHE PROPERTY STRINGS AUTO ON OFF)

if(NOT QCCL_COMPILER_CACHE STREQUAL "OFF")
  find_program(QCCL_CCACHE_PROGRAM ccache)
  if(QCCL_CCACHE_PROGRAM)
    get_property(qccl_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
    foreach(language IN ITEMS C CXX CUDA)
      if(language IN_LIST qccl_languages AND NOT CMAKE_${language}_COMPILER_LAUNCHER)
        set(CMAKE_${language}_COMPILER_LAUNCHER
            ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_DEPEND=true
            ${QCCL_CCACHE_PROGRAM})
      endif()
    endforeach()
    message(STATUS "qccl: compiling through ${QCCL_CCACHE_PROGRAM} (QCCL_COMPILER_CACHE=OFF to stop)")
  elseif(QCCL_COMPILER_CACHE STREQUAL "ON")
    message(FATAL_ERROR "QCCL_COMPILER_CACHE=ON but ccache was not found: install it (Debian: "
                        "apt-get install ccache) or configure with -DQCCL_COMPILER_CACHE=AUTO")
  endif()
endif()
