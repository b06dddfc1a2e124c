# Third-party dependencies, all Debian packages. Shared by the build and by find_package(lanes).
#
# OpenBLAS is the pthreads build (libopenblas-pthread-dev), run single-threaded: lanes splits large
# GEMMs over its own pool (src/kernels/gemm.h), so one pool serves every kernel. Not the OpenMP
# build: it resets its thread count from each calling thread's OpenMP setting and would start a
# libgomp team inside a pool thread. Not the serial build: Debian builds it without locking, and
# concurrent calls from several threads returned wrong products here. The system default
# libopenblas may be another build, so FindBLAS looks in the pthreads directory first.
include(CMakeFindDependencyMacro)
set(_lanes_openblas_dir /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-pthread)
set(BLA_VENDOR OpenBLAS)
list(PREPEND CMAKE_LIBRARY_PATH ${_lanes_openblas_dir})
find_dependency(BLAS)

# libxsmm (libxsmm-dev): JIT kernels for GEMMs with small N and K, 2x OpenBLAS there
# (src/kernels/matmul_xsmm.h). Debian ships only the static library; it falls back on BLAS's
# sgemm_/dgemm_ (OpenBLAS's) and needs libdl and pthreads.
find_dependency(Threads)
find_path(LANES_XSMM_INCLUDE_DIR libxsmm.h)
find_library(LANES_XSMM_LIBRARY NAMES libxsmm.a xsmm)
if(NOT LANES_XSMM_INCLUDE_DIR OR NOT LANES_XSMM_LIBRARY)
  message(FATAL_ERROR "lanes needs libxsmm, which was not found (apt-get install libxsmm-dev)")
endif()
if(NOT TARGET lanes::xsmm)
  add_library(lanes::xsmm UNKNOWN IMPORTED)
  set_target_properties(lanes::xsmm PROPERTIES
    IMPORTED_LOCATION "${LANES_XSMM_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${LANES_XSMM_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "BLAS::BLAS;Threads::Threads;${CMAKE_DL_LIBS};m")
endif()

# oneDNN (libdnnl-dev): the float32 GEMMs of large products (src/kernels/gemm.cpp), 10-20%
# faster than OpenBLAS single-threaded on the rows' shapes here (bench/gemm_libraries). Debian
# builds it on OpenMP, whose team size is a per-thread setting: each pool thread that calls it sets
# its own to 1, so no libgomp team starts (the reason OpenBLAS's OpenMP build is not used above).
find_dependency(OpenMP COMPONENTS CXX)
find_path(LANES_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.h)
find_library(LANES_DNNL_LIBRARY dnnl)
if(NOT LANES_DNNL_INCLUDE_DIR OR NOT LANES_DNNL_LIBRARY)
  message(FATAL_ERROR "lanes needs oneDNN, which was not found (apt-get install libdnnl-dev)")
endif()
if(NOT TARGET lanes::dnnl)
  add_library(lanes::dnnl UNKNOWN IMPORTED)
  set_target_properties(lanes::dnnl PROPERTIES
    IMPORTED_LOCATION "${LANES_DNNL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${LANES_DNNL_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${OpenMP_CXX_LIBRARIES}")
endif()

# MPI, when lanes was built with LANES_WITH_MPI (set by the build, and by lanesConfig.cmake).
if(LANES_WITH_MPI)
  find_dependency(MPI COMPONENTS CXX)
endif()
